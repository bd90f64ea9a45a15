// Evaluator: an inference tape per batch size over the shared ParamStore, on its backend;
// labels stay on the host for the accuracy count, images are placed by the Batcher as in
// training, and the logits come back through the backend.
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

struct Evaluator::Net {
  Tape tape;
  Value images, logits;
  Tensor labels;       // host memory, for the accuracy count
  Tensor host_logits;  // host copy of the logits where the backend's device is not the host
  std::unique_ptr<Executor> ex;

  Net(ParamStore& params, const ModelSpec& model, int64_t B, ModelConfig config, MemoryMode memory)
      : tape(params) {
    const ModelStep step = record_model_step(tape, model, B, Mode::inference, config);
    images = step.images;
    logits = step.logits;
    labels = Tensor::empty({B}, DType::i32);
    ex = std::make_unique<Executor>(
        tape, params.backend(),
        ExecutorOptions{.mode = Mode::inference, .memory = memory, .keep = {logits}});
  }
};

Evaluator::Evaluator(ParamStore& params, const ModelSpec& model, const Dataset& data, int64_t batch,
                     MemoryMode memory, const ModelConfig& config)
    : data_(data) {
  FRUGAL_CHECK(batch >= 1 && data.size() >= 1, "evaluate: batch ", batch, " over ", data.size(),
               " samples: both must be positive");
  const int64_t B = std::min(batch, data.size()), R = data.size() % B;
  ModelConfig c = config;
  c.classes = data.classes;
  full_ = std::make_unique<Net>(params, model, B, c, memory);
  if (R > 0) rest_ = std::make_unique<Net>(params, model, R, c, memory);
}

Evaluator::~Evaluator() = default;

double Evaluator::accuracy() {
  Batcher batches(data_, false, 0);
  int64_t correct = 0, first = 0;
  auto run = [&](Net& net) {
    Backend& be = net.tape.params().backend();
    batches.copy(be, first, net.ex->input(net.images), net.labels);
    net.ex->forward();
    const Tensor& logits = to_host(be, net.ex->value(net.logits), net.host_logits);
    correct += count_correct(logits, net.labels, data_.classes);
    first += net.labels.shape()[0];
  };
  while (first + full_->labels.shape()[0] <= data_.size()) run(*full_);
  if (rest_ != nullptr) run(*rest_);
  return double(correct) / double(data_.size());
}

size_t Evaluator::memory_bytes() const {
  return full_->ex->memory_bytes() + (rest_ ? rest_->ex->memory_bytes() : 0);
}

}  // namespace frugal
