// Concat + batch norm forward and backward, with its roles. Forward joins the pieces into y
// and normalizes y in place, so y has the bits of concat then batch_norm; backward cuts dy
// into the pieces' gradients and runs batch norm's backward piece by piece, in place: every
// kernel reduces each channel alone in the same order (core/cpu/batchnorm.cpp), so the
// statistics, dx, dgamma and dbeta are those of the two ops' bit for bit.
#include "layers/concat_batch_norm.h"

#include <algorithm>

#include "core/communicator.h"

namespace frugal {

ConcatBatchNormOp::ConcatBatchNormOp(int pieces, BatchNormOptions o,
                                     std::vector<bool> scratch_pieces)
    : k_(pieces), options_(std::move(o)), scratch_pieces_(std::move(scratch_pieces)) {
  scratch_pieces_.resize(static_cast<size_t>(std::max(k_, 0)), false);
}

std::vector<TensorMeta> ConcatBatchNormOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(k_ >= 1 && in.size() == static_cast<size_t>(k_) + 4, "concat_batch_norm: expects ",
               k_, " pieces, then weight, bias, running_mean and running_var; got ", in.size(),
               " inputs");
  const Shape& s0 = in[0].shape;
  FRUGAL_CHECK(s0.rank() == 4 || s0.rank() == 2,
               "concat_batch_norm: piece 0 must be (N,C,H,W) or (N,C), got ", s0);
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "concat_batch_norm: pieces must be f32 or f64, got ", dtype_name(in[0].dtype));
  Shape y = s0;
  for (int i = 1; i < k_; ++i) {
    const Shape& s = in[static_cast<size_t>(i)].shape;
    bool fits = s.rank() == s0.rank();
    for (int d = 0; fits && d < s.rank(); ++d) fits = d == 1 || s[d] == s0[d];
    FRUGAL_CHECK(fits, "concat_batch_norm: piece ", i, " ", s, " does not match piece 0 ", s0,
                 " (all but dim 1 must be equal)");
    FRUGAL_CHECK(in[static_cast<size_t>(i)].dtype == in[0].dtype, "concat_batch_norm: piece ", i,
                 " is ", dtype_name(in[static_cast<size_t>(i)].dtype), ", piece 0 is ",
                 dtype_name(in[0].dtype));
    y[1] += s[1];
  }
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int i = 0; i < 4; ++i) {
    const TensorMeta& p = in[static_cast<size_t>(k_ + i)];
    FRUGAL_CHECK(p.shape == Shape{y[1]} && p.dtype == in[0].dtype, "concat_batch_norm: ", names[i],
                 " ", p.shape, " ", dtype_name(p.dtype), ", expected [", y[1], "] ",
                 dtype_name(in[0].dtype), " for the joined ", y);
  }
  xs_.assign(in.begin(), in.begin() + k_);
  y_ = {y, in[0].dtype};
  return {y_};
}

// Training backward reads the pieces and gamma, and the saved mean and 1/std (C each); its
// scratch takes dy's slice for a piece that needs no gradient (where its dgamma and dbeta
// come from). The output can be rebuilt from the pieces and the statistics.
Roles ConcatBatchNormOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode != Mode::training) return r;
  const TensorMeta channel{Shape{y_.shape[1]}, y_.dtype};
  r.saved = {channel, channel};
  for (int i = 0; i <= k_; ++i) r.backward_reads_inputs.push_back(i);
  for (int i = 0; i < k_; ++i)
    if (scratch_pieces_[static_cast<size_t>(i)])
      r.backward_scratch = std::max(r.backward_scratch, xs_[static_cast<size_t>(i)].bytes());
  std::vector<int> reads;
  for (int i = 0; i < k_ + 2; ++i) reads.push_back(i);
  set_rebuildable(r, std::move(reads), 3.0 * static_cast<double>(y_.shape.numel()),
                  2.0 * static_cast<double>(y_.bytes()));
  return r;
}

void ConcatBatchNormOp::join(const OpContext& ctx) const {
  std::vector<Tensor> xs;
  for (int i = 0; i < k_; ++i) xs.push_back(ctx.input(i));
  ctx.backend().concat_forward(xs, ctx.output(0));
}

// As BatchNormOp::forward, over the joined pieces in place.
void ConcatBatchNormOp::forward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  join(ctx);
  Tensor& y = ctx.output(0);
  const Tensor &gamma = ctx.input(k_), &beta = ctx.input(k_ + 1);
  Tensor running_mean = ctx.input(k_ + 2), running_var = ctx.input(k_ + 3);
  const double momentum = ctx.update_state() ? options_.momentum : 0.0;
  if (ctx.training() && ctx.sync_comm())
    sync_.forward(ctx, y, gamma, beta, running_mean, running_var, momentum, options_.eps, y,
                  ctx.saved(0), ctx.saved(1));
  else if (ctx.training())
    b.batchnorm_forward_train(y, gamma, beta, running_mean, running_var, momentum, options_.eps, y,
                              ctx.saved(0), ctx.saved(1));
  else
    b.batchnorm_forward_infer(y, gamma, beta, running_mean, running_var, options_.eps, y);
}

void ConcatBatchNormOp::rebuild(const OpContext& ctx) {
  join(ctx);
  Tensor& y = ctx.output(0);
  ctx.backend().batchnorm_normalize(y, ctx.input(k_), ctx.input(k_ + 1), ctx.saved(0), ctx.saved(1),
                                    y);
}

void ConcatBatchNormOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "concat_batch_norm: backward runs only in training mode");
  Backend& b = ctx.backend();
  const Tensor& dy = ctx.grad_output(0);
  Tensor none;
  const Tensor& dgamma = ctx.needs_grad_input(k_) ? ctx.grad_input(k_) : none;
  const Tensor& dbeta = ctx.needs_grad_input(k_ + 1) ? ctx.grad_input(k_ + 1) : none;
  const bool params = dgamma.defined() || dbeta.defined();
  // dy's slices straight into the pieces' gradients, where batch norm's backward runs in place.
  std::vector<Tensor> dxs;
  bool any_dx = false;
  for (int i = 0; i < k_; ++i) {
    const TensorMeta& m = xs_[static_cast<size_t>(i)];
    any_dx = any_dx || ctx.needs_grad_input(i);
    dxs.push_back(ctx.needs_grad_input(i) ? ctx.grad_input(i)
                                          : Tensor(nullptr, 0, m.shape, m.dtype));
  }
  if (any_dx) b.concat_backward(dy, dxs);
  const int64_t C = y_.shape[1];
  const bool sync = ctx.sync_comm() != nullptr && any_dx;
  Tensor sums = sync ? sync_.backward_sums(C) : Tensor();
  if (sync && (!piece_sums_.defined() || piece_sums_.device() != b.device()))
    piece_sums_ = Tensor::empty({2 * C}, DType::f64, Role::scratch, b.allocator());
  if (sync) b.fill(sums, 0.0);
  // Piece i: channels [at, at + Ci). Its dy slice is dxs[i], or one in scratch.
  int64_t at = 0;
  for (int i = 0; i < k_; ++i) {
    const TensorMeta& m = xs_[static_cast<size_t>(i)];
    const int64_t Ci = m.shape[1];
    auto channels = [&](const Tensor& t) { return t.defined() ? t.elements(at, Ci) : Tensor(); };
    const Tensor gamma = channels(ctx.input(k_)), mean = channels(ctx.saved(0)),
                 inv_std = channels(ctx.saved(1));
    Tensor dg = channels(dgamma), db = channels(dbeta);
    Tensor d = dxs[static_cast<size_t>(i)];
    const bool dx = ctx.needs_grad_input(i);
    if (!dx) {
      if (!params) {
        at += Ci;
        continue;
      }
      FRUGAL_CHECK(ctx.has_scratch(), "concat_batch_norm: piece ", i,
                   " needs no gradient but was recorded as needing one (no scratch for its dy)");
      const Tensor& s = ctx.scratch();
      d = Tensor(s.storage(), s.offset(), m.shape, m.dtype);
      std::vector<Tensor> one;
      for (int j = 0; j < k_; ++j) {
        const TensorMeta& mj = xs_[static_cast<size_t>(j)];
        one.push_back(j == i ? d : Tensor(nullptr, 0, mj.shape, mj.dtype));
      }
      b.concat_backward(dy, one);
    }
    // Synchronized: the parameters' sums from this rank alone, dx from the ranks' (below).
    b.batchnorm_backward(ctx.input(i), d, gamma, mean, inv_std, dx && !sync ? d : none, dg, db);
    if (sync && dx) {
      Tensor p = piece_sums_.elements(0, 2 * Ci);
      b.batchnorm_sums(ctx.input(i), mean, inv_std, d, p);
      Tensor to_dy = sums.elements(at, Ci), to_dyx = sums.elements(C + at, Ci);
      b.copy(p.elements(0, Ci), to_dy);
      b.copy(p.elements(Ci, Ci), to_dyx);
    }
    at += Ci;
  }
  if (!sync) return;
  // The ranks' sums in the layout BatchNormOp exchanges, so each sum has its bits.
  sync_.reduce_backward(ctx, C);
  at = 0;
  for (int i = 0; i < k_; ++i) {
    const int64_t Ci = xs_[static_cast<size_t>(i)].shape[1];
    if (ctx.needs_grad_input(i)) {
      Tensor p = piece_sums_.elements(0, 2 * Ci), p_dy = p.elements(0, Ci),
             p_dyx = p.elements(Ci, Ci);
      b.copy(sums.elements(at, Ci), p_dy);
      b.copy(sums.elements(C + at, Ci), p_dyx);
      Tensor& d = dxs[static_cast<size_t>(i)];
      b.batchnorm_backward_data(ctx.input(i), d, ctx.input(k_).elements(at, Ci),
                                ctx.saved(0).elements(at, Ci), ctx.saved(1).elements(at, Ci), p,
                                sync_.count, ctx.sync_scale(), d);
    }
    at += Ci;
  }
}

Value concat_batch_norm(std::vector<Value> xs, const BatchNormOptions& o,
                        std::source_location where) {
  FRUGAL_CHECK(xs.size() >= 2, source_line(where),
               ": concat_batch_norm: expects at least 2 pieces, got ", xs.size());
  Tape& t = xs[0].tape();
  int64_t c = 0;
  for (const Value& x : xs) {
    FRUGAL_CHECK(x.shape().rank() == 4 || x.shape().rank() == 2, source_line(where),
                 ": concat_batch_norm: pieces must be (N,C,H,W) or (N,C), got ", x.shape());
    c += x.shape()[1];
  }
  const std::string name = o.name.empty() ? t.unique_name("batch_norm") : o.name;
  const Shape C{c};
  Value gamma = t.param(name + ".weight", C, Init::ones(), true);
  Value beta = t.param(name + ".bias", C, Init::zeros(), true);
  Value mean = t.param(name + ".running_mean", C, Init::zeros(), false);
  Value var = t.param(name + ".running_var", C, Init::ones(), false);
  return concat_batch_norm(std::move(xs), gamma, beta, mean, var, o, where);
}

Value concat_batch_norm(std::vector<Value> xs, Value gamma, Value beta, Value running_mean,
                        Value running_var, const BatchNormOptions& o, std::source_location where) {
  FRUGAL_CHECK(!xs.empty(), source_line(where), ": concat_batch_norm: expects pieces, got none");
  Tape& t = xs[0].tape();
  std::vector<bool> scratch;  // pieces that get no gradient
  for (const Value& x : xs) scratch.push_back(!t.value(x.id()).requires_grad);
  const int k = static_cast<int>(xs.size());
  xs.insert(xs.end(), {gamma, beta, running_mean, running_var});
  return t.record(std::make_unique<ConcatBatchNormOp>(k, o, std::move(scratch)), std::move(xs),
                  where)[0];
}

}  // namespace frugal
