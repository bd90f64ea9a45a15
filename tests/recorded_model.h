// Helpers of the model tests: a bundled network recorded at batch 2 and summarized (trainable
// elements, output shape, op names, parameter names), and a few SGD steps of it whose results
// a test compares between memory modes.
#pragma once

#include <string>
#include <vector>

#include "autograd/tape.h"
#include "check/gradcheck.h"
#include "models/registry.h"
#include "run/executor.h"

namespace frugal::testing {

struct Recorded {
  size_t params = 0;               // trainable elements
  Shape output;                    // of the network at batch 2
  std::vector<std::string> ops;    // op names in tape order
  std::vector<std::string> names;  // parameter names
  int count(const std::string& op) const {
    int n = 0;
    for (const std::string& name : ops) n += name == op;
    return n;
  }
  bool has_param(const std::string& name) const {
    for (const std::string& n : names)
      if (n == name) return true;
    return false;
  }
};

// Records model `name` at batch 2 in f32 (recording allocates only the parameters, or nothing
// on a shapes-only store).
inline Recorded record_model(const std::string& name, const ModelConfig& config = {},
                             bool shapes_only = false) {
  const ModelSpec& spec = find_model(name);
  ParamStore store = shapes_only ? ParamStore::shapes_only() : ParamStore(1);
  Tape tape(store, DType::f32);
  Shape input{2, spec.input[0], spec.input[1], spec.input[2]};
  Value y = spec.build(tape.input("images", input, DType::f32), config);
  Recorded r{store.count_elements(true), y.shape(), {}, {}};
  for (const OpNode& op : tape.ops()) r.ops.push_back(op.op->name());
  for (Parameter* p : store.all()) r.names.push_back(p->name);
  return r;
}

// `steps` SGD steps (momentum 0.9) of model `name` at batch 2 on seeded random images, in the
// given memory mode (planned runs with poisoned buffers), config, op-level recomputation and
// memory budget (bytes of arena; 0: none): each step's loss and logits, then every parameter
// and running statistic.
inline std::vector<Tensor> train_model(const std::string& name, MemoryMode memory, int steps,
                                       const ModelConfig& config = {},
                                       Recompute recompute = Recompute::none,
                                       size_t rebuild_budget = 0, bool pack = false) {
  ParamStore store(7);
  Tape tape(store, DType::f32);
  const ModelSpec& spec = find_model(name);
  const Shape shape{2, spec.input[0], spec.input[1], spec.input[2]};
  Value x = tape.input("images", shape, DType::f32);
  Value labels = tape.input("labels", {2}, DType::i32);
  Value logits = spec.build(x, config);
  Value loss = model_loss(spec, logits, labels);
  Executor ex(tape, cpu_backend(),
              {.memory = memory,
               .poison = memory == MemoryMode::planned,
               .seed = 3,
               .keep = {loss, logits},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9},
               .recompute = recompute,
               .rebuild_budget = rebuild_budget,
               .pack = pack});
  std::vector<Tensor> out;
  for (int step = 0; step < steps; ++step) {
    ex.set_input(x, random_tensor(shape, 10 + step, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(2, spec.classes, 20 + step));
    ex.forward();
    out.push_back(clone(ex.value(loss)));
    out.push_back(clone(ex.value(logits)));
    ex.backward(loss);
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));  // incl. BN statistics
  return out;
}

}  // namespace frugal::testing
