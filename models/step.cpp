// Recording a bundled network's training or inference step.
#include "models/step.h"

#include <vector>

#include "core/error.h"

namespace frugal {

Shape model_input_shape(const ModelSpec& spec, int64_t batch) {
  std::vector<int64_t> dims{batch};
  for (int64_t d : spec.input.dims()) dims.push_back(d);
  return Shape(dims);
}

ModelStep record_model_step(Tape& tape, const ModelSpec& spec, int64_t batch, Mode mode,
                            const ModelConfig& config) {
  FRUGAL_CHECK(batch > 0, spec.name, ": batch must be positive, got ", batch);
  ModelStep s;
  s.images = tape.input("images", model_input_shape(spec, batch), tape.dtype());
  if (mode == Mode::training) {
    std::vector<int64_t> labels{batch};
    for (int64_t d : spec.label_shape.dims()) labels.push_back(d);
    s.labels = tape.input("labels", Shape(labels), DType::i32);
  }
  s.logits = spec.build(s.images, config);
  if (mode == Mode::training) s.loss = model_loss(spec, s.logits, s.labels);
  return s;
}

}  // namespace frugal
