// Fixed-point rounding and exact grid addition over the backend's kernels (the grid's
// arithmetic is core/kernel_checks.h), and the fixed_point op.
#include "layers/fixed_point.h"

namespace frugal {

int fixed_point_frac_bits(const FixedPoint& fp, DType t, const std::string& who) {
  FRUGAL_CHECK(t == DType::f32 || t == DType::f64, who,
               ": fixed-point values must be f32 or f64, got ", dtype_name(t));
  const int digits = t == DType::f32 ? 24 : 53;
  FRUGAL_CHECK(fp.range_bits >= 1 && fp.range_bits < digits, who, ": FixedPoint::range_bits ",
               fp.range_bits, " must be in [1, ", digits - 1, "] for ", dtype_name(t));
  return digits - fp.range_bits;
}

void fixed_point_round(Backend& be, const Tensor& x, const FixedPoint& fp, Tensor& y,
                       const std::string& who) {
  fixed_point_frac_bits(fp, x.dtype(), who);
  FRUGAL_CHECK(x.meta() == y.meta(), who, ": x ", x.shape(), " and y ", y.shape(), " must match");
  be.fixed_point_round(x, fp.range_bits, y, who);
}

void fixed_point_add(Backend& be, const Tensor& a, const Tensor& f, const FixedPoint& fp,
                     bool subtract, Tensor& y, const std::string& who) {
  fixed_point_frac_bits(fp, a.dtype(), who);
  FRUGAL_CHECK(a.meta() == f.meta() && a.meta() == y.meta(), who, ": a ", a.shape(), ", f ",
               f.shape(), " and y ", y.shape(), " must match");
  be.fixed_point_add(a, f, fp.range_bits, subtract, y, who);
}

std::vector<TensorMeta> FixedPointOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "fixed_point: expects 1 input, got ", in.size());
  fixed_point_frac_bits(fp_, in[0].dtype, "fixed_point");
  return {in[0]};
}

// In place always allowed; backward reads nothing and dx may take dy's bytes.
Roles FixedPointOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
  return r;
}

// y = q(x)
void FixedPointOp::forward(const OpContext& ctx) {
  fixed_point_round(ctx.backend(), ctx.input(0), fp_, ctx.output(0), name());
}

// dx = dy (straight through the rounding)
void FixedPointOp::backward(const OpContext& ctx) {
  if (ctx.needs_grad_input(0)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(0));
}

Value fixed_point(Value x, FixedPoint fp, std::source_location where) {
  return x.tape().record(std::make_unique<FixedPointOp>(fp), {x}, where)[0];
}

}  // namespace frugal
