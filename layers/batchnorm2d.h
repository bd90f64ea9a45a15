// BatchNorm2d: per-channel normalization with learned scale and shift. Training normalizes
// with batch statistics, saves only mean and 1/std (C each) and updates the running
// statistics; inference uses the running statistics and may run in place. Training backward
// reads the input x, or with `from_output` the output y (x^ = (y - beta) / gamma, as
// InPlace-ABN does): where a later op's backward keeps y anyway (a SiLU's, a convolution's),
// x then dies after forward.
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
  // Training backward reads y, not x: x^ = (y - beta) times 1 / gamma in double instead of
  // (x - mean) / std, so gradients differ from the default's by rounding (f32: about 1e-7 of
  // |y| / |gamma| in x^), and a gamma of 0 (or not finite) is an error in forward, naming the
  // batch norm. y may then take x's bytes. Not with synchronized statistics
  // (ExecutorOptions::sync_bn_comm), nor on a device without the kernel (CUDA). Set it where y
  // is kept anyway and x would die: read_batch_norm_outputs below.
  bool from_output = false;
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
  bool from_output() const { return options_.from_output; }
  void set_from_output(bool on) { options_.from_output = on; }

 private:
  void check_from_output(const OpContext& ctx);

  BatchNormOptions options_;
  TensorMeta x_;
  BatchNormSync sync_;
  Tensor gamma_host_;  // check_from_output's staging where gamma is on a device
};

// y = gamma (x - mean) / sqrt(var + eps) + beta per channel, x (N,C,H,W), (N,C), (N,C,L)
// (BatchNorm1d) or (N,C,D,H,W) (BatchNorm3d): the same kernels over (N,C,S). Creates
// "<name>.weight" (ones), "<name>.bias" (zeros), "<name>.running_mean" (zeros) and
// "<name>.running_var" (ones) as PyTorch's BatchNorm2d.
Value batch_norm(Value x, const BatchNormOptions& o = {},
                 std::source_location where = std::source_location::current());

// Training: every batch norm of `tape` whose output some consumer's backward reads (a SiLU, a
// convolution or a product that gets a weight gradient, as each op's training roles on
// `backend` say) and whose input no other backward reads (an op's output, not a graph input)
// reads that output in backward instead of its input (from_output), so its input can die
// after forward; the others keep reading their input. Returns how many it set. Changes the
// gradients' rounding (BatchNormOptions::from_output): call it on the tape before any executor
// is made (an executor keeps the roles it read), the same way for every run to be compared
// bitwise.
int read_batch_norm_outputs(Tape& tape, const Backend& backend);

}  // namespace frugal
