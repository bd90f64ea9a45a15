// A bundled network's step recorded on a tape: the one place that does it, for the trainer,
// the evaluator, the budget search, `frugal memory`, `frugal bench` and the benchmarks.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/tape.h"
#include "core/tensor.h"
#include "models/registry.h"

namespace frugal {

struct ModelStep {
  Value images;  // (N, spec.input...), of the tape's dtype
  Value labels;  // (N) i32; training only
  Value logits;  // the network's output
  Value loss;    // training only: model_loss(spec, logits, labels), plus extra_outputs' own
  // The inputs the network made besides images and labels (spec.extra_inputs), in order.
  std::vector<Value> extra_inputs;
  // The network's other outputs (spec.build_outputs: auxiliary heads), each of the logits'
  // shape; in training each adds its own loss against the labels to `loss`.
  std::vector<Value> extra_outputs;
  // Training with ModelConfig::batch_norm_from_output: the batch norms that read their output
  // in backward (read_batch_norm_outputs).
  int batch_norms_from_output = 0;
  // With ModelConfig::layer_norm_from_output: the layer norms that do (read_layer_norm_outputs).
  int layer_norms_from_output = 0;
  // What the step reads back: the loss in training, the logits in inference.
  Value out() const { return loss.valid() ? loss : logits; }
};

// (batch, then sample's axes): a batch of inputs or of labels from one sample's shape.
Shape batched(int64_t batch, const Shape& sample);
// The images input of `spec` over a batch of `batch`: (batch, spec.input...).
Shape model_input_shape(const ModelSpec& spec, int64_t batch);

// Seeded random host tensors for a step's extra inputs (spec.extra_inputs), in order (frugal
// memory --run and frugal bench): standard normal values, as the images get, or whole numbers
// in [0, 1000) where the input holds them (a diffusion model's timesteps).
std::vector<Tensor> random_extra_inputs(const ModelSpec& spec, std::span<const Value> inputs,
                                        uint64_t seed);

// Records `spec` with `config` over a batch of `batch` images; in training also the labels
// (recorded before the network) and the loss. Throws frugal::Error naming the batch if it is
// not positive.
ModelStep record_model_step(Tape& tape, const ModelSpec& spec, int64_t batch, Mode mode,
                            const ModelConfig& config = {});

}  // namespace frugal
