// NLL loss: loss = -mean_n logp[n, label_n] over log-probabilities (N,C) (after
// log_softmax) and i32 labels (N). Labels carry no gradient; backward reads only them.
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class NllLossOp final : public Op {
 public:
  std::string name() const override { return "nll_loss"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input == 0; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
};

// Checks the inputs of a loss over class scores, x (N,C) f32/f64 and labels (N) i32, naming
// `op`; returns the loss meta, (1) of x's dtype.
std::vector<TensorMeta> infer_class_loss(const char* op, std::span<const TensorMeta> in);

// loss (1) = -mean_n logp[n, labels_n]; a label outside [0, C) throws when forward runs.
Value nll_loss(Value logp, Value labels,
               std::source_location where = std::source_location::current());

}  // namespace frugal
