// Reductions over trailing axes (ONNX's ReduceSum, ReduceMean, ReduceMax, ReduceMin,
// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSumExp; torch.sum, amax, norm, logsumexp over
// dims): one op over the backend's row kernels (core/reduce.h holds the gradient formulas).
// Sums run in double in a fixed order. max and min save each row's column of the extreme
// (gradient to the first extreme, as torch.max(dim)); sum_square, l1, l2 and log-sum-exp read
// x in backward, l2 and log-sum-exp also y; sum and mean read nothing but dy.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/reduce.h"

namespace frugal {

class ReduceOp final : public Op {
 public:
  ReduceOp(Reduction r, int axes) : r_(r), axes_(axes) {}
  std::string name() const override { return reduction_name(r_); }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Reduction r_;
  int axes_;
  TensorMeta x_, y_;
};

// y = the reduction of x over its last `axes` axes (1 to rank - 1: never the batch axis); y
// has x's leading axes. Example: reduce(x, Reduction::sum, 2) for (N, C, H, W) sums each
// channel's map into (N, C).
Value reduce(Value x, Reduction r, int axes,
             std::source_location where = std::source_location::current());

}  // namespace frugal
