// Broadcast Mul, Sub, Div, Add: shapes, roles, and the backend's kernels.
#include "layers/binary.h"

namespace frugal {

std::vector<TensorMeta> BinaryOp::infer(std::span<const TensorMeta> in) {
  const char* op = binary_name(kind_);
  FRUGAL_CHECK(in.size() == 2, op, ": expects 2 inputs, got ", in.size());
  FRUGAL_CHECK(
      (in[0].dtype == DType::f32 || in[0].dtype == DType::f64) && in[1].dtype == in[0].dtype, op,
      ": inputs must be both f32 or both f64, got ", dtype_name(in[0].dtype), " and ",
      dtype_name(in[1].dtype));
  Shape out;
  try {
    g_ = broadcast_of(in[0].shape, in[1].shape, &out);
  } catch (const Error& e) {
    throw Error(detail::concat(op, ": ", e.what()));
  }
  y_ = {out, in[0].dtype};
  a_full_ = in[0].shape.numel() == out.numel();
  b_full_ = in[1].shape.numel() == out.numel();
  return {{out, in[0].dtype}};
}

// y may take an operand's bytes where it has y's shape (the planner allows it only where
// nothing reads that operand later, so never for mul, div, maximum and minimum in training). The
// gradient written last (Backend::binary_backward) may take dy's.
Roles BinaryOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (a_full_) r.aliases.push_back({.output = 0, .input = 0});
  if (b_full_) r.aliases.push_back({.output = 0, .input = 1});
  if (mode != Mode::training) return r;
  rebuild_by_forward(r, mode, {0, 1}, 2.0 * static_cast<double>(y_.bytes()), y_, 1);
  if (binary_backward_reads_inputs(kind_)) {
    r.backward_reads_inputs = {0, 1};
    // Each operand is read only for the gradients binary_backward_reads_operand names (a for
    // b's; b for a's, and div's b for both): a product by a constant keeps the constant, not
    // the activation.
    for (int input : {0, 1})
      for (int grad : {0, 1})
        if (binary_backward_reads_operand(kind_, input, grad == 0, grad == 1))
          r.reads_only_for.push_back({.input = input, .grad = grad});
  }
  if (a_full_)
    r.grad_aliases = {{.output = 0, .input = 0}};
  else if (b_full_)
    r.grad_aliases = {{.output = 0, .input = 1}};
  return r;
}

void BinaryOp::forward(const OpContext& ctx) {
  ctx.backend().binary_forward(kind_, g_, ctx.input(0), ctx.input(1), ctx.output(0));
}

void BinaryOp::backward(const OpContext& ctx) {
  Tensor none;
  Tensor da = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor db = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  // Only the operands the wanted gradients read (the others may be gone: reads_only_for).
  auto operand = [&](int i) {
    return binary_backward_reads_operand(kind_, i, da.defined(), db.defined()) ? ctx.input(i)
                                                                               : none;
  };
  ctx.backend().binary_backward(kind_, g_, operand(0), operand(1), ctx.grad_output(0), da, db);
}

Value binary(BinaryKind kind, Value a, Value b, std::source_location where) {
  return a.tape().record(std::make_unique<BinaryOp>(kind), {a, b}, where)[0];
}
Value mul(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::mul, a, b, where);
}
Value sub(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::sub, a, b, where);
}
Value div(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::div, a, b, where);
}
Value maximum(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::maximum, a, b, where);
}
Value minimum(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::minimum, a, b, where);
}
Value power(Value a, Value b, std::source_location where) {
  return binary(BinaryKind::pow, a, b, where);
}

}  // namespace frugal
