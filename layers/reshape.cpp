// Reshape forward and backward, with its roles: byte copies, no-ops in place.
#include "layers/reshape.h"

#include <sstream>

namespace frugal {

std::vector<TensorMeta> ReshapeOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "reshape: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64 || in[0].dtype == DType::i32,
               "reshape: input must be f32, f64 or i32 (labels), got ", dtype_name(in[0].dtype));
  bool ok = to_.rank() >= 1;
  for (int64_t d : to_.dims()) ok = ok && d >= 0;
  FRUGAL_CHECK(ok && to_.numel() == in[0].shape.numel(), "reshape: ", in[0].shape, " (",
               in[0].shape.numel(), " elements) cannot be viewed as ", to_);
  return {{to_, in[0].dtype}};
}

Roles ReshapeOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
  return r;
}

void ReshapeOp::forward(const OpContext& ctx) {
  ctx.backend().copy(ctx.input(0), ctx.output(0));
}

void ReshapeOp::backward(const OpContext& ctx) {
  if (ctx.needs_grad_input(0)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(0));
}

Value reshape(Value x, Shape to, std::source_location where) {
  return x.tape().record(std::make_unique<ReshapeOp>(std::move(to)), {x}, where)[0];
}

Shape resolve_reshape(const Shape& x, const std::vector<int64_t>& target, bool allow_zero) {
  auto fail = [&]() {
    std::ostringstream os;
    for (size_t i = 0; i < target.size(); ++i) os << (i ? "," : "") << target[i];
    throw Error("reshape: " + x.str() + " (" + std::to_string(x.numel()) +
                " elements) cannot be reshaped to (" + os.str() + ")");
  };
  std::vector<int64_t> d(target.begin(), target.end());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < d.size(); ++i) {
    if (d[i] == 0 && !allow_zero) {
      if (static_cast<int>(i) >= x.rank()) fail();
      d[i] = x[static_cast<int>(i)];
    }
    if (d[i] == -1) {
      if (infer_at >= 0) fail();
      infer_at = static_cast<int>(i);
      continue;
    }
    if (d[i] < 0 || __builtin_mul_overflow(known, d[i], &known)) fail();
  }
  if (infer_at >= 0) {
    if (known == 0 || x.numel() % known != 0) fail();
    d[static_cast<size_t>(infer_at)] = x.numel() / known;
  } else if (known != x.numel()) {
    fail();
  }
  if (d.empty()) fail();
  return Shape(d);
}

}  // namespace frugal
