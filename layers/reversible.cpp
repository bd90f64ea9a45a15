// Reversible block: forward through F and G on borrowed scratch, backward rebuilding the
// input from the output with one recomputation of F and G.
#include "layers/reversible.h"

#include <algorithm>

namespace frugal {

// Scratch layout in bytes: [F arena][G arena][T1][T2] in forward, plus [D1][D2] in backward.
struct ReversibleOp::Layout {
  size_t f = 0, g = 0, half = 0;
  size_t offset(int slot) const {  // slot 0: F, 1: G, 2..5: T1, T2, D1, D2
    auto round = [](size_t b) { return (b + 255) / 256 * 256; };
    size_t at = 0;
    const size_t sizes[6] = {f, g, half, half, half, half};
    for (int i = 0; i < slot; ++i) at += round(sizes[i]);
    return at;
  }
};

ReversibleOp::ReversibleOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F,
                           HalfNet G)
    : store_(params), dtype_(dtype), scope_(scope), f_(std::move(F)), g_(std::move(G)) {}

ReversibleOp::~ReversibleOp() = default;

std::vector<TensorMeta> ReversibleOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty() && (in[0].shape.rank() == 4 || in[0].shape.rank() == 2),
               "reversible: x must be (N,C,H,W) or (N,C), got ",
               in.empty() ? Shape{} : in[0].shape);
  FRUGAL_CHECK(in[0].shape[1] % 2 == 0, "reversible: x ", in[0].shape,
               " must have an even number of channels to split into halves");
  if (F_ && x_ == in[0]) return {x_};
  x_ = in[0];
  half_ = x_;
  half_.shape[1] /= 2;
  auto record = [&](const HalfNet& net, const char* name) {
    auto h = std::make_unique<SubGraph>(store_, dtype_, scope_.empty() ? name : scope_ + "/" + name,
                                        net, half_);
    FRUGAL_CHECK(h->output().meta() == half_, "reversible: ", name,
                 " must return its input's shape ", half_.shape, ", got ", h->output().shape());
    return h;
  };
  F_ = record(f_, "F");
  G_ = record(g_, "G");
  params_ = F_->parameters();
  for (Parameter* p : G_->parameters())
    if (std::find(params_.begin(), params_.end(), p) == params_.end()) params_.push_back(p);
  FRUGAL_CHECK(in.size() == 1 || in.size() == 1 + params_.size(), "reversible: expects x and ",
               params_.size(), " parameters, got ", in.size(), " inputs");
  return {x_};
}

ReversibleOp::Layout ReversibleOp::layout(Mode mode, const Backend& backend) const {
  Layout l;
  l.f = F_->arena_bytes(mode, backend);
  l.g = G_->arena_bytes(mode, backend);
  l.half = half_.bytes();
  return l;
}

Roles ReversibleOp::roles(Mode mode, const Backend& backend) const {
  const Layout l = layout(mode, backend);
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  r.forward_scratch = l.offset(4);
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.rebuilds_inputs = {0};
    r.backward_scratch = l.offset(6);
  }
  return r;
}

// x = [x1, x2]:  y1 = x1 + F(x2) (in T1),  y2 = x2 + G(y1) (in T2),  y = [y1, y2]
void ReversibleOp::forward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  const Layout l = layout(ctx.mode(), be);
  const Tensor& s = ctx.scratch();
  Executor& F = F_->executor(ctx.mode(), be, scratch_region(s, l.offset(0), l.f));
  Executor& G = G_->executor(ctx.mode(), be, scratch_region(s, l.offset(1), l.g));
  Tensor T1 = scratch_region(s, l.offset(2), half_), T2 = scratch_region(s, l.offset(3), half_);
  for (Executor* e : {&F, &G}) {
    e->set_step_seed(ctx.seed());
    e->set_update_state(ctx.update_state());
  }
  Tensor& x2 = F.input(F_->input());
  Tensor parts[2] = {T1, x2};
  be.concat_backward(ctx.input(0), parts);
  F.forward();
  be.add(T1, F.value(F_->output()), T1);
  be.copy(T1, G.input(G_->input()));
  G.forward();
  be.add(x2, G.value(G_->output()), T2);
  const Tensor halves[2] = {T1, T2};
  be.concat_forward(halves, ctx.output(0));
}

// From y and dy:  x2 = y2 - G(y1);  dy1' = dy1 + G'(y1)^T dy2;  x1 = y1 - F(x2);
// dx1 = dy1';  dx2 = dy2 + F'(x2)^T dy1'.  F and G run forward once more, with their tapes.
void ReversibleOp::backward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  const Layout l = layout(Mode::training, be);
  const Tensor& s = ctx.scratch();
  Executor& F = F_->executor(Mode::training, be, scratch_region(s, l.offset(0), l.f));
  Executor& G = G_->executor(Mode::training, be, scratch_region(s, l.offset(1), l.g));
  Tensor T1 = scratch_region(s, l.offset(2), half_), T2 = scratch_region(s, l.offset(3), half_);
  Tensor D1 = scratch_region(s, l.offset(4), half_), D2 = scratch_region(s, l.offset(5), half_);
  for (Executor* e : {&F, &G}) {
    e->set_step_seed(ctx.seed());
    e->set_update_state(false);  // BatchNorm statistics were updated in forward
  }
  Tensor& y1 = G.input(G_->input());
  Tensor ys[2] = {y1, T2};
  be.concat_backward(ctx.output(0), ys);
  Tensor dys[2] = {D1, D2};
  be.concat_backward(ctx.grad_output(0), dys);

  G.forward();
  be.subtract(T2, G.value(G_->output()), T2);  // x2
  std::pair<Value, Tensor> seed_g{G_->output(), D2};
  G.backward(std::span<const std::pair<Value, Tensor>>(&seed_g, 1));
  be.accumulate(G.grad(G_->input()), D1);  // dy1'

  be.copy(T2, F.input(F_->input()));
  F.forward();
  be.subtract(y1, F.value(F_->output()), T1);  // x1
  std::pair<Value, Tensor> seed_f{F_->output(), D1};
  F.backward(std::span<const std::pair<Value, Tensor>>(&seed_f, 1));
  be.accumulate(F.grad(F_->input()), D2);  // dx2

  if (ctx.needs_grad_input(0)) {
    const Tensor d[2] = {D1, D2};
    be.concat_forward(d, ctx.grad_input(0));
  }
  if (!ctx.rebuilt.empty() && ctx.rebuilt[0] != nullptr) {
    const Tensor x[2] = {T1, T2};
    be.concat_forward(x, ctx.rebuilt_input(0));
  }
  for (size_t p = 0; p < params_.size(); ++p) {
    const int slot = static_cast<int>(p) + 1;
    if (!ctx.needs_grad_input(slot)) continue;
    Tensor& dw = ctx.grad_input(slot);
    const bool in_f = F_->param_grad(F, params_[p], be, dw, true);
    G_->param_grad(G, params_[p], be, dw, !in_f);
  }
}

Value reversible_block(Value x, HalfNet F, HalfNet G, std::source_location where) {
  Tape& tape = x.tape();
  const std::string scope = tape.scope().empty()
                                ? tape.unique_name("reversible")
                                : tape.scope() + "/" + tape.unique_name("reversible");
  auto op = std::make_unique<ReversibleOp>(tape.params(), tape.dtype(), scope, std::move(F),
                                           std::move(G));
  try {
    const TensorMeta m = x.meta();
    op->infer(std::span<const TensorMeta>(&m, 1));
  } catch (const Error& e) {
    throw Error(std::string(where.file_name()) + ":" + std::to_string(where.line()) + ": " +
                e.what());
  }
  std::vector<Value> inputs{x};
  for (Parameter* p : op->parameters()) inputs.push_back(tape.param(*p));
  return tape.record(std::move(op), std::move(inputs), where)[0];
}

}  // namespace frugal
