// Step: the plain description of one recorded step that planning reads: values (inputs,
// parameters, op outputs) with their shapes and consumers, and ops with their inputs,
// outputs and roles. No tape, op or network: running lowers a tape into one
// (run/step_lowering.h), and liveness, encodings and the planner read only this.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/roles.h"
#include "core/tensor.h"

namespace frugal {

enum class StepValueKind { input, param, op_output };

struct StepValue {
  StepValueKind kind = StepValueKind::input;
  TensorMeta meta;
  std::string name;
  int producer = -1;     // op index, for op outputs
  int output_index = 0;  // which output of the producer
  bool requires_grad = false;
  std::vector<int> consumers;  // op indices in order (an op reading twice appears twice)
};

struct StepOp {
  std::string name;                  // "conv2d", for labels
  std::vector<int> inputs;           // value ids
  std::vector<int> outputs;          // value ids
  std::vector<bool> differentiable;  // per input slot: can it carry a gradient
  Roles roles;                       // in the step's mode, with the op's current encoding
  // Ops that can save a compact encoding (a 1-bit mask) instead of reading their output:
  // their roles with each choice. choose_encodings picks one into `roles`.
  std::optional<Roles> full_roles, compact_roles;
  // The encoding chosen for this step (memory/encodings.h), for running to apply to the op;
  // empty while none was chosen (the op keeps the encoding it was recorded with).
  std::optional<bool> compact;
};

struct Step {
  Mode mode = Mode::training;
  std::vector<StepValue> values;
  std::vector<StepOp> ops;
  const StepValue& value(int id) const { return values.at(static_cast<size_t>(id)); }
  // Which of op's input slots receive a gradient: differentiable, and the value requires one.
  std::vector<bool> input_grads(const StepOp& op) const {
    std::vector<bool> grads;
    for (size_t i = 0; i < op.inputs.size(); ++i)
      grads.push_back(op.differentiable[i] && value(op.inputs[i]).requires_grad);
    return grads;
  }
};

}  // namespace frugal
