// Gather: y = x taken along one axis at fixed indices (ONNX's Gather by constant indices, as
// torch exports table[index]: Swin's relative position bias, an embedding). y's shape is x's
// with that axis replaced by the indices' dims. Backward adds dy back into a zeroed dx at the
// indices, in their order; it reads nothing else. The output can be rebuilt.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class GatherOp final : public Op {
 public:
  GatherOp(int64_t axis, std::vector<int64_t> index, std::vector<int64_t> index_dims)
      : axis_(axis), index_(std::move(index)), index_dims_(std::move(index_dims)) {}
  std::string name() const override { return "gather"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  int64_t axis_;
  std::vector<int64_t> index_, index_dims_;  // index_ holds index_dims_'s count, row-major
  int64_t outer_ = 1;                        // the extents before the axis, multiplied
  TensorMeta y_;
};

// x's slices along `axis` (0 <= axis < rank) at `index` (each in [-extent, extent), negative
// from the end), arranged as `index_dims` (empty: one index, the axis dropped). Example: a
// table (169, 3) gathered at 2,401 indices of dims (2401) is (2401, 3).
Value gather(Value x, int64_t axis, std::vector<int64_t> index, std::vector<int64_t> index_dims,
             std::source_location where = std::source_location::current());

}  // namespace frugal
