// Reversible block (RevNet, Gomez et al. 2017), additive coupling: x = [x1, x2] split by
// channels, y1 = x1 + F(x2), y2 = x2 + G(y1), y = [y1, y2]. Backward does not read x: it
// rebuilds x from y (x2 = y2 - G(y1), x1 = y1 - F(x2)), running F and G forward once more
// with their tapes and reusing that recomputation for the gradients (one recompute per block).
// The rebuilt x is what the block before reads, so in a chain only the last output is stored.
#pragma once

#include <memory>
#include <source_location>

#include "layers/subgraph.h"

namespace frugal {

// A sub-network on one half of the channels: records and returns a value of its input's shape.
using HalfNet = SubNet;

class ReversibleOp final : public Op {
 public:
  // Records F and G on tapes of their own over `params` (named under `scope`).
  ReversibleOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F, HalfNet G);
  ~ReversibleOp() override;

  std::string name() const override { return "reversible"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  bool differentiable(int input) const override { return input >= 0; }
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }

  // The trainable parameters of F and G, in the order they follow x among the op's inputs.
  const std::vector<Parameter*>& parameters() const { return params_; }

 private:
  struct Layout;
  Layout layout(Mode mode, const Backend& backend) const;

  ParamStore& store_;
  DType dtype_;
  std::string scope_;
  HalfNet f_, g_;
  std::unique_ptr<SubGraph> F_, G_;
  std::vector<Parameter*> params_;
  TensorMeta x_, half_;
};

// Records a reversible block over x (N, C, H, W) with C even.
Value reversible_block(Value x, HalfNet F, HalfNet G,
                       std::source_location where = std::source_location::current());

}  // namespace frugal
