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
  bool fits = x.rank() >= 3 && l.rank() == x.rank() - 1 && l[0] == x[0];
  for (int i = 1; fits && i < l.rank(); ++i) fits = l[i] == x[i + 1];
  FRUGAL_CHECK(fits, source_line(where), ": pixel_cross_entropy: logits ", x, " and labels ", l,
               ", expected (N,K,d1,...) and (N,d1,...): (N,K,L), (N,K,H,W), (N,K,D,H,W)");
  // The classes axis moved last, every position a row.
  std::vector<int64_t> order{0};
  int64_t positions = x[0];
  for (int i = 2; i < x.rank(); ++i) {
    order.push_back(i);
    positions *= x[i];
  }
  order.push_back(1);
  Value rows = reshape(transpose(logits, order, where), Shape{positions, x[1]}, where);
  return softmax_cross_entropy(rows, reshape(labels, Shape{positions}, where), where);
}

}  // namespace frugal
