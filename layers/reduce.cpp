// Reductions over trailing axes: forward, backward and roles.
#include "layers/reduce.h"

#include <vector>

namespace frugal {

std::vector<TensorMeta> ReduceOp::infer(std::span<const TensorMeta> in) {
  const char* op = reduction_name(r_);
  FRUGAL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, op,
               ": input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ", x, ")");
  FRUGAL_CHECK(axes_ >= 1 && axes_ < x.rank(), op, ": ", axes_, " trailing axes of x ", x,
               " (1 to rank - 1: the batch axis is never reduced)");
  FRUGAL_CHECK(x.numel() >= 1, op, ": x ", x, " is empty");
  x_ = in[0];
  y_ = TensorMeta{Shape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - axes_)), x_.dtype};
  return {y_};
}

Roles ReduceOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode != Mode::training) return r;
  if (reduction_keeps_index(r_)) r.saved = {TensorMeta{y_.shape, DType::i32}};
  if (reduction_reads_input(r_)) r.backward_reads_inputs = {0};
  if (reduction_reads_output(r_)) r.backward_reads_outputs = {0};
  // Forward again gives the same bits (and the same saved columns): one pass over x.
  const double per_row = static_cast<double>(x_.shape.numel() / y_.shape.numel());
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), y_, per_row);
  return r;
}

void ReduceOp::forward(const OpContext& ctx) {
  Tensor none;
  Tensor& index = ctx.training() && reduction_keeps_index(r_) ? ctx.saved(0) : none;
  ctx.backend().reduce_rows_forward(r_, ctx.input(0), ctx.output(0), index);
}

void ReduceOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), reduction_name(r_), ": backward runs only in training mode");
  if (!ctx.needs_grad_input(0)) return;
  const Tensor none;
  ctx.backend().reduce_rows_backward(r_, reduction_reads_input(r_) ? ctx.input(0) : none,
                                     reduction_reads_output(r_) ? ctx.output(0) : none,
                                     reduction_keeps_index(r_) ? ctx.saved(0) : none,
                                     ctx.grad_output(0), ctx.grad_input(0));
}

Value reduce(Value x, Reduction r, int axes, std::source_location where) {
  return x.tape().record(std::make_unique<ReduceOp>(r, axes), {x}, where)[0];
}

}  // namespace frugal
