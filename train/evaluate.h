// Test accuracy of a model over a data set with an inference Session over the shared
// parameters: full batches on one executor, the remainder on a second one.
#pragma once

#include <cstdint>
#include <limits>

#include "data/idx.h"
#include "models/registry.h"
#include "run/session.h"

namespace frugal {

// Rows of logits (B,>=K) whose largest entry among the first K (first on ties) is the label;
// log-probabilities work alike, and extra columns (GoogLeNet's auxiliary head) are ignored.
int64_t count_correct(const Tensor& logits, const Tensor& labels, int64_t K);

class Evaluator {
 public:
  // Records the model (built with `config`, the data set's classes) in inference over batches
  // of `batch` (at most the data set's size), run on the store's backend; creates any parameter
  // the store lacks. `data` must outlive the evaluator.
  Evaluator(ParamStore& params, const ModelSpec& model, const Dataset& data, int64_t batch,
            MemoryMode memory, const ModelConfig& config = {},
            size_t workspace_limit = std::numeric_limits<size_t>::max(),
            size_t workspace_growth = 0);
  // Fraction of the data set's samples classified correctly, in [0, 1].
  double accuracy();
  // Bytes the inference executors hold (excluding parameters).
  size_t memory_bytes() const;

 private:
  TensorMeta input(int64_t rows) const;  // the images of a batch of `rows`

  const Dataset& data_;
  ModelSpec model_;
  int64_t batch_;  // rows of a full batch; the remainder runs as one smaller batch
  Session session_;
  Tensor labels_;       // host memory, (batch_), for the accuracy count
  Tensor host_logits_;  // host copy of the logits where the backend's device is not the host
};

}  // namespace frugal
