// Reversible coupling blocks: forward through F and G on borrowed scratch, backward rebuilding
// the input from the output with one recomputation of F and G; the additive coupling.
#include "recompute/reversible.h"

#include <algorithm>
#include <vector>

namespace frugal {

// Scratch layout in bytes: [F or G arena][T1][T2] in forward, plus [B][DF][D1 D2] in backward
// (B: one sample's half, through which dx's halves are rearranged in place; DF: F's upstream
// gradient where it is not dy1' itself; D1 D2: dy's halves where x takes no gradient, else they
// are worked on in dx's memory). F and G never run at once, so they take turns in one arena of
// max(f, g) bytes: what one leaves for later (x2, y1, G's parameter gradients) is moved out to
// T1, T2 or the op's gradients first, and each run starts from an input bound where the op
// keeps it (T1 or T2: Executor::bind_input, no copy and no arena bytes), never from what the
// arena held before.
struct CouplingOp::Layout {
  size_t f = 0, g = 0, half = 0, block = 0, df = 0, d = 0;
  size_t offset(int slot) const {  // slot 0: F and G, 1..5: T1, T2, B, DF, D1 D2
    auto round = [](size_t b) { return (b + 255) / 256 * 256; };
    size_t at = 0;
    const size_t sizes[6] = {std::max(f, g), half, half, block, df, d};
    for (int i = 0; i < slot; ++i) at += round(sizes[i]);
    return at;
  }
};

namespace {

// t's 2N blocks of `block` elements (sample n's first half at 2n, its second at 2n + 1) moved in
// place to [every first half | every second half] (`planar`), or back; cycle by cycle through
// `tmp`, one block of scratch.
void arrange_halves(Backend& be, Tensor t, int64_t N, int64_t block, bool planar, Tensor tmp) {
  t = t.reshape(Shape{t.numel()});
  // The position whose block lands at q: planar, q = k N + n takes 2n + k; back, the inverse.
  auto source = [&](int64_t q) { return planar ? 2 * (q % N) + q / N : (q % 2) * N + q / 2; };
  std::vector<bool> done(static_cast<size_t>(2 * N), false);
  for (int64_t s = 0; s < 2 * N; ++s) {
    if (done[static_cast<size_t>(s)] || source(s) == s) continue;
    be.copy(t.elements(s * block, block), tmp);
    int64_t at = s;
    for (int64_t from = source(at); from != s; at = from, from = source(at)) {
      Tensor dst = t.elements(at * block, block);
      be.copy(t.elements(from * block, block), dst);
      done[static_cast<size_t>(at)] = true;
    }
    Tensor last = t.elements(at * block, block);
    be.copy(tmp, last);
    done[static_cast<size_t>(at)] = true;
  }
}

}  // namespace

CouplingOp::CouplingOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F,
                       HalfNet G, int f_factor)
    : store_(params),
      dtype_(dtype),
      scope_(scope),
      f_(std::move(F)),
      g_(std::move(G)),
      f_factor_(f_factor) {}

CouplingOp::~CouplingOp() = default;

std::vector<TensorMeta> CouplingOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty() && (in[0].shape.rank() == 4 || in[0].shape.rank() == 2), name(),
               ": x must be (N,C,H,W) or (N,C), got ", in.empty() ? Shape{} : in[0].shape);
  FRUGAL_CHECK(in[0].shape[1] % 2 == 0, name(), ": x ", in[0].shape,
               " must have an even number of channels to split into halves");
  if (F_ && x_ == in[0]) return {x_};
  x_ = in[0];
  half_ = x_;
  half_.shape[1] /= 2;
  f_out_ = half_;
  f_out_.shape[1] *= f_factor_;
  auto record = [&](const HalfNet& net, const char* which, const TensorMeta& out) {
    auto h = std::make_unique<SubGraph>(store_, dtype_,
                                        scope_.empty() ? which : scope_ + "/" + which, net, half_);
    FRUGAL_CHECK(h->output().meta() == out, name(), ": ", which,
                 out == half_ ? " must return its input's shape "
                              : " must return twice its input's channels (scale, then shift) ",
                 out.shape, ", got ", h->output().shape());
    return h;
  };
  F_ = record(f_, "F", f_out_);
  G_ = record(g_, "G", half_);
  F_->set_recompute(rebuilds_);
  G_->set_recompute(rebuilds_);
  F_->set_borrow_input(true);  // F reads x2 (y1 for G) where the op keeps it: T1 or T2
  G_->set_borrow_input(true);
  params_ = F_->parameters();
  for (Parameter* p : G_->parameters())
    if (std::find(params_.begin(), params_.end(), p) == params_.end()) params_.push_back(p);
  FRUGAL_CHECK(in.size() == 1 || in.size() == 1 + params_.size(), name(), ": expects x and ",
               params_.size(), " parameters, got ", in.size(), " inputs");
  return {x_};
}

CouplingOp::Layout CouplingOp::layout(Mode mode, const Backend& backend, bool forward_only) const {
  Layout l;
  l.f = F_->arena_bytes(mode, backend, forward_only);
  l.g = G_->arena_bytes(mode, backend, forward_only);
  l.half = half_.bytes();
  l.block = half_.bytes() / static_cast<size_t>(half_.shape[0]);
  l.df = f_factor_ == 1 ? 0 : f_out_.bytes();
  l.d = x_grad_ ? 0 : 2 * half_.bytes();
  return l;
}

Roles CouplingOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  r.forward_scratch = layout(mode, backend, /*forward_only=*/true).offset(3);
  if (mode == Mode::training) {
    r.backward_reads_outputs = {0};
    r.rebuilds_inputs = {0};
    // y is copied into halves before x is written, so x may take y's bytes; dy is read into
    // dx's halves (in place where dx takes dy's bytes) before dx is written.
    r.rebuild_aliases = {{.output = 0, .input = 0}};
    r.grad_aliases = {{.output = 0, .input = 0}};
    r.backward_scratch = layout(mode, backend).offset(6);
  }
  return r;
}

// x = [x1, x2]:  y1 = couple(x1, F(x2)) (in T1),  y2 = x2 + G(y1) (in T2),  y = [y1, y2].
// x2 waits in T2 while G overwrites F's arena.
void CouplingOp::forward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  const Layout l = layout(ctx.mode(), be, /*forward_only=*/true);
  const Tensor& s = ctx.scratch();
  Executor& F = F_->executor(ctx.mode(), be, scratch_region(s, l.offset(0), l.f), true, &ctx);
  Executor& G = G_->executor(ctx.mode(), be, scratch_region(s, l.offset(0), l.g), true, &ctx);
  Tensor T1 = scratch_region(s, l.offset(1), half_), T2 = scratch_region(s, l.offset(2), half_);
  for (Executor* e : {&F, &G}) {
    e->set_step_seed(ctx.seed());
    e->set_update_state(ctx.update_state());
  }
  Tensor parts[2] = {T1, T2};
  be.concat_backward(ctx.input(0), parts);  // x1, x2
  F.bind_input(F_->input(), T2);
  F.forward();
  couple_forward(be, T1, F.value(F_->output()));
  G.bind_input(G_->input(), T1);
  G.forward();
  couple_second(be, T2, G.value(G_->output()), false);
  const Tensor halves[2] = {T1, T2};
  be.concat_forward(halves, ctx.output(0));
}

// From y and dy:  x2 = y2 - G(y1);  dy1' = dy1 + G'(y1)^T dy2;  x1 and dx1 from y1, F(x2) and
// dy1' (couple_backward);  dx2 = dy2 + F'(x2)^T df.  F and G run forward once more, with tapes,
// G first; y1 waits in T1 and G's parameter gradients go to the op's before F takes the arena.
void CouplingOp::backward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  const Layout l = layout(Mode::training, be);
  const Tensor& s = ctx.scratch();
  Executor& F = F_->executor(Mode::training, be, scratch_region(s, l.offset(0), l.f), false, &ctx);
  Executor& G = G_->executor(Mode::training, be, scratch_region(s, l.offset(0), l.g), false, &ctx);
  Tensor T1 = scratch_region(s, l.offset(1), half_), T2 = scratch_region(s, l.offset(2), half_);
  const int64_t N = half_.shape[0], count = half_.shape.numel(), block = count / N;
  Tensor B = scratch_region(s, l.offset(3), TensorMeta{Shape{block}, half_.dtype});
  Tensor DF = l.df > 0 ? scratch_region(s, l.offset(4), f_out_) : Tensor();
  for (Executor* e : {&F, &G}) {
    e->set_step_seed(ctx.seed());
    e->set_update_state(false);  // BatchNorm statistics were updated in forward
  }
  Tensor ys[2] = {T1, T2};
  be.concat_backward(ctx.output(0), ys);  // y1, y2
  // dy1 and dy2, D1 and D2, become dx1 and dx2 where dx will be: in dx's memory, laid out
  // [every dx1 | every dx2] until the end, or in scratch where x takes no gradient. Where dx
  // takes dy's bytes (dy dies here), dy's halves are rearranged there in place.
  const Tensor& dy = ctx.grad_output(0);
  const bool dx = ctx.needs_grad_input(0);
  FRUGAL_CHECK(dx || l.d > 0, who(), ": x takes a gradient it was recorded without");
  const Tensor work = dx ? ctx.grad_input(0) : scratch_region(s, l.offset(5), l.d);
  Tensor D1 = Tensor(work.storage(), work.offset(), half_.shape, half_.dtype);
  Tensor D2 = Tensor(work.storage(), work.offset() + half_.bytes(), half_.shape, half_.dtype);
  if (dx && work.storage() == dy.storage() && work.offset() == dy.offset()) {
    arrange_halves(be, work, N, block, true, B);
  } else {
    Tensor dys[2] = {D1, D2};
    be.concat_backward(dy, dys);
  }

  G.bind_input(G_->input(), T1);  // y1, kept there until G's backward is done
  G.forward();
  couple_second(be, T2, G.value(G_->output()), true);  // x2
  std::pair<Value, Tensor> seed_g{G_->output(), D2};
  G.backward(std::span<const std::pair<Value, Tensor>>(&seed_g, 1));
  be.accumulate(G.grad(G_->input()), D1);  // dy1'
  std::vector<bool> in_g(params_.size(), false);
  for (size_t p = 0; p < params_.size(); ++p) {
    const int slot = static_cast<int>(p) + 1;
    if (ctx.needs_grad_input(slot))
      in_g[p] = G_->param_grad(G, params_[p], be, ctx.grad_input(slot), true);
  }

  F.bind_input(F_->input(), T2);  // x2, kept there until F's backward is done
  F.forward();
  std::pair<Value, Tensor> seed_f{
      F_->output(), couple_backward(be, T1, F.value(F_->output()), D1, T1, DF)};  // x1, dx1
  F.backward(std::span<const std::pair<Value, Tensor>>(&seed_f, 1));
  be.accumulate(F.grad(F_->input()), D2);  // dx2

  if (dx) arrange_halves(be, work, N, block, false, B);  // [dx1 | dx2] back to dx's layout
  if (!ctx.rebuilt.empty() && ctx.rebuilt[0] != nullptr) {
    const Tensor x[2] = {T1, T2};
    be.concat_forward(x, ctx.rebuilt_input(0));
  }
  for (size_t p = 0; p < params_.size(); ++p) {
    const int slot = static_cast<int>(p) + 1;
    if (ctx.needs_grad_input(slot))
      F_->param_grad(F, params_[p], be, ctx.grad_input(slot), !in_g[p]);
  }
}

void CouplingOp::couple_second(Backend& be, Tensor& x2y2, const Tensor& g, bool rebuild) const {
  if (rebuild)
    be.subtract(x2y2, g, x2y2);
  else
    be.add(x2y2, g, x2y2);
}

void ReversibleOp::add_half(Backend& be, const Tensor& a, const Tensor& f, bool subtract,
                            Tensor& y) const {
  if (opt_.fixed_point)
    fixed_point_add(be, a, f, *opt_.fixed_point, subtract, y, who());
  else if (subtract)
    be.subtract(a, f, y);
  else
    be.add(a, f, y);
}

// y1 = x1 + f;  x1 = y1 - f,  dx1 = df = dy1'. With a grid, q(f) in place of f (and of g).
void ReversibleOp::couple_forward(Backend& be, Tensor& x1y1, const Tensor& f) const {
  add_half(be, x1y1, f, false, x1y1);
}

const Tensor& ReversibleOp::couple_backward(Backend& be, const Tensor& y1, const Tensor& f,
                                            Tensor& d1, Tensor& x1, Tensor&) const {
  add_half(be, y1, f, true, x1);
  return d1;
}

void ReversibleOp::couple_second(Backend& be, Tensor& x2y2, const Tensor& g, bool rebuild) const {
  add_half(be, x2y2, g, rebuild, x2y2);
}

std::string coupling_scope(Tape& tape, const std::string& kind) {
  return tape.scope().empty() ? tape.unique_name(kind)
                              : tape.scope() + "/" + tape.unique_name(kind);
}

Value record_coupling(Value x, std::unique_ptr<CouplingOp> op, std::source_location where) {
  Tape& tape = x.tape();
  try {
    const TensorMeta m = x.meta();
    op->infer(std::span<const TensorMeta>(&m, 1));
  } catch (const Error& e) {
    throw error_at(where, e);
  }
  op->set_input_grad(tape.value(x.id()).requires_grad);
  std::vector<Value> inputs{x};
  for (Parameter* p : op->parameters()) inputs.push_back(tape.param(*p));
  return tape.record(std::move(op), std::move(inputs), where)[0];
}

Value reversible_block(Value x, HalfNet F, HalfNet G, ReversibleOptions options,
                       std::source_location where) {
  Tape& tape = x.tape();
  if (options.fixed_point)  // a bad range or dtype fails here, at the model's line
    fixed_point_frac_bits(*options.fixed_point, tape.dtype(), "reversible");
  auto op = std::make_unique<ReversibleOp>(tape.params(), tape.dtype(),
                                           coupling_scope(tape, "reversible"), std::move(F),
                                           std::move(G), options);
  op->set_rebuilds(options.rebuilds);
  return record_coupling(x, std::move(op), where);
}

}  // namespace frugal
