// Checkpoint segment: a sub-network whose activations are not kept after forward. Backward
// runs the segment forward once more from its (kept) input, with its tape, and then its
// backward. Dropout replays the same masks and BatchNorm statistics are updated once a step,
// so a checkpointed step is bitwise equal to the same step with the segment inline.
#pragma once

#include <memory>
#include <source_location>

#include "recompute/subgraph.h"

namespace frugal {

class CheckpointOp final : public Op {
 public:
  CheckpointOp(std::unique_ptr<SubGraph> body) : body_(std::move(body)) {}
  std::string name() const override { return "checkpoint"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }
  const std::vector<Parameter*>& parameters() const { return params_; }
  // The segment, as recorded (memory budgets measure it).
  const SubGraph& body() const { return *body_; }

 private:
  std::unique_ptr<SubGraph> body_;
  std::vector<Parameter*> params_ = body_->parameters();
};

// Records `segment` over x as one checkpointed op. Parameters are named as they would be
// inline, so a model can switch segments on and off over the same parameter store.
Value checkpoint(Value x, const SubNet& segment,
                 std::source_location where = std::source_location::current());
// The same, the segment's backward plan rebuilding op outputs as `rebuilds` says (the same
// bits, less scratch in backward).
Value checkpoint(Value x, const SubNet& segment, Recompute rebuilds,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
