// Transpose forward and backward, with its roles.
#include "layers/transpose.h"

#include "core/copy_box.h"

namespace frugal {

std::vector<TensorMeta> TransposeOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "transpose: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "transpose: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  x_ = in[0];
  y_ = {permuted_shape(x_.shape, perm_), x_.dtype};  // checks perm against x
  inverse_.assign(perm_.size(), 0);
  for (size_t k = 0; k < perm_.size(); ++k) inverse_[static_cast<size_t>(perm_[k])] = int64_t(k);
  return {y_};
}

Roles TransposeOp::roles(Mode mode, const Backend&) const {
  Roles r;
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), y_, 0);
  return r;
}

void TransposeOp::forward(const OpContext& ctx) {
  ctx.backend().strided_copy(permute_box(x_.shape, perm_), ctx.input(0), ctx.output(0));
}

// dx = dy with the inverse permutation.
void TransposeOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().strided_copy(permute_box(y_.shape, inverse_), ctx.grad_output(0),
                             ctx.grad_input(0));
}

Value transpose(Value x, std::vector<int64_t> perm, std::source_location where) {
  return x.tape().record(std::make_unique<TransposeOp>(std::move(perm)), {x}, where)[0];
}

}  // namespace frugal
