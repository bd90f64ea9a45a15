// Add forward and backward, with its roles.
#include "layers/add.h"

namespace frugal {

std::vector<TensorMeta> AddOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, "add: expects 2 inputs, got ", in.size());
  FRUGAL_CHECK(in[0] == in[1], "add: shapes must match, got a ", in[0].shape, " ",
               dtype_name(in[0].dtype), " and b ", in[1].shape, " ", dtype_name(in[1].dtype));
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "add: inputs must be f32 or f64, got ", dtype_name(in[0].dtype));
  y_ = in[0];
  return {in[0]};
}

Roles AddOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}, {.output = 0, .input = 1}};
  if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
  rebuild_by_forward(r, mode, {0, 1}, 2.0 * static_cast<double>(y_.bytes()), y_, 1);
  return r;
}

// y = a + b
void AddOp::forward(const OpContext& ctx) {
  ctx.backend().add(ctx.input(0), ctx.input(1), ctx.output(0));
}

// da = dy, db = dy (a copy is a no-op where da took dy's bytes)
void AddOp::backward(const OpContext& ctx) {
  for (int i = 0; i < 2; ++i)
    if (ctx.needs_grad_input(i)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(i));
}

Value add(Value a, Value b, std::source_location where) {
  return a.tape().record(std::make_unique<AddOp>(), {a, b}, where)[0];
}

}  // namespace frugal
