// Recording a bundled network's training or inference step.
#include "models/step.h"

#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/layer_norm.h"

namespace frugal {

Shape batched(int64_t batch, const Shape& sample) {
  std::vector<int64_t> dims{batch};
  dims.insert(dims.end(), sample.dims().begin(), sample.dims().end());
  return Shape(dims);
}

Shape model_input_shape(const ModelSpec& spec, int64_t batch) {
  return batched(batch, spec.input);
}

std::vector<Tensor> random_extra_inputs(const ModelSpec& spec, std::span<const Value> inputs,
                                        uint64_t seed) {
  FRUGAL_CHECK(inputs.size() == spec.extra_inputs.size(), spec.name, ": ", inputs.size(),
               " extra inputs given, the model names ", spec.extra_inputs.size());
  std::vector<Tensor> out;
  Rng rng(seed);
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor t = Tensor::empty(inputs[k].shape(), inputs[k].dtype());
    const bool whole = spec.extra_inputs[k].whole;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v =
          whole ? static_cast<double>(rng.below(static_cast<uint64_t>(spec.extra_inputs[k].below)))
                : rng.normal();
      if (t.dtype() == DType::f64)
        t.data<double>()[i] = v;
      else
        t.data<float>()[i] = static_cast<float>(v);
    }
    out.push_back(std::move(t));
  }
  return out;
}

ModelStep record_model_step(Tape& tape, const ModelSpec& spec, int64_t batch, Mode mode,
                            const ModelConfig& config) {
  FRUGAL_CHECK(batch > 0, spec.name, ": batch must be positive, got ", batch);
  ModelStep s;
  s.images = tape.input("images", model_input_shape(spec, batch), tape.dtype());
  if (mode == Mode::training)
    s.labels = tape.input("labels", batched(batch, spec.label_shape), DType::i32);
  const size_t before = tape.values().size();
  if (spec.build_outputs) {
    std::vector<Value> outputs = spec.build_outputs(s.images, config);
    FRUGAL_CHECK(!outputs.empty(), spec.name, ": the network returned no output");
    s.logits = outputs[0];
    s.extra_outputs.assign(outputs.begin() + 1, outputs.end());
  } else {
    s.logits = spec.build(s.images, config);
  }
  for (size_t v = before; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::input)
      s.extra_inputs.emplace_back(&tape, static_cast<int>(v));
  FRUGAL_CHECK(s.extra_inputs.size() == spec.extra_inputs.size(), spec.name, ": ",
               s.extra_inputs.size(), " inputs made besides the images, the model names ",
               spec.extra_inputs.size());
  if (mode == Mode::training && config.batch_norm_from_output)
    s.batch_norms_from_output = read_batch_norm_outputs(tape, cpu_backend());
  if (mode == Mode::training && config.layer_norm_from_output)
    s.layer_norms_from_output = read_layer_norm_outputs(tape, cpu_backend());
  if (mode == Mode::training) {
    // Several outputs (auxiliary heads): each scored against the labels, the losses summed.
    s.loss = model_loss(spec, s.logits, s.labels);
    for (const Value& y : s.extra_outputs) s.loss = add(s.loss, model_loss(spec, y, s.labels));
  }
  return s;
}

}  // namespace frugal
