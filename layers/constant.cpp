// Constant forward (a copy onto the device) and its roles.
#include "layers/constant.h"

namespace frugal {

std::vector<TensorMeta> ConstantOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.empty(), "constant: expects no inputs, got ", in.size());
  FRUGAL_CHECK(value_.defined() && value_.device().is_host(),
               "constant: the value must be a tensor on the host");
  FRUGAL_CHECK(value_.dtype() == DType::f32 || value_.dtype() == DType::f64,
               "constant: the value must be f32 or f64, got ", dtype_name(value_.dtype()));
  return {TensorMeta{value_.shape(), value_.dtype()}};
}

Roles ConstantOp::roles(Mode mode, const Backend&) const {
  Roles r;
  rebuild_by_forward(r, mode, {}, 0, TensorMeta{value_.shape(), value_.dtype()}, 0);
  return r;
}

void ConstantOp::forward(const OpContext& ctx) {
  ctx.backend().copy_to_device(value_, ctx.output(0));
}

void ConstantOp::backward(const OpContext&) {}

Value constant(Tape& tape, Tensor value, std::source_location where) {
  return tape.record(std::make_unique<ConstantOp>(std::move(value)), {}, where)[0];
}

}  // namespace frugal
