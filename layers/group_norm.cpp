// GroupNorm forward and backward, with its roles.
#include "layers/group_norm.h"

namespace frugal {

std::vector<TensorMeta> GroupNormOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 3, "group_norm: expects 3 inputs (x, weight, bias), got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "group_norm: input must be f32 or f64, got ", dtype_name(in[0].dtype), " (x ", x,
               ")");
  FRUGAL_CHECK(x.rank() >= 2, "group_norm: x ", x, " is not (N, C, ...)");
  FRUGAL_CHECK(groups_ >= 1 && x[1] % groups_ == 0, "group_norm: ", groups_,
               " groups do not divide the ", x[1], " channels of x ", x);
  for (int i = 1; i < 3; ++i)
    FRUGAL_CHECK(in[i].shape == Shape{x[1]} && in[i].dtype == in[0].dtype,
                 "group_norm: ", i == 1 ? "weight " : "bias ", in[i].shape, " ",
                 dtype_name(in[i].dtype), ", expected [", x[1], "] ", dtype_name(in[0].dtype),
                 " for x ", x);
  FRUGAL_CHECK(eps_ > 0, "group_norm: eps must be positive, got ", eps_);
  x_ = in[0];
  return {x_};
}

Roles GroupNormOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  if (mode == Mode::training) {
    const TensorMeta row{Shape{x_.shape[0] * groups_}, x_.dtype};
    r.saved = {row, row};  // mean, inv_std
    r.backward_reads_inputs = {0, 1};
    r.grad_aliases = {{.output = 0, .input = 0}};  // dx is written after every sum of dy
    r.backward_scratch = backend.groupnorm_backward_scratch(x_);
    // Forward again gives the same bits (no state): two passes over x and one write.
    rebuild_by_forward(r, mode, {0, 1, 2}, 2.0 * static_cast<double>(x_.bytes()), x_, 8);
  } else {
    r.aliases = {{.output = 0, .input = 0}};  // groups normalized after their sums
  }
  return r;
}

void GroupNormOp::forward(const OpContext& ctx) {
  Tensor none;
  ctx.backend().groupnorm_forward(ctx.input(0), ctx.input(1), ctx.input(2), groups_, eps_,
                                  ctx.output(0), ctx.training() ? ctx.saved(0) : none,
                                  ctx.training() ? ctx.saved(1) : none);
}

void GroupNormOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "group_norm: backward runs only in training mode");
  Tensor none;
  Tensor& dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor& dgamma = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  Tensor& dbeta = ctx.needs_grad_input(2) ? ctx.grad_input(2) : none;
  ctx.backend().groupnorm_backward(ctx.input(0), ctx.grad_output(0), ctx.input(1), ctx.saved(0),
                                   ctx.saved(1), groups_, dx, dgamma, dbeta,
                                   ctx.has_scratch() ? ctx.scratch() : none);
}

Value group_norm(Value x, int64_t groups, const GroupNormOptions& o, std::source_location where) {
  Tape& t = x.tape();
  const Shape s = x.shape();  // a copy: recording parameters may move the tape's values
  FRUGAL_CHECK(s.rank() >= 2 && groups >= 1 && s[1] % groups == 0, source_line(where),
               ": group_norm: ", groups, " groups of the channels of x ", s,
               " (x is (N, C, ...) and the groups divide C)");
  const std::string name = o.name.empty() ? t.unique_name("group_norm") : o.name;
  Value gamma = t.param(name + ".weight", Shape{s[1]}, Init::ones(), o.affine);
  Value beta = t.param(name + ".bias", Shape{s[1]}, Init::zeros(), o.affine);
  return t.record(std::make_unique<GroupNormOp>(groups, o.eps), {x, gamma, beta}, where)[0];
}

}  // namespace frugal
