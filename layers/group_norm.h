// GroupNorm: each sample's channels split into groups, each group normalized by its own mean
// and variance over its channels and positions, then scaled and shifted per channel (PyTorch's
// nn.GroupNorm; groups = C is InstanceNorm, groups = 1 LayerNorm over (C, H, W) with
// per-channel weights). One op where PyTorch's ONNX export writes five nodes: training saves
// only each group's mean and 1/std; backward reads x and gamma, never y, and dx may take dy's
// bytes; in inference y may take x's bytes.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct GroupNormOptions {
  double eps = 1e-5;
  // Learned per-channel weight and bias (nn.GroupNorm's affine); false: fixed ones and zeros.
  bool affine = true;
  // Parameter prefix; empty: a fresh "group_norm<k>". Initialized so that designated
  // initializers leaving it out draw no missing-initializer warning from GCC 12.
  std::string name = "";
};

// Inputs {x (N, C, ...), gamma (C), beta (C)}; C divisible by the groups.
class GroupNormOp final : public Op {
 public:
  GroupNormOp(int64_t groups, double eps) : groups_(groups), eps_(eps) {}
  std::string name() const override { return "group_norm"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  int64_t groups() const { return groups_; }

 private:
  int64_t groups_;
  double eps_;
  TensorMeta x_;
};

// y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], the statistics of each sample's
// `groups` groups of C / groups channels (biased variance, as PyTorch). Creates
// "<name>.weight" (ones) and "<name>.bias" (zeros), of shape (C): trainable with affine,
// fixed otherwise. Example: group_norm(conv2d(x, {.out = 64, .kernel = 3}), 32).
Value group_norm(Value x, int64_t groups, const GroupNormOptions& o = {},
                 std::source_location where = std::source_location::current());

}  // namespace frugal
