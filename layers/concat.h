// Concat: joins (N,Ci,H,W) values along channels into (N,sum Ci,H,W) (GoogLeNet's
// inception branches); rank-2 (N,Ci) values join the same way; values of ranks 2 to 6 join
// along any other axis but the batch's too (through the strided copy). Backward reads nothing:
// each input's gradient is its slice of dy.
#pragma once

#include <source_location>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

class ConcatOp final : public Op {
 public:
  explicit ConcatOp(int64_t axis = 1) : axis_(axis) {}
  std::string name() const override { return "concat"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  bool channels() const;                       // the channel kernels apply
  std::vector<int64_t> shift(size_t i) const;  // where input i starts in y, negated
  int64_t axis_;
  std::vector<TensorMeta> xs_;
  TensorMeta y_;
};

// y = [x0, x1, ...] along dim 1. At least one input; all of rank 2 or all of rank 4, with
// equal N (and H, W) and dtype, else throws naming the mismatched shapes.
Value concat(std::vector<Value> xs, std::source_location where = std::source_location::current());
// y = [x0, x1, ...] along `axis` (1 to rank-1): all other extents equal.
Value concat(std::vector<Value> xs, int64_t axis,
             std::source_location where = std::source_location::current());

}  // namespace frugal
