// Trainer: the training loop as a library. One training executor (planned or baseline
// memory) over a recorded model, SGD with a learning-rate schedule, seeded shuffling and
// augmentation, test accuracy through an Evaluator, and checkpoints that resume bit for bit.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/communicator.h"
#include "data/batcher.h"
#include "data/idx.h"
#include "models/registry.h"
#include "run/executor.h"

namespace frugal {

enum class Schedule { constant, step, cosine };
const char* schedule_name(Schedule s);
Schedule parse_schedule(const std::string& s);  // "constant", "step", "cosine"

struct TrainOptions {
  std::string model = "small-cnn";
  int epochs = 1;
  int64_t batch = 64;
  double lr = 0.05, momentum = 0.9, weight_decay = 5e-4;
  // SGD with momentum, or AdamW (its betas and eps below; weight_decay then decoupled).
  OptimizerKind optimizer = OptimizerKind::sgd;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  Schedule schedule = Schedule::cosine;
  int64_t warmup = 50;   // steps of linear warm-up: lr (t+1)/warmup at step t
  bool augment = false;  // random crop (pad 4) and horizontal flip of training images
  uint64_t seed = 1;     // parameters, shuffling, augmentation and dropout
  int threads = 0;       // CPU threads; 0: all cores
  MemoryMode memory = MemoryMode::planned;
  std::string data = kFashionMnistDir;  // a Fashion-MNIST or CIFAR-10 directory, or "synthetic"
  int64_t steps = 0;                    // training steps per epoch; 0: every full batch
  int64_t eval_batch = 100;             // test batch; a remainder gets its own executor
  // CIFAR ResNets: runs of blocks to checkpoint (ModelConfig::checkpoint_runs), e.g. the
  // schedule fit_step_budget chose for a memory budget; empty: every activation stored.
  std::vector<BlockRun> checkpoint_runs = {};
  // RevNets: the coupling's fixed-point range bits (ModelConfig::fixed_point_range); 0: memcnn's
  // floating-point coupling.
  int fixed_point_range = ModelConfig{}.fixed_point_range;
  // ExecutorOptions::check_finite: every step looks for NaN and inf after each op and names the
  // first op that wrote one (slower; for finding where a run goes wrong).
  bool check_finite = false;
  // Where the step runs: "cpu", "sim" (the simulated device, core/sim/) or "cuda" (where built).
  std::string device = "cpu";
  // The side of the model's square input images (0: the model's own); image folders decode to
  // it, and the model is recorded at it.
  int64_t image_size = 0;
  // The most scratch one convolution pass may take for a faster algorithm (cuDNN's workspace;
  // ExecutorOptions::workspace_limit).
  size_t workspace_limit = std::numeric_limits<size_t>::max();
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
  // Planned memory: op outputs rebuilt in backward (ExecutorOptions::recompute), same bits.
  Recompute recompute = Recompute::none;
  // Batch norms read their output in backward where it is kept anyway
  // (ModelConfig::batch_norm_from_output).
  bool bn_from_output = false;
  // Layer norms likewise (ModelConfig::layer_norm_from_output).
  bool ln_from_output = false;
  // Planned memory: ReLU outputs packed between forward and backward (ExecutorOptions::pack).
  bool pack = false;
  // Planned memory: rebuild op outputs until the arena fits these bytes (ExecutorOptions::
  // rebuild_budget; the command sets it from --memory-budget on networks without a chain).
  size_t rebuild_budget = 0;
  // Data-parallel training over this communicator's ranks (null: one process). Every rank
  // builds the same Trainer; rank r takes samples chunk_of(batch, ranks, r) of each global
  // batch of `batch` (the same shuffled order everywhere; an uneven split gives some ranks
  // one sample more, the last among them), and gradients are averaged over the global batch
  // (each rank's weighted by its share).
  // Loss and accuracy are the global batch's. BatchNorm's statistics are each rank's own.
  Communicator* comm = nullptr;
  // Collectives of host memory (the start-up check, the loss) where `comm` reads device
  // memory (NCCL): the MPI communicator that bootstrapped it. Null: comm.
  Communicator* host_comm = nullptr;
  // Data parallel: bytes per gradient bucket (ExecutorOptions::grad_bucket_bytes; 0: auto).
  size_t bucket_bytes = 0;
  // Data parallel: ZeRO stage 0, 1 (optimizer state sharded) or 2 (and gradients
  // reduce-scattered); ExecutorOptions::zero. Checkpoints hold the whole state at any stage.
  int zero = 0;
  // Data parallel: batch norm's statistics over the global batch (ExecutorOptions::
  // sync_bn_comm) instead of each rank's slice, inside checkpointed and reversible blocks
  // too.
  bool sync_bn = false;
};

// The most CPU threads a run may ask for; more is surely a typo (the command caps requests
// above the machine's cores with a warning).
inline constexpr int kMaxThreads = 4096;

// Throws, naming the option and its range, unless every number in `o` is valid: lr finite and
// above 0, momentum finite in [0, 1), weight decay finite and >= 0, epochs, batch and eval batch
// >= 1, steps and warm-up >= 0, threads in 0..kMaxThreads. The Trainer checks this first.
void check_train_options(const TrainOptions& o);

// The learning rate of step t (0-based) of T: linear warm-up over the first `warmup` steps,
// then constant, step (x0.1 once half and again once three quarters of the T steps are done)
// or cosine (per step, from lr down to 0 at step T).
double learning_rate(const TrainOptions& o, int64_t t, int64_t T);
// The optimizer of `o` (SGD or AdamW, their hyperparameters) at learning rate lr, for the
// step-th update (AdamW's bias correction; counted from 1).
OptimizerConfig optimizer_config(const TrainOptions& o, double lr, int64_t step);

struct StepResult {
  float loss = 0;
  int64_t correct = 0;  // training samples of the batch classified correctly
};

// Running sums of the epoch in progress (kept in checkpoints, so a resumed epoch reports
// the same averages).
struct EpochTotals {
  double loss_sum = 0;
  int64_t correct = 0, steps = 0;
};

class Evaluator;

class Trainer {
 public:
  // Records the model for `train`'s samples; `train` and `test` must outlive the trainer.
  Trainer(const TrainOptions& options, const Dataset& train, const Dataset& test);
  ~Trainer();

  // One SGD step on the next batch; advances global_step(). Starts a new epoch's order and
  // totals when the previous epoch is complete. Throws, before the SGD update, when the loss is
  // NaN or inf (the parameters keep the last finite step's values).
  StepResult step();
  // Test-set accuracy with the current parameters (inference executors, created on first use).
  double evaluate();

  // Writes weights, running statistics, momentum buffers and counters to a safetensors file.
  // Data parallel: every rank calls it (ZeRO's state chunks are gathered); rank 0 writes.
  void save(const std::string& path);
  // Restores what save() wrote; the next step() continues exactly where the saved run stopped.
  void resume(const std::string& path);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t total_steps() const { return steps_per_epoch_ * options_.epochs; }
  int64_t global_step() const { return step_; }
  int epoch() const { return static_cast<int>(step_ / steps_per_epoch_); }  // of the next step
  int64_t step_in_epoch() const { return step_ % steps_per_epoch_; }
  bool done() const { return step_ >= total_steps(); }
  double lr() const { return learning_rate(options_, step_, total_steps()); }
  const EpochTotals& totals() const { return totals_; }

  const TrainOptions& options() const { return options_; }
  const ModelSpec& model() const { return model_; }
  ParamStore& params() { return params_; }
  Backend& backend() const { return backend_; }
  const Executor& executor() const { return *ex_; }
  int rank() const { return options_.comm ? options_.comm->rank() : 0; }
  int ranks() const { return options_.comm ? options_.comm->size() : 1; }
  int64_t local_batch() const { return mine_.size(); }
  size_t eval_memory_bytes() const;
  // The step's norms that read their output in backward (ModelStep::batch_norms_from_output,
  // layer_norms_from_output).
  int batch_norms_from_output() const { return batch_norms_from_output_; }
  int layer_norms_from_output() const { return layer_norms_from_output_; }
  // Image folders: seconds the steps waited for decoded batches, and files replaced.
  double data_wait_seconds() const { return batches_.data_wait_seconds(); }
  int64_t skipped_files() const { return batches_.skipped_files(); }
  size_t data_bytes() const { return batches_.data_bytes(); }  // batches decoded ahead

 private:
  void check_same_setup();
  Communicator& host_comm() const {
    return options_.host_comm ? *options_.host_comm : *options_.comm;
  }

  TrainOptions options_;
  ModelSpec model_;  // at options.image_size
  const Dataset& train_;
  const Dataset& test_;
  Backend& backend_;
  ParamStore params_;
  Tape tape_;
  Value images_, labels_, logits_, loss_;
  int batch_norms_from_output_ = 0, layer_norms_from_output_ = 0;
  std::unique_ptr<Executor> ex_;
  std::unique_ptr<Evaluator> eval_;
  Batcher batches_;
  int batches_epoch_ = -1;  // the epoch whose order batches_ holds
  int64_t steps_per_epoch_ = 0, step_ = 0;
  EpochTotals totals_;
  Tensor host_loss_, host_logits_;  // host copies where the backend's device is not the host
  ChunkRange mine_;                 // this rank's samples of each global batch
  Tensor totals_sum_;               // data parallel: (loss share, correct) summed over ranks
};

}  // namespace frugal
