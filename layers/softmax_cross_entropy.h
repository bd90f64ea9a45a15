// Fused softmax cross-entropy: loss = mean_n (logsumexp(x_n) - x[n, label_n]) over logits
// (N,C) and i32 labels (N), i.e. nll_loss(log_softmax(x)) without the (N,C) log-probability
// buffer. Backward reads the logits and labels and recomputes the softmax.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class SoftmaxCrossEntropyOp final : public Op {
 public:
  std::string name() const override { return "softmax_cross_entropy"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input == 0; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
};

// loss (1) = mean_n (logsumexp(logits_n) - logits[n, labels_n]); a label outside [0, C)
// throws when forward runs.
Value softmax_cross_entropy(Value logits, Value labels,
                            std::source_location where = std::source_location::current());

// Per-pixel cross-entropy for segmentation (PyTorch's CrossEntropyLoss on (N,K,H,W) logits
// and (N,H,W) labels, reduction mean): the mean over the N H W pixels of logsumexp over the K
// classes minus the labelled logit. Recorded as the logits moved to (N H W, K) rows (one
// transposing copy of the logits) and softmax_cross_entropy on those rows. Any positions as
// CrossEntropyLoss takes them: (N,K,L) with (N,L), (N,K,D,H,W) with (N,D,H,W).
Value pixel_cross_entropy(Value logits, Value labels,
                          std::source_location where = std::source_location::current());

}  // namespace frugal
