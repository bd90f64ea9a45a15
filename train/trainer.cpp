// Trainer: the step loop, the schedule and checkpoints. A step copies one batch into the
// executor's input tensors, runs forward and backward (SGD applied as each gradient is
// final) and reads back the loss and logits (through the backend: copies to the host on a
// device); nothing is allocated per step.
#include "train/trainer.h"

#include "train/train_data.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>

#include "core/backend.h"
#include "core/error.h"
#include "core/rng.h"
#include "models/step.h"
#include "train/evaluate.h"
#include "train/weights.h"

namespace frugal {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::constant:
      return "constant";
    case Schedule::step:
      return "step";
    case Schedule::cosine:
      return "cosine";
  }
  return "?";
}

Schedule parse_schedule(const std::string& s) {
  for (Schedule k : {Schedule::constant, Schedule::step, Schedule::cosine})
    if (s == schedule_name(k)) return k;
  throw Error("unknown schedule '" + s + "'; valid: constant, step, cosine");
}

void check_train_options(const TrainOptions& o) {
  FRUGAL_CHECK(o.recompute == Recompute::none || o.memory == MemoryMode::planned,
               "train: --recompute ", recompute_name(o.recompute),
               " rebuilds activations in planned memory; use --memory planned");
  FRUGAL_CHECK(!o.pack || o.memory == MemoryMode::planned,
               "train: --pack keeps ReLU outputs packed in planned memory; use --memory planned");
  FRUGAL_CHECK(o.epochs >= 1 && o.batch >= 1 && o.eval_batch >= 1 && o.steps >= 0 && o.warmup >= 0,
               "train: epochs, batch and eval batch must be positive, steps and warm-up not "
               "negative");
  FRUGAL_CHECK(std::isfinite(o.lr) && o.lr > 0, "train: learning rate (--lr) ", o.lr,
               " must be a finite number above 0");
  FRUGAL_CHECK(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1,
               "train: momentum (--momentum) ", o.momentum, " must lie in [0, 1)");
  FRUGAL_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
               "train: weight decay (--weight-decay) ", o.weight_decay,
               " must be a finite number >= 0");
  FRUGAL_CHECK(std::isfinite(o.beta1) && o.beta1 >= 0 && o.beta1 < 1 && std::isfinite(o.beta2) &&
                   o.beta2 >= 0 && o.beta2 < 1,
               "train: AdamW's betas (--beta1 ", o.beta1, ", --beta2 ", o.beta2,
               ") must lie in [0, 1)");
  FRUGAL_CHECK(std::isfinite(o.eps) && o.eps > 0, "train: AdamW's eps (--eps) ", o.eps,
               " must be a finite number above 0");
  FRUGAL_CHECK(o.zero >= 0 && o.zero <= 2, "train: ZeRO stage (--zero) ", o.zero,
               " is not 0, 1 or 2");
  FRUGAL_CHECK(o.threads >= 0 && o.threads <= kMaxThreads, "train: threads (--threads) ", o.threads,
               " must lie in 0..", kMaxThreads, " (0: all cores)");
}

OptimizerConfig optimizer_config(const TrainOptions& o, double lr, int64_t step) {
  return {.lr = lr,
          .momentum = o.momentum,
          .weight_decay = o.weight_decay,
          .kind = o.optimizer,
          .beta1 = o.beta1,
          .beta2 = o.beta2,
          .eps = o.eps,
          .step = step};
}

double learning_rate(const TrainOptions& o, int64_t t, int64_t T) {
  double lr = o.lr;
  if (t < o.warmup) lr *= double(t + 1) / double(o.warmup);
  const double done = T > 0 ? double(t) / double(T) : 0.0;
  switch (o.schedule) {
    case Schedule::constant:
      break;
    case Schedule::step:
      lr *= done >= 0.75 ? 0.01 : done >= 0.5 ? 0.1 : 1.0;
      break;
    case Schedule::cosine:
      lr *= 0.5 * (1.0 + std::cos(std::numbers::pi * done));
      break;
  }
  return lr;
}

namespace {
// Dropout's seed on rank r: rank 0 keeps the run's own (one rank trains as without MPI).
uint64_t rank_seed(uint64_t seed, int rank) {
  return rank == 0 ? seed : random_bits(seed, 0x7a4b, static_cast<uint64_t>(rank));
}
}  // namespace

Trainer::Trainer(const TrainOptions& o, const Dataset& train, const Dataset& test)
    : options_(o),
      model_(model_at_size(find_model(o.model), o.image_size)),
      train_(train),
      test_(test),
      backend_(backend_named(o.device)),
      params_(o.seed, backend_),
      tape_(params_),
      batches_(train,
               BatcherOptions{.shuffle = true,
                              .seed = o.seed,
                              .augment = {.crop_pad = o.augment ? 4 : 0, .flip = o.augment}}) {
  check_train_options(o);
  FRUGAL_CHECK(model_.label_shape.rank() == 0, o.model,
               " is a segmentation model (its output is (N, classes, H, W)); `frugal train` "
               "trains classifiers: train it with `frugal segment --onnx FILE`");
  FRUGAL_CHECK(o.batch <= train.size(), "train: batch ", o.batch, " exceeds the ", train.size(),
               " training images");
  mine_ = chunk_of(o.batch, ranks(), rank());
  FRUGAL_CHECK(mine_.size() >= 1, "train: a global batch of ", o.batch, " over ", ranks(),
               " ranks leaves rank ", rank(), " no sample; use --batch ", ranks(), " or more");
  set_cpu_threads(o.threads);
  check_images_only(model_, "train");
  const ModelStep step = record_model_step(tape_, model_, mine_.size(), Mode::training,
                                           ModelConfig{.classes = train.classes,
                                                       .checkpoint_runs = o.checkpoint_runs,
                                                       .checkpoint_rebuilds = o.recompute,
                                                       .fixed_point_range = o.fixed_point_range,
                                                       .batch_norm_from_output = o.bn_from_output,
                                                       .layer_norm_from_output = o.ln_from_output});
  images_ = step.images;
  labels_ = step.labels;
  logits_ = step.logits;
  loss_ = step.loss;
  batch_norms_from_output_ = step.batch_norms_from_output;
  layer_norms_from_output_ = step.layer_norms_from_output;
  ex_ = std::make_unique<Executor>(tape_, backend_,
                                   ExecutorOptions{.mode = Mode::training,
                                                   .memory = o.memory,
                                                   .seed = rank_seed(o.seed, rank()),
                                                   .keep = {logits_, loss_, labels_},
                                                   .optimizer = optimizer_config(o, o.lr, 1),
                                                   .check_finite = o.check_finite,
                                                   .workspace_limit = o.workspace_limit,
                                                   .workspace_growth = o.workspace_growth,
                                                   .recompute = o.recompute,
                                                   .rebuild_budget = o.rebuild_budget,
                                                   .pack = o.pack,
                                                   .comm = o.comm,
                                                   .grad_bucket_bytes = o.bucket_bytes,
                                                   .zero = o.comm ? o.zero : 0,
                                                   .sync_bn_comm = o.sync_bn ? o.comm : nullptr});
  ex_->set_grad_scale(double(mine_.size()) / double(o.batch));
  if (o.comm) check_same_setup();
  steps_per_epoch_ = train.size() / o.batch;  // the last partial batch is dropped
  if (o.steps > 0) steps_per_epoch_ = std::min(steps_per_epoch_, o.steps);
}

Trainer::~Trainer() = default;

// Data parallel: every rank must train the same model with the same options; a fingerprint
// of both, gathered from every rank, names the ranks whose differ from rank 0's.
void Trainer::check_same_setup() {
  std::string setup = detail::concat(
      options_.model, ' ', options_.batch, ' ', options_.epochs, ' ', options_.steps, ' ',
      options_.lr, ' ', options_.momentum, ' ', options_.weight_decay, ' ',
      optimizer_name(options_.optimizer), ' ', options_.beta1, ' ', options_.beta2, ' ',
      options_.eps, ' ', schedule_name(options_.schedule), ' ', options_.warmup, ' ',
      options_.augment, ' ', options_.seed, ' ', memory_mode_name(options_.memory), ' ',
      recompute_name(options_.recompute), ' ', options_.pack, ' ', options_.bn_from_output, ' ',
      options_.ln_from_output, ' ', options_.bucket_bytes, ' ', options_.zero, ' ', train_.size(),
      ' ', train_.classes, ' ', options_.image_size);
  for (Parameter* p : params_.all()) setup += detail::concat(' ', p->name, p->meta.shape);
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 53 bits kept: exact in a double
  for (unsigned char ch : setup) h = (h ^ ch) * 1099511628211ull;
  Tensor mine = Tensor::empty({1}, DType::f64), all = Tensor::empty({ranks()}, DType::f64);
  mine.data<double>()[0] = static_cast<double>(h >> 11);
  host_comm().all_gather(mine, all).wait();
  std::string differ;
  for (int r = 1; r < ranks(); ++r)
    if (all.data<double>()[r] != all.data<double>()[0]) differ += " " + std::to_string(r);
  FRUGAL_CHECK(differ.empty(), "train: the model or options of rank(s)", differ,
               " differ from rank 0's; every rank must be started with the same command (rank ",
               rank(), ": ", setup.substr(0, 200), ")");
}

StepResult Trainer::step() {
  FRUGAL_CHECK(!done(), "train: all ", total_steps(), " steps are done");
  if (batches_epoch_ != epoch()) {
    batches_.start_epoch(epoch());
    batches_epoch_ = epoch();
  }
  if (step_in_epoch() == 0) totals_ = {};
  ex_->set_optimizer(optimizer_config(options_, lr(), step_ + 1));
  ex_->set_step(static_cast<uint64_t>(step_));
  const Tensor& labels = batches_.copy(backend_, step_in_epoch() * options_.batch + mine_.begin,
                                       ex_->input(images_), ex_->input(labels_));
  ex_->forward();
  StepResult r;
  r.loss = to_host(backend_, ex_->value(loss_), host_loss_).data<float>()[0];
  FRUGAL_CHECK(std::isfinite(r.loss), "train: the loss of step ", step_ + 1, " of ", total_steps(),
               " (epoch ", epoch() + 1, ") is ", std::isnan(r.loss) ? "nan" : "inf",  // loss >= 0
               "; stopped before its SGD update. Lower --lr, look for NaN or inf in the data, or "
               "run with --check-finite to name the op that first wrote one");
  r.correct =
      count_correct(to_host(backend_, ex_->value(logits_), host_logits_), labels, train_.classes);
  ex_->backward(loss_);
  if (options_.comm) {  // the global batch's loss (a mean of the ranks' means) and accuracy
    if (!totals_sum_.defined()) totals_sum_ = Tensor::empty({2}, DType::f64);
    totals_sum_.data<double>()[0] = double(r.loss) * double(mine_.size()) / double(options_.batch);
    totals_sum_.data<double>()[1] = double(r.correct);
    host_comm().allreduce_sum(totals_sum_).wait();
    r.loss = static_cast<float>(totals_sum_.data<double>()[0]);
    r.correct = static_cast<int64_t>(totals_sum_.data<double>()[1]);
  }
  totals_.loss_sum += r.loss;
  totals_.correct += r.correct;
  ++totals_.steps;
  ++step_;
  return r;
}

double Trainer::evaluate() {
  if (!eval_)
    eval_ =
        std::make_unique<Evaluator>(params_, model_, test_, options_.eval_batch, options_.memory,
                                    ModelConfig{.fixed_point_range = options_.fixed_point_range},
                                    options_.workspace_limit, options_.workspace_growth);
  return eval_->accuracy();
}

size_t Trainer::eval_memory_bytes() const {
  return eval_ ? eval_->memory_bytes() : 0;
}

void Trainer::save(const std::string& path) {
  char loss[32];
  std::snprintf(loss, sizeof loss, "%a", totals_.loss_sum);  // hex float: exact
  std::map<std::string, std::string> metadata{{"format", "frugal-checkpoint"},
                                              {"model", model_.name},
                                              {"global_step", std::to_string(step_)},
                                              {"steps_per_epoch", std::to_string(steps_per_epoch_)},
                                              {"batch", std::to_string(options_.batch)},
                                              {"seed", std::to_string(options_.seed)},
                                              {"optimizer", optimizer_name(options_.optimizer)},
                                              {"epoch_loss_sum", loss},
                                              {"epoch_correct", std::to_string(totals_.correct)},
                                              {"epoch_steps", std::to_string(totals_.steps)}};
  if (!train_.class_names.empty())  // for `frugal predict`: the names of the labels
    metadata["classes"] = nlohmann::json(train_.class_names).dump();
  if (options_.image_size > 0) metadata["image_size"] = std::to_string(options_.image_size);
  if (train_.resize) metadata["resize"] = "true";
  ex_->gather_optimizer_state();  // ZeRO: every rank's chunks (a collective)
  if (rank() == 0) save_safetensors(path, weights_tensors(params_, true, std::move(metadata)));
  ex_->release_gathered_state();
}

void Trainer::resume(const std::string& path) {
  const Safetensors file = load_safetensors(path);
  auto get = [&](const char* key) {
    auto it = file.metadata.find(key);
    FRUGAL_CHECK(it != file.metadata.end(), path, ": not a training checkpoint (no '", key,
                 "' in __metadata__); `frugal eval --weights` reads plain weights");
    return it->second;
  };
  // Every field is range-checked before it is used; a bad one is an error naming it.
  auto clip = [](const std::string& s) { return s.size() <= 40 ? s : s.substr(0, 40) + "..."; };
  // A whole number in 0..max; a sign, a fraction or digits beyond int64 are corrupt.
  auto whole = [&](const char* key, int64_t max) {
    const std::string s = get(key);
    int64_t v = -1;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    FRUGAL_CHECK(
        !s.empty() && ec == std::errc() && end == s.data() + s.size() && v >= 0 && v <= max, path,
        ": __metadata__ ", key, " '", clip(s), "' is not a whole number in 0..", max);
    return v;
  };
  if (auto it = file.metadata.find("format"); it != file.metadata.end())
    FRUGAL_CHECK(it->second == "frugal-checkpoint", path, ": __metadata__ format '",
                 clip(it->second), "' is not frugal-checkpoint");
  const int64_t step = whole("global_step", total_steps());
  FRUGAL_CHECK(get("batch") == std::to_string(options_.batch) &&
                   get("steps_per_epoch") == std::to_string(steps_per_epoch_),
               path, ": saved with batch ", clip(get("batch")), " and ",
               clip(get("steps_per_epoch")), " steps per epoch; this run has batch ",
               options_.batch, " and ", steps_per_epoch_,
               " (resume with the same --batch and --steps)");
  // The optimizer's state is its own: an SGD momentum is no AdamW moment. Checkpoints from
  // before AdamW carry no key and are SGD's.
  const auto opt = file.metadata.find("optimizer");
  const std::string saved_optimizer = opt == file.metadata.end() ? "sgd" : opt->second;
  FRUGAL_CHECK(saved_optimizer == optimizer_name(options_.optimizer), path,
               ": saved by optimizer '", clip(saved_optimizer), "'; this run uses ",
               optimizer_name(options_.optimizer), " (resume with the same --optimizer)");
  if (file.metadata.count("seed")) {
    const std::string s = get("seed");
    uint64_t seed = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seed);
    FRUGAL_CHECK(!s.empty() && ec == std::errc() && end == s.data() + s.size(), path,
                 ": __metadata__ seed '", clip(s), "' is not a whole number in 0..2^64-1");
  }
  // The loss sum is a (hex) float: finite and >= 0.
  const std::string loss = get("epoch_loss_sum");
  char* end = nullptr;
  const double loss_sum = std::strtod(loss.c_str(), &end);
  FRUGAL_CHECK(!loss.empty() && *end == '\0' && std::isfinite(loss_sum) && loss_sum >= 0, path,
               ": __metadata__ epoch_loss_sum '", clip(loss), "' is not a finite number >= 0");
  EpochTotals totals{loss_sum, 0, whole("epoch_steps", steps_per_epoch_)};
  totals.correct = whole("epoch_correct", totals.steps * options_.batch);
  const int64_t in_epoch = step % steps_per_epoch_;  // 0 at an epoch's end: totals still full
  FRUGAL_CHECK(totals.steps == in_epoch || (in_epoch == 0 && totals.steps == steps_per_epoch_),
               path, ": __metadata__ epoch_steps ", totals.steps, " does not match global_step ",
               step, " with ", steps_per_epoch_, " steps per epoch");
  load_weights(params_, file, path, model_.name, true);
  step_ = step;
  totals_ = totals;
}

}  // namespace frugal
