// Recording a bundled network's training or inference step.
#include "models/step.h"

#include <vector>

#include "core/error.h"

namespace frugal {

Shape batched(int64_t batch, const Shape& sample) {
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
  return Shape(dims);
}

Shape model_input_shape(const ModelSpec& spec, int64_t batch) {
  return batched(batch, spec.input);
}

ModelStep record_model_step(Tape& tape, const ModelSpec& spec, int64_t batch, Mode mode,
                            const ModelConfig& config) {
  FRUGAL_CHECK(batch > 0, spec.name, ": batch must be positive, got ", batch);
  ModelStep s;
  s.images = tape.input("images", model_input_shape(spec, batch), tape.dtype());
  if (mode == Mode::training)
    s.labels = tape.input("labels", batched(batch, spec.label_shape), DType::i32);
  s.logits = spec.build(s.images, config);
  if (mode == Mode::training) s.loss = model_loss(spec, s.logits, s.labels);
  return s;
}

}  // namespace frugal
