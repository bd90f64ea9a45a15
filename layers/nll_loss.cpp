// NLL loss forward and backward, with its roles; and the input checks shared with the fused
// softmax cross-entropy.
#include "layers/nll_loss.h"

namespace frugal {

std::vector<TensorMeta> infer_class_loss(const char* op, std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, op, ": expects 2 inputs (scores, labels), got ", in.size());
  const Shape& x = in[0].shape;
  FRUGAL_CHECK(x.rank() == 2 && x[0] >= 1 && x[1] >= 1, op, ": scores ", x,
               " must be (N,C) with N, C >= 1");
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64, op,
               ": scores must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[1].shape == Shape{x[0]} && in[1].dtype == DType::i32, op, ": labels ",
               in[1].shape, " ", dtype_name(in[1].dtype), " for scores ", x, ", expected [", x[0],
               "] i32");
  return {{Shape{1}, in[0].dtype}};
}

std::vector<TensorMeta> NllLossOp::infer(std::span<const TensorMeta> in) {
  return infer_class_loss("nll_loss", in);
}

Roles NllLossOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) r.backward_reads_inputs = {1};
  return r;
}

// loss = -mean_n logp[n, label_n]
void NllLossOp::forward(const OpContext& ctx) {
  ctx.backend().nll_forward(ctx.input(0), ctx.input(1), ctx.output(0));
}

// dlogp[n, c] = -dloss / N where c = label_n, else 0
void NllLossOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().nll_backward(ctx.grad_output(0), ctx.input(1), ctx.grad_input(0));
}

Value nll_loss(Value logp, Value labels, std::source_location where) {
  return logp.tape().record(std::make_unique<NllLossOp>(), {logp, labels}, where)[0];
}

}  // namespace frugal
