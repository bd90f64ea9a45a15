// Batch norm of a channel concatenation, without keeping the concatenation: y =
// batch_norm(concat(x0, x1, ...)) with the same bits, but backward reads the pieces, which
// their producers' readers keep anyway, instead of a stored copy of them all. A DenseNet layer
// (concat of every earlier feature map, then BatchNorm) keeps its features once instead of
// once per later layer, and no rebuild is involved. Batch norm is per channel, so each piece
// is normalized by its own channels' statistics.
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"
#include "layers/batchnorm2d.h"

namespace frugal {

// Inputs {x0, ..., x(k-1), gamma, beta, running_mean, running_var}: pieces (N,Ci,H,W) or
// (N,Ci) joined along dim 1, then BatchNormOp's parameters for the sum of their channels.
class ConcatBatchNormOp final : public Op {
 public:
  // scratch_pieces: which pieces need no gradient (their dy slice goes through scratch).
  ConcatBatchNormOp(int pieces, BatchNormOptions o, std::vector<bool> scratch_pieces);
  std::string name() const override { return "concat_batch_norm"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input >= 0 && input < k_ + 2; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }
  void rebuild(const OpContext& ctx) override;

 private:
  // y = [x0, x1, ...] along channels.
  void join(const OpContext& ctx) const;
  int k_;
  BatchNormOptions options_;
  std::vector<bool> scratch_pieces_;
  std::vector<TensorMeta> xs_;
  TensorMeta y_;
  BatchNormSync sync_;
  Tensor piece_sums_;  // synchronized backward: one piece's [sum dy, sum dy x^], f64
};

// batch_norm(concat(xs)) as one op (above), with the parameters batch_norm would create for
// the joined channels ("<name>.weight", ...). At least two pieces, of equal N (and H, W) and
// dtype; throws naming the mismatch.
Value concat_batch_norm(std::vector<Value> xs, const BatchNormOptions& o = {},
                        std::source_location where = std::source_location::current());
// The same with the parameters given: gamma, beta, running_mean, running_var (C each).
Value concat_batch_norm(std::vector<Value> xs, Value gamma, Value beta, Value running_mean,
                        Value running_var, const BatchNormOptions& o = {},
                        std::source_location where = std::source_location::current());

}  // namespace frugal
