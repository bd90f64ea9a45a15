// Fused softmax cross-entropy forward and backward, with its roles.
#include "layers/softmax_cross_entropy.h"

#include "layers/nll_loss.h"

namespace frugal {

std::vector<TensorMeta> SoftmaxCrossEntropyOp::infer(std::span<const TensorMeta> in) {
  return infer_class_loss("softmax_cross_entropy", in);
}

Roles SoftmaxCrossEntropyOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) r.backward_reads_inputs = {0, 1};
  return r;
}

// loss = mean_n (logsumexp(x_n) - x[n, label_n])
void SoftmaxCrossEntropyOp::forward(const OpContext& ctx) {
  ctx.backend().softmax_cross_entropy_forward(ctx.input(0), ctx.input(1), ctx.output(0));
}

// dx = (softmax(x) - onehot(label)) dloss / N
void SoftmaxCrossEntropyOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().softmax_cross_entropy_backward(ctx.input(0), ctx.input(1), ctx.grad_output(0),
                                               ctx.grad_input(0));
}

Value softmax_cross_entropy(Value logits, Value labels, std::source_location where) {
  return logits.tape().record(std::make_unique<SoftmaxCrossEntropyOp>(), {logits, labels},
                              where)[0];
}

}  // namespace frugal
