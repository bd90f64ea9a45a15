// Embedding: rows of a table at indices that the step is given (nn.Embedding of class labels or
// token ids; ONNX's Gather of a weight at an input's values). The indices are a tensor of the
// tape, i32 or whole numbers carried in a float type (as frugal's ONNX import carries int64
// inputs), each in [-rows, rows) (negative from the end, as ONNX's Gather). y is the indices'
// shape followed by the table's dims after its first. Forward reads the indices on the host (a
// copy from the device where they are there); backward reads them again and adds dy's rows into
// a zeroed table gradient in the indices' order (the same bits on any thread count). The
// indices get no gradient; the output can be rebuilt.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class EmbeddingOp final : public Op {
 public:
  std::string name() const override { return "embedding"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input == 0; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  // The indices as row numbers in [0, rows), checked (an error names the first bad one).
  const std::vector<int64_t>& rows_of(const OpContext& ctx);
  TensorMeta table_, y_;
  Tensor staging_;             // the indices on the host, where they live on a device
  std::vector<int64_t> rows_;  // this pass's row numbers
};

// table (rows, ...) f32 or f64; indices any shape, i32 or a float type. Example: a table (10, 8)
// at labels (N) gives (N, 8); at token ids (N, L), (N, L, 8).
Value embedding(Value table, Value indices,
                std::source_location where = std::source_location::current());

}  // namespace frugal
