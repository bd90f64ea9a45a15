// Test accuracy of a model over a data set with inference executors that share the
// parameters: full batches on one executor, the remainder on a second one.
#pragma once

#include <cstdint>
#include <memory>

#include "data/idx.h"
#include "models/registry.h"
#include "run/executor.h"

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
            MemoryMode memory, const ModelConfig& config = {});
  ~Evaluator();
  // Fraction of the data set's samples classified correctly, in [0, 1].
  double accuracy();
  // Bytes the inference executors hold (excluding parameters).
  size_t memory_bytes() const;

 private:
  struct Net;
  const Dataset& data_;
  std::unique_ptr<Net> full_, rest_;
};

}  // namespace frugal
