// Generic invertible op: forward over a SubGraph planned into the op's scratch; backward
// rebuilds x with the inverse, recomputes forward with its tape and runs its backward. Also
// the round-trip check.
#include "recompute/invertible.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/rng.h"

namespace frugal {

namespace {

constexpr size_t kAlign = 256;  // the input copy's offset in the scratch

// inverse(forward(x)) against x (host memory), run as backward runs them: training mode, state
// frozen, one step seed, on the backend of the parameters' store.
InvertibleCheck round_trip(SubGraph& fw, SubGraph& inv, const Tensor& x, uint64_t seed) {
  Backend& be = fw.tape().params().backend();
  auto arena = [&](const SubGraph& g) {
    return Tensor::empty(Shape{static_cast<int64_t>(g.arena_bytes(Mode::training, be))}, DType::u8,
                         Role::input, be.allocator());
  };
  Executor& F = fw.executor(Mode::training, be, arena(fw));
  Executor& I = inv.executor(Mode::training, be, arena(inv));
  for (Executor* e : {&F, &I}) {
    e->set_step_seed(seed);
    e->set_update_state(false);
  }
  F.set_input(fw.input(), x);
  F.forward();
  be.copy(F.value(fw.output()), I.input(inv.input()));
  I.forward();
  const Tensor r = to_host(be, I.value(inv.output()));
  InvertibleCheck c;
  double max_x = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double a = element_as_double(x, i), b = element_as_double(r, i);
    const double d = std::isnan(b) ? std::numeric_limits<double>::infinity() : std::abs(b - a);
    max_x = std::max(max_x, std::abs(a));
    if (c.worst < 0 || d > c.max_abs) c = {d, 0, i, a, b};
  }
  c.relative = c.max_abs / std::max(max_x, std::numeric_limits<double>::min());
  return c;
}

}  // namespace

InvertibleOp::InvertibleOp(std::unique_ptr<SubGraph> forward, std::unique_ptr<SubGraph> inverse)
    : fw_(std::move(forward)), inv_(std::move(inverse)), params_(fw_->parameters()) {
  FRUGAL_CHECK(inv_->output().meta() == fw_->input().meta(),
               "invertible: the inverse must return the forward's input shape ",
               fw_->input().shape(), ", got ", inv_->output().shape());
  for (Parameter* p : inv_->parameters())
    FRUGAL_CHECK(std::find(params_.begin(), params_.end(), p) != params_.end(),
                 "invertible: the inverse uses parameter '", p->name,
                 "', which the forward does not; an inverse may only read the forward's "
                 "parameters (record the same layers in the same order to share them)");
}

std::vector<TensorMeta> InvertibleOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty() && in[0] == fw_->input().meta(), "invertible: x ",
               in.empty() ? Shape{} : in[0].shape, " does not match the forward's input ",
               fw_->input().shape());
  FRUGAL_CHECK(in.size() == 1 + params_.size(), "invertible: expects x and ", params_.size(),
               " parameters, got ", in.size(), " inputs");
  return {fw_->output().meta()};
}

// Scratch: forward's arena; in backward, the rebuilt x, then one region that the inverse's
// arena and then forward's (training) arena use in turn.
Roles InvertibleOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  if (fw_->output().meta() == fw_->input().meta())
    r.aliases = {{.output = 0, .input = 0}};  // x is copied into the forward's arena first
  r.forward_scratch = fw_->arena_bytes(mode, backend, /*forward_only=*/true);
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.rebuilds_inputs = {0};
    r.backward_scratch = round_up(fw_->input().meta().bytes(), kAlign) +
                         std::max(fw_->arena_bytes(Mode::training, backend),
                                  inv_->arena_bytes(Mode::training, backend));
  }
  return r;
}

void InvertibleOp::forward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  Executor& F = fw_->executor(ctx.mode(), be, ctx.scratch(), /*forward_only=*/true, &ctx);
  F.set_step_seed(ctx.seed());
  F.set_update_state(ctx.update_state());
  be.copy(ctx.input(0), F.input(fw_->input()));
  F.forward();
  be.copy(F.value(fw_->output()), ctx.output(0));
}

// x = inverse(y); forward(x) again; its backward from dy. The inverse and the recompute run
// with the step's randomness and state frozen, so a layer the inverse records as the forward
// did (same name) draws the same dropout mask and, on the same input, the same batch stats.
void InvertibleOp::backward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  const Tensor& s = ctx.scratch();
  const size_t at = round_up(fw_->input().meta().bytes(), kAlign);
  Tensor x = scratch_region(s, 0, fw_->input().meta());
  Executor& I =
      inv_->executor(Mode::training, be,
                     scratch_region(s, at, inv_->arena_bytes(Mode::training, be)), false, &ctx);
  Executor& F = fw_->executor(
      Mode::training, be, scratch_region(s, at, fw_->arena_bytes(Mode::training, be)), false, &ctx);
  for (Executor* e : {&F, &I}) {
    e->set_step_seed(ctx.seed());
    e->set_update_state(false);
  }
  be.copy(ctx.output(0), I.input(inv_->input()));
  I.forward();
  be.copy(I.value(inv_->output()), x);  // the inverse's arena is free from here on
  be.copy(x, F.input(fw_->input()));
  F.forward();
  std::pair<Value, Tensor> seed{fw_->output(), ctx.grad_output(0)};
  F.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  if (ctx.needs_grad_input(0)) be.copy(F.grad(fw_->input()), ctx.grad_input(0));
  if (!ctx.rebuilt.empty() && ctx.rebuilt[0] != nullptr) be.copy(x, ctx.rebuilt_input(0));
  for (size_t p = 0; p < params_.size(); ++p)
    if (ctx.needs_grad_input(static_cast<int>(p) + 1))
      fw_->param_grad(F, params_[p], be, ctx.grad_input(static_cast<int>(p) + 1), true);
}

Value invertible(Value x, const SubNet& forward, const SubNet& inverse,
                 std::source_location where) {
  Tape& tape = x.tape();
  std::unique_ptr<InvertibleOp> op;
  try {
    Tape names(tape.params(), tape.dtype());  // the inverse starts from the forward's names
    names.continue_naming_from(tape);
    auto fw = std::make_unique<SubGraph>(tape, forward, x.meta());
    auto inv = std::make_unique<SubGraph>(names, inverse, fw->output().meta());
    op = std::make_unique<InvertibleOp>(std::move(fw), std::move(inv));
  } catch (const Error& e) {
    throw error_at(where, e);
  }
  std::vector<Value> inputs{x};
  for (Parameter* p : op->parameters()) inputs.push_back(tape.param(*p));
  return tape.record(std::move(op), std::move(inputs), where)[0];
}

void InvertibleCheck::require(double tolerance) const {
  FRUGAL_CHECK(std::isfinite(relative) && relative <= tolerance,
               "invertible check: inverse(forward(x)) differs from x by up to ", max_abs,
               " (relative to max |x|: ", relative, "), at element ", worst, ": x = ", x_at_worst,
               ", inverse(forward(x)) = ", rebuilt_at_worst, "; the tolerance is ", tolerance);
}

InvertibleCheck check_invertible(ParamStore& params, const SubNet& forward, const SubNet& inverse,
                                 const TensorMeta& sample, uint64_t seed) {
  FRUGAL_CHECK(sample.dtype == DType::f32 || sample.dtype == DType::f64,
               "invertible check: the sample must be f32 or f64, got ", dtype_name(sample.dtype));
  SubGraph fw(params, sample.dtype, "", forward, sample);
  SubGraph inv(params, sample.dtype, "", inverse, fw.output().meta());
  FRUGAL_CHECK(inv.output().meta() == sample,
               "invertible check: the inverse must return the sample's shape ", sample.shape,
               ", got ", inv.output().shape());
  Tensor x = Tensor::empty(sample.shape, sample.dtype);
  Rng rng(seed);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double u = 2 * rng.uniform() - 1;
    if (x.dtype() == DType::f32)
      x.data<float>()[i] = static_cast<float>(u);
    else
      x.data<double>()[i] = u;
  }
  return round_trip(fw, inv, x, seed);
}

InvertibleCheck check_invertible(const SubNet& forward, const SubNet& inverse, Shape sample,
                                 uint64_t seed, DType dtype) {
  ParamStore params(seed);
  return check_invertible(params, forward, inverse, {std::move(sample), dtype}, seed);
}

}  // namespace frugal
