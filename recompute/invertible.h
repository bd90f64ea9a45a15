// Generic invertible op: y = forward(x) for a user's sub-network with a known inverse. The op
// lets x die after forward and, in backward, rebuilds it as inverse(y), then runs forward once
// more with its tape and backward through it. check_invertible() measures how well the
// inverse inverts the forward on a random sample, before a model relies on it.
#pragma once

#include <memory>
#include <source_location>

#include "recompute/subgraph.h"

namespace frugal {

class InvertibleOp final : public Op {
 public:
  InvertibleOp(std::unique_ptr<SubGraph> forward, std::unique_ptr<SubGraph> inverse);
  std::string name() const override { return "invertible"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }
  // The forward's trainable parameters, in the order they follow x among the op's inputs.
  const std::vector<Parameter*>& parameters() const { return params_; }

 private:
  std::unique_ptr<SubGraph> fw_, inv_;
  std::vector<Parameter*> params_;
};

// Records y = forward(x) as one op whose input is rebuilt in backward as inverse(y). Both are
// recorded with the names `forward` would get inline, so a layer the inverse records in the
// same order as the forward gets the forward's parameter (the inverse may use no other). The
// inverse runs in backward as the recompute does: training mode, BatchNorm statistics frozen,
// the step's dropout masks (a dropout the inverse records where the forward did draws the
// same mask; a BatchNorm on the same input computes the same batch statistics). Throws if inverse's
// output does not have x's shape, or it uses a parameter forward does not.
Value invertible(Value x, const SubNet& forward, const SubNet& inverse,
                 std::source_location where = std::source_location::current());

// How closely inverse(forward(x)) rebuilds x: max |x̂ - x| over the sample, the same relative
// to max |x|, and the element where the difference is largest.
struct InvertibleCheck {
  double max_abs = 0, relative = 0;
  int64_t worst = -1;  // element index, -1 if the sample was empty
  double x_at_worst = 0, rebuilt_at_worst = 0;
  bool within(double tolerance) const { return relative <= tolerance; }
  // Throws frugal::Error with the numbers above when relative > tolerance (or not finite).
  void require(double tolerance) const;
};

// Runs forward then inverse, as backward does (training mode, state frozen), on a sample of shape
// `sample` uniform in [-1, 1) from `seed`, with parameters from `params` (created there, as
// recording would, if new).
InvertibleCheck check_invertible(ParamStore& params, const SubNet& forward, const SubNet& inverse,
                                 const TensorMeta& sample, uint64_t seed = 1);
// Same, over a fresh parameter store seeded with `seed`.
InvertibleCheck check_invertible(const SubNet& forward, const SubNet& inverse, Shape sample,
                                 uint64_t seed = 1, DType dtype = DType::f64);

}  // namespace frugal
