// `frugal train` and `frugal eval`: command-line front ends over the library's Trainer and
// Evaluator (train/): progress on the terminal, a JSON-lines log per epoch, checkpoints.
#pragma once

#include <cstdint>
#include <string>

#include "train/train_data.h"
#include "train/trainer.h"

namespace frugal {

struct TrainCommand {
  TrainOptions train;
  std::string log;            // JSON lines, one per epoch ("" : none)
  std::string save;           // checkpoint written after every epoch ("" : none)
  std::string resume;         // checkpoint to continue from ("" : start fresh)
  int64_t print_every = 0;    // without a TTY: a line every N steps; 0: ten per epoch
  size_t memory_budget = 0;   // bytes for the step's planned arena: checkpoint runs (0: none)
  int checkpoint_levels = 2;  // 1: the budget's runs do not checkpoint inside themselves
  FolderOptions folder;       // image folders: workers and skip_bad (image_size is in train)
  // Several ranks (started by mpirun): a rank not heard from for this long is dead.
  double comm_timeout = 60;
};

// Runs the training `c` describes, printing to stdout. Throws frugal::Error on bad data,
// options or checkpoint files. Started by mpirun as several ranks, it trains data-parallel:
// rank 0 alone prints, logs, evaluates and writes checkpoints; an error on any rank is printed
// by that rank ("error: rank r: ...") and ends the job.
void run_train(const TrainCommand& c);

struct EvalCommand {
  std::string model = "small-cnn";
  std::string weights;
  std::string data = kFashionMnistDir;
  int64_t batch = 200;
  int threads = 0;
  MemoryMode memory = MemoryMode::planned;
  int fixed_point_range = ModelConfig{}.fixed_point_range;  // RevNets; 0: float coupling
  std::string device = "cpu";                               // cpu, sim or cuda
  FolderOptions folder;  // image folders: image_size, workers, skip_bad
};

// Loads weights into the model and prints its test accuracy.
void run_eval(const EvalCommand& c);

}  // namespace frugal
