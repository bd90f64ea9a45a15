// Checkpoint segment forward and backward over a SubGraph planned into the op's scratch.
#include "recompute/checkpoint.h"

namespace frugal {

std::vector<TensorMeta> CheckpointOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(!in.empty() && in[0] == body_->input().meta(), "checkpoint: x ",
               in.empty() ? Shape{} : in[0].shape, " does not match the segment's input ",
               body_->input().shape());
  FRUGAL_CHECK(in.size() == 1 + params_.size(), "checkpoint: expects x and ", params_.size(),
               " parameters, got ", in.size(), " inputs");
  return {body_->output().meta()};
}

Roles CheckpointOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = body_->arena_bytes(mode, backend, /*forward_only=*/true);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0};
    r.backward_scratch = body_->arena_bytes(mode, backend);
  }
  return r;
}

void CheckpointOp::forward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  Executor& ex = body_->executor(ctx.mode(), be, ctx.scratch(), /*forward_only=*/true, &ctx);
  ex.set_step_seed(ctx.seed());
  ex.set_update_state(ctx.update_state());
  be.copy(ctx.input(0), ex.input(body_->input()));
  ex.forward();
  be.copy(ex.value(body_->output()), ctx.output(0));
}

// The segment's forward again (state frozen), then its backward from dy.
void CheckpointOp::backward(const OpContext& ctx) {
  Backend& be = ctx.backend();
  Executor& ex = body_->executor(Mode::training, be, ctx.scratch(), false, &ctx);
  ex.set_step_seed(ctx.seed());
  ex.set_update_state(false);
  be.copy(ctx.input(0), ex.input(body_->input()));
  ex.forward();
  std::pair<Value, Tensor> seed{body_->output(), ctx.grad_output(0)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  if (ctx.needs_grad_input(0)) be.copy(ex.grad(body_->input()), ctx.grad_input(0));
  for (size_t p = 0; p < params_.size(); ++p)
    if (ctx.needs_grad_input(static_cast<int>(p) + 1))
      body_->param_grad(ex, params_[p], be, ctx.grad_input(static_cast<int>(p) + 1), true);
}

Value checkpoint(Value x, const SubNet& segment, std::source_location where) {
  return checkpoint(x, segment, Recompute::none, where);
}

Value checkpoint(Value x, const SubNet& segment, Recompute rebuilds, std::source_location where) {
  Tape& tape = x.tape();
  std::unique_ptr<SubGraph> body;
  try {
    body = std::make_unique<SubGraph>(tape, segment, x.meta());
  } catch (const Error& e) {
    throw error_at(where, e);
  }
  body->set_recompute(rebuilds);
  auto op = std::make_unique<CheckpointOp>(std::move(body));
  std::vector<Value> inputs{x};
  for (Parameter* p : op->parameters()) inputs.push_back(tape.param(*p));
  return tape.record(std::move(op), std::move(inputs), where)[0];
}

}  // namespace frugal
