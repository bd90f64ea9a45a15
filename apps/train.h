// `frugal train`: trains a bundled model on Fashion-MNIST with one executor (planned or
// baseline memory), then measures test accuracy with inference executors over the same
// parameters, printing loss, accuracy, speed and memory per epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/executor.h"
#include "data/idx.h"

namespace frugal {

struct TrainOptions {
  std::string model = "small-cnn";
  int epochs = 1;
  int64_t batch = 64;
  double lr = 0.02, momentum = 0.9, weight_decay = 5e-4;  // 0.02: best of 0.01-0.05 in one epoch
  uint64_t seed = 1;                                      // parameters, shuffling and dropout
  int threads = 0;                                        // CPU threads; 0: all cores
  MemoryMode memory = MemoryMode::planned;
  std::string data = kFashionMnistDir;
  int64_t steps = 0;         // training steps per epoch; 0: every full batch
  int64_t eval_batch = 200;  // test batch; a remainder gets its own executor
};

// The bundled models `--model` accepts: those taking one grey channel of 28x28 (or padded,
// e.g. 32x32) images, as Fashion-MNIST provides.
std::vector<std::string> model_names();

// Runs the training described by `options`, printing to stdout. Throws frugal::Error on
// bad data or options.
void run_train(const TrainOptions& options);

}  // namespace frugal
