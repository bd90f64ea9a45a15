// BatchNorm2d: per-channel normalization with learned scale and shift. Training normalizes
// with batch statistics, saves only mean and 1/std (C each) and updates the running
// statistics; inference uses the running statistics and may run in place.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;  // running = (1 - momentum) running + momentum batch statistic
  // Parameter prefix; empty: a fresh "batch_norm<k>". Initialized so that designated
  // initializers leaving it out draw no missing-initializer warning from GCC 12.
  std::string name = "";
};

// A batch norm's statistics over every rank's batch (ExecutorOptions::sync_bn_comm): the
// sums exchanged ([sum x (C), count, then the sums of squares or the backward sums (2C)],
// f64, made on first use) and the count of values per channel over all ranks.
struct BatchNormSync {
  Tensor sums, host_count;
  double count = 0;
  // mean and inv_std from every rank's x (C channels), the running statistics updated with
  // `momentum`, then y = x normalized (y may be x): the same bits on every rank.
  void forward(const OpContext& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta,
               Tensor& running_mean, Tensor& running_var, double momentum, double eps, Tensor& y,
               Tensor& mean, Tensor& inv_std);
  // Where this rank writes its backward sums [sum dy (C), sum dy x^ (C)] before
  // reduce_backward(); forward ran first.
  Tensor backward_sums(int64_t C) const { return sums.elements(1, 2 * C); }
  // The ranks' backward sums, each weighted by its rank's share of the loss.
  void reduce_backward(const OpContext& ctx, int64_t C) const;
};

// Inputs {x, gamma, beta, running_mean, running_var}; the running statistics are state
// (updated in training forward), not differentiable.
class BatchNormOp final : public Op {
 public:
  explicit BatchNormOp(BatchNormOptions o) : options_(std::move(o)) {}
  std::string name() const override { return "batch_norm"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input >= 0 && input <= 2; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }
  void rebuild(const OpContext& ctx) override;

 private:
  BatchNormOptions options_;
  TensorMeta x_;
  BatchNormSync sync_;
};

// y = gamma (x - mean) / sqrt(var + eps) + beta per channel, x (N,C,H,W), (N,C), (N,C,L)
// (BatchNorm1d) or (N,C,D,H,W) (BatchNorm3d): the same kernels over (N,C,S). Creates
// "<name>.weight" (ones), "<name>.bias" (zeros), "<name>.running_mean" (zeros) and
// "<name>.running_var" (ones) as PyTorch's BatchNorm2d.
Value batch_norm(Value x, const BatchNormOptions& o = {},
                 std::source_location where = std::source_location::current());

}  // namespace frugal
