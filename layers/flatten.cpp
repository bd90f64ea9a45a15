// Flatten forward and backward, with its roles: both are byte copies, no-ops in place.
#include "layers/flatten.h"

namespace frugal {

std::vector<TensorMeta> FlattenOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "flatten: expects 1 input, got ", in.size());
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(s.rank() >= 2, "flatten: x ", s, " must be (N, ...) with rank >= 2");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "flatten: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  int64_t rest = 1;
  for (int i = 1; i < s.rank(); ++i) rest *= s[i];
  return {{Shape{s[0], rest}, in[0].dtype}};
}

Roles FlattenOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
  return r;
}

// y = x, viewed as (N, rest)
void FlattenOp::forward(const OpContext& ctx) {
  ctx.backend().copy(ctx.input(0), ctx.output(0));
}

// dx = dy, viewed as x's shape
void FlattenOp::backward(const OpContext& ctx) {
  if (ctx.needs_grad_input(0)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(0));
}

Value flatten(Value x, std::source_location where) {
  return x.tape().record(std::make_unique<FlattenOp>(), {x}, where)[0];
}

}  // namespace frugal
