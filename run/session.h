// Session: runs a model over inputs of any shape. It records and plans once per input-shape
// signature and caches the executor (a new batch size replans; it never reuses a plan made
// for other shapes). Parameters, optimizer state and the step counter are shared, so changing
// the batch size or the memory mode between steps does not change the results.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "run/executor.h"

namespace frugal {

struct SessionOptions {
  Mode mode = Mode::training;
  MemoryMode memory = MemoryMode::planned;
  DType dtype = DType::f32;  // parameters and float activations
  uint64_t seed = 0;
  std::optional<OptimizerConfig> optimizer = std::nullopt;      // training: applied in every step
  size_t workspace_limit = std::numeric_limits<size_t>::max();  // as ExecutorOptions
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
};

class Session {
 public:
  // Records the model over the given inputs; returns the value the step reads back (the loss
  // in training, which must have one element; the output in inference).
  using Build = std::function<Value(Tape& tape, std::span<const Value> inputs)>;

  Session(ParamStore& params, Backend& backend, std::vector<std::string> input_names, Build build,
          SessionOptions options);

  // One step over host tensors: forward, and in training backward and the optimizer.
  // Returns the read-back value (valid until the next step).
  const Tensor& step(std::span<const Tensor> inputs);
  // The executor for these input shapes (recorded and planned on first use).
  Executor& executor(std::span<const TensorMeta> inputs);
  // Input i of the executor for these shapes, for a caller that writes the inputs in place (a
  // Batcher copying straight into them) and then calls run(inputs).
  Tensor& input(std::span<const TensorMeta> inputs, size_t i);
  // step() over inputs already written in place.
  const Tensor& run(std::span<const TensorMeta> inputs);
  // Bytes the cached executors hold (excluding parameters).
  size_t memory_bytes() const;

  void set_memory(MemoryMode memory);  // takes effect at the next step
  MemoryMode memory() const { return options_.memory; }
  void set_step(uint64_t step) { step_ = step; }
  uint64_t step_count() const { return step_; }
  size_t plans() const { return cache_.size(); }
  Backend& backend() const { return backend_; }

 private:
  struct Bound {
    std::unique_ptr<Tape> tape;
    std::vector<Value> inputs;
    Value out;
    std::unique_ptr<Executor> executor;
  };
  Bound& bind(std::span<const TensorMeta> inputs);
  const Tensor& run(Bound& b);

  ParamStore& params_;
  Backend& backend_;
  std::vector<std::string> names_;
  Build build_;
  SessionOptions options_;
  std::map<std::string, Bound> cache_;  // signature -> recorded, planned model
  uint64_t step_ = 0;
};

}  // namespace frugal
