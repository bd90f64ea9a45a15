// Evaluator: an inference Session over the shared ParamStore, on its backend (a plan per batch
// size); labels stay on the host for the accuracy count, images are placed by the Batcher
// straight into the executor's input as in training, and the logits come back through the
// backend.
#include "train/evaluate.h"

#include <algorithm>

#include "core/backend.h"
#include "data/batcher.h"
#include "models/step.h"

namespace frugal {

int64_t count_correct(const Tensor& logits, const Tensor& labels, int64_t K) {
  const int64_t B = logits.shape()[0], stride = logits.shape()[1];
  const float* x = logits.data<float>();
  const int32_t* y = labels.data<int32_t>();
  int64_t correct = 0;
  for (int64_t n = 0; n < B; ++n) {
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k)
      if (x[n * stride + k] > x[n * stride + best]) best = k;
    correct += best == y[n];
  }
  return correct;
}

namespace {
ModelConfig with_classes(ModelConfig c, int64_t classes) {
  c.classes = classes;
  return c;
}
}  // namespace

Evaluator::Evaluator(ParamStore& params, const ModelSpec& model, const Dataset& data, int64_t batch,
                     MemoryMode memory, const ModelConfig& config, size_t workspace_limit,
                     size_t workspace_growth)
    : data_(data),
      model_(model),
      batch_(std::min(batch, data.size())),
      session_(params, params.backend(), {"images"},
               [build = model.build, c = with_classes(config, data.classes)](
                   Tape&, std::span<const Value> in) { return build(in[0], c); },
               {.mode = Mode::inference,
                .memory = memory,
                .workspace_limit = workspace_limit,
                .workspace_growth = workspace_growth}) {
  FRUGAL_CHECK(model.label_shape.rank() == 0, model.name,
               " is a segmentation model; its accuracy is measured by `frugal segment`");
  check_images_only(model, "eval");
  FRUGAL_CHECK(batch >= 1 && data.size() >= 1, "evaluate: batch ", batch, " over ", data.size(),
               " samples: both must be positive");
  labels_ = Tensor::empty({batch_}, DType::i32);
  // Full batches, then the remainder: recorded and planned now, so the parameters exist (and
  // can be loaded) from here on.
  for (int64_t rows : {batch_, data.size() % batch_})
    if (rows > 0) {
      const TensorMeta in = input(rows);
      session_.executor({&in, 1});
    }
}

TensorMeta Evaluator::input(int64_t rows) const {
  return {model_input_shape(model_, rows), DType::f32};
}

double Evaluator::accuracy() {
  Batcher batches(data_, false, 0);
  Backend& be = session_.backend();
  int64_t correct = 0, first = 0;
  while (first < data_.size()) {
    const int64_t rows = std::min(batch_, data_.size() - first);
    const TensorMeta in = input(rows);
    Tensor labels(labels_.storage(), 0, {rows}, DType::i32);
    batches.copy(be, first, session_.input({&in, 1}, 0), labels);
    const Tensor& logits = to_host(be, session_.run({&in, 1}), host_logits_);
    correct += count_correct(logits, labels, data_.classes);
    first += rows;
  }
  return double(correct) / double(data_.size());
}

size_t Evaluator::memory_bytes() const {
  return session_.memory_bytes();
}

}  // namespace frugal
