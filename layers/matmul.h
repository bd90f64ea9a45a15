// Batched matrix product of two values (torch.matmul, ONNX's MatMul between activations, as in
// attention: softmax(q k^T) v): a (..., M, K) times b (..., K, N) gives (..., M, N), the leading
// axes equal (no broadcasting between them), ranks 2 to 6. Backward reads both operands:
// da = dc b^T, db = a^T dc, each a batched product. (A product by a weight is a linear layer:
// models/onnx_record.cpp records ONNX's MatMul by an initializer so.)
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/backend.h"

namespace frugal {

class MatMulOp final : public Op {
 public:
  std::string name() const override { return "matmul"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  MatmulGeometry g_;
  TensorMeta c_;
};

// Example: matmul(q, transpose(k, {0, 2, 1})), (N, T, D) x (N, D, T) -> (N, T, T).
Value matmul(Value a, Value b, std::source_location where = std::source_location::current());

}  // namespace frugal
