// Fused softmax cross-entropy forward and backward, with its roles.
#include "layers/softmax_cross_entropy.h"

#include "layers/nll_loss.h"
#include "layers/reshape.h"
#include "layers/transpose.h"

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

Value pixel_cross_entropy(Value logits, Value labels, std::source_location where) {
  const Shape& x = logits.shape();
  const Shape& l = labels.shape();
  FRUGAL_CHECK(x.rank() == 4 && l.rank() == 3 && l[0] == x[0] && l[1] == x[2] && l[2] == x[3],
               source_line(where), ": pixel_cross_entropy: logits ", x, " and labels ", l,
               ", expected (N,K,H,W) and (N,H,W)");
  const int64_t pixels = x[0] * x[2] * x[3];
  Value rows = reshape(transpose(logits, {0, 2, 3, 1}, where), Shape{pixels, x[1]}, where);
  return softmax_cross_entropy(rows, reshape(labels, Shape{pixels}, where), where);
}

}  // namespace frugal
