// BatchNorm2d forward and backward, with its roles. Training backward reads x, gamma and the
// saved mean and 1/std, never y (or with from_output y, gamma, beta and 1/std, never x);
// inference forward is elementwise, so y may take x's bytes.
#include "layers/batchnorm2d.h"

#include "core/communicator.h"
#include "core/kernel_checks.h"

namespace frugal {

std::vector<TensorMeta> BatchNormOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 5, "batch_norm: expects 5 inputs (x, weight, bias, running_mean, ",
               "running_var), got ", in.size());
  const TensorMeta& x = in[0];
  FRUGAL_CHECK(x.shape.rank() >= 2 && x.shape.rank() <= 5,
               "batch_norm: input must be (N,C), (N,C,L), (N,C,H,W) or (N,C,D,H,W), got ", x.shape);
  FRUGAL_CHECK(x.dtype == DType::f32 || x.dtype == DType::f64,
               "batch_norm: input must be f32 or f64, got ", dtype_name(x.dtype), " (x ", x.shape,
               ")");
  const char* names[] = {"x", "weight", "bias", "running_mean", "running_var"};
  for (int i = 1; i < 5; ++i)
    FRUGAL_CHECK(in[i].shape == Shape{x.shape[1]} && in[i].dtype == x.dtype,
                 "batch_norm: ", names[i], " ", in[i].shape, " ", dtype_name(in[i].dtype),
                 ", expected [", x.shape[1], "] ", dtype_name(x.dtype), " for x ", x.shape);
  x_ = x;
  return {x_};
}

Roles BatchNormOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) {
    const TensorMeta channel{Shape{x_.shape[1]}, x_.dtype};
    r.saved = {channel, channel};                  // mean, inv_std
    r.grad_aliases = {{.output = 0, .input = 0}};  // dx is written after the sums over dy
    if (options_.from_output) {
      r.backward_reads_inputs = {1, 2};
      r.backward_reads_outputs = {0};
      // Each channel's statistics are taken before it is normalized: y may take x's bytes.
      r.aliases = {{.output = 0, .input = 0}};
    } else {
      r.backward_reads_inputs = {0, 1};
    }
    // Rebuilt from x, gamma, beta and the saved statistics: one pass, no state update.
    set_rebuildable(r, {0, 1, 2}, 3.0 * static_cast<double>(x_.shape.numel()),
                    2.0 * static_cast<double>(x_.bytes()));
  } else {
    r.aliases = {{.output = 0, .input = 0}};
  }
  return r;
}

// Training: batch mean and biased variance normalize; running stats take the unbiased one,
// except in a recomputed forward (momentum 0 leaves them as they are: updated once a step).
// Inference: running statistics normalize; elementwise, identical bits in place.
void BatchNormOp::forward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  Tensor running_mean = ctx.input(3), running_var = ctx.input(4);  // views, updated in place
  const double momentum = ctx.update_state() ? options_.momentum : 0.0;
  if (options_.from_output && ctx.training()) check_from_output(ctx);
  if (ctx.training() && ctx.sync_comm()) {
    sync_.forward(ctx, ctx.input(0), ctx.input(1), ctx.input(2), running_mean, running_var,
                  momentum, options_.eps, ctx.output(0), ctx.saved(0), ctx.saved(1));
  } else if (ctx.training()) {
    b.batchnorm_forward_train(ctx.input(0), ctx.input(1), ctx.input(2), running_mean, running_var,
                              momentum, options_.eps, ctx.output(0), ctx.saved(0), ctx.saved(1));
  } else {
    b.batchnorm_forward_infer(ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3), ctx.input(4),
                              options_.eps, ctx.output(0));
  }
}

// Before a training forward from_output: what its backward will need, so that nothing runs (and
// no parameter is updated) before the error.
void BatchNormOp::check_from_output(const OpContext& ctx) {
  Backend& b = ctx.backend();
  const std::string who = "batch_norm" + (options_.name.empty() ? "" : " " + options_.name);
  FRUGAL_CHECK(!ctx.sync_comm(), who, ": from its output (--bn-from-output) does not run with ",
               "statistics synchronized over ranks (--sync-bn)");
  FRUGAL_CHECK(b.offers_batchnorm_from_output(), who,
               ": from its output (--bn-from-output) does not run on ", b.device().str());
  check_invertible_weights(who, to_host(b, ctx.input(1), gamma_host_));
}

// The output again from the statistics forward saved: the same bits, running stats untouched.
void BatchNormOp::rebuild(const OpContext& ctx) {
  ctx.backend().batchnorm_normalize(ctx.input(0), ctx.input(1), ctx.input(2), ctx.saved(0),
                                    ctx.saved(1), ctx.output(0));
}

// dx = gamma inv_std / M (M dy - sum dy - x^ sum dy x^), dgamma = sum dy x^, dbeta = sum dy
void BatchNormOp::backward(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.training(), "batch_norm: backward runs only in training mode");
  Backend& b = ctx.backend();
  Tensor none;
  Tensor& dx = ctx.needs_grad_input(0) ? ctx.grad_input(0) : none;
  Tensor& dgamma = ctx.needs_grad_input(1) ? ctx.grad_input(1) : none;
  Tensor& dbeta = ctx.needs_grad_input(2) ? ctx.grad_input(2) : none;
  if (options_.from_output) {
    b.batchnorm_backward_from_output(ctx.output(0), ctx.grad_output(0), ctx.input(1), ctx.input(2),
                                     ctx.saved(1), dx, dgamma, dbeta);
    return;
  }
  // Synchronized: this rank's sums for the parameters, the ranks' sums for dx (below).
  b.batchnorm_backward(ctx.input(0), ctx.grad_output(0), ctx.input(1), ctx.saved(0), ctx.saved(1),
                       ctx.sync_comm() ? none : dx, dgamma, dbeta);
  if (!ctx.sync_comm() || !dx.defined()) return;
  const int64_t C = x_.shape[1];
  Tensor sums = sync_.backward_sums(C);
  b.batchnorm_sums(ctx.input(0), ctx.saved(0), ctx.saved(1), ctx.grad_output(0), sums);
  sync_.reduce_backward(ctx, C);
  b.batchnorm_backward_data(ctx.input(0), ctx.grad_output(0), ctx.input(1), ctx.saved(0),
                            ctx.saved(1), sums, sync_.count, ctx.sync_scale(), dx);
}

// Statistics over every rank's batch: the ranks' sums of x and counts, the mean, then the
// ranks' sums of squared deviations from it, each all-reduced (the same bits on every rank).
void BatchNormSync::forward(const OpContext& ctx, const Tensor& x, const Tensor& gamma,
                            const Tensor& beta, Tensor& running_mean, Tensor& running_var,
                            double momentum, double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  Backend& b = ctx.backend();
  Communicator& comm = *ctx.sync_comm();
  const int64_t C = x.shape()[1];
  if (!sums.defined() || sums.device() != b.device() || sums.numel() != 2 * C + 1)
    sums = Tensor::empty({2 * C + 1}, DType::f64, Role::scratch, b.allocator());
  Tensor sum = sums.elements(0, C), n = sums.elements(C, 1), sq = sums.elements(C + 1, C);
  Tensor none;
  b.batchnorm_sums(x, none, none, none, sum);
  b.fill(n, static_cast<double>(x.numel() / C));
  Tensor head = sums.elements(0, C + 1);
  comm.allreduce_sum(head).wait();
  count = to_host(b, n, host_count).data<double>()[0];
  b.batchnorm_sync_stats(sum, none, count, 0, eps, running_mean, running_var, mean, inv_std);
  b.batchnorm_sums(x, mean, none, none, sq);
  comm.allreduce_sum(sq).wait();
  b.batchnorm_sync_stats(sum, sq, count, momentum, eps, running_mean, running_var, mean, inv_std);
  b.batchnorm_normalize(x, gamma, beta, mean, inv_std, y);
}

void BatchNormSync::reduce_backward(const OpContext& ctx, int64_t C) const {
  Tensor s = backward_sums(C);
  ctx.sync_comm()->allreduce_sum(s, ctx.sync_scale()).wait();
}

int read_batch_norm_outputs(Tape& tape, const Backend& backend) {
  int set = 0;
  for (size_t k = 0; k < tape.ops().size(); ++k) {
    OpNode& node = tape.ops()[k];
    auto* bn = dynamic_cast<BatchNormOp*>(node.op.get());
    if (bn == nullptr || bn->from_output()) continue;
    // Worth it only where y is kept anyway and x would die.
    if (tape.output_kept_input_dies(static_cast<int>(k), backend)) {
      bn->set_from_output(true);
      ++set;
    }
  }
  return set;
}

Value batch_norm(Value x, const BatchNormOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() >= 2 && x.shape().rank() <= 5, source_line(where),
               ": batch_norm: input must be (N,C), (N,C,L), (N,C,H,W) or (N,C,D,H,W), got ",
               x.shape());
  const std::string name = o.name.empty() ? t.unique_name("batch_norm") : o.name;
  const Shape C{x.shape()[1]};
  Value gamma = t.param(name + ".weight", C, Init::ones(), true);
  Value beta = t.param(name + ".bias", C, Init::zeros(), true);
  Value mean = t.param(name + ".running_mean", C, Init::zeros(), false);
  Value var = t.param(name + ".running_var", C, Init::ones(), false);
  BatchNormOptions named = o;
  named.name = name;  // what its errors call it
  return t.record(std::make_unique<BatchNormOp>(named), {x, gamma, beta, mean, var}, where)[0];
}

}  // namespace frugal
