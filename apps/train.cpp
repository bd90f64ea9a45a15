// `frugal train`: options, then the epoch loop over a Trainer: a progress bar (or plain
// lines), evaluation and a report per epoch, a JSON line per epoch in --log, a checkpoint
// per epoch in --save.
#include "apps/train.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/options.h"
#include "apps/progress.h"
#include "core/backend.h"
#include "cuda/cuda_entry.h"
#include "data/image_folder.h"
#include "data/safetensors.h"
#include "dist/communicators.h"
#include "models/onnx.h"
#include "recompute/budget.h"
#include "train/step_budget.h"
#include "train/train_data.h"

namespace frugal {
namespace {

size_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<size_t>(u.ru_maxrss) * 1024;  // Linux reports KiB
}

size_t param_bytes(ParamStore& params) {
  size_t bytes = 0;
  for (Parameter* p : params.all())
    bytes += p->meta.bytes() + (p->momentum.defined() ? p->meta.bytes() : 0) +
             (p->second_moment.defined() ? p->meta.bytes() : 0);
  return bytes;
}

// "3x32x32"
std::string image_size(const Shape& s) {
  std::string r;
  for (int i = 0; i < s.rank(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

// "3.4%"
std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::vector<std::string> all_model_names() {
  std::vector<std::string> names;
  for (const ModelSpec& m : model_specs()) names.push_back(m.name);
  return names;
}

// Chooses the checkpoint runs for c.memory_budget (training with these classes), prints them,
// and returns the planned arena they give.
size_t fit_budget(const TrainCommand& c, int64_t classes, TrainOptions& o) {
  FRUGAL_CHECK(o.memory == MemoryMode::planned,
               "train --memory-budget: the budget bounds the planned arena; use --memory planned");
  const ModelSpec& spec = find_model(o.model);
  if (spec.chain_blocks == 0) {  // no chain to checkpoint: op outputs rebuilt until it fits
    o.rebuild_budget = c.memory_budget;
    std::printf("memory budget %s: op outputs rebuilt in backward until the arena fits\n",
                bytes_text(c.memory_budget).c_str());
    return 0;
  }
  TrainingStep step{.model = o.model, .batch = o.batch, .keep_logits = true};
  step.config.classes = classes;
  step.config.checkpoint_rebuilds = o.recompute;
  step.recompute = o.recompute;
  step.backend = &backend_named(o.device);
  step.workspace_limit = o.workspace_limit;
  const BudgetSchedule b = fit_step_budget(step, c.memory_budget);
  o.checkpoint_runs = b.schedule.checkpointed;
  std::printf(
      "memory budget %s: checkpointing blocks %s of %d, planned arena %s (%s with "
      "every activation stored)\n",
      bytes_text(c.memory_budget).c_str(), runs_text(o.checkpoint_runs).c_str(), spec.chain_blocks,
      bytes_text(b.planned_peak).c_str(), bytes_text(b.stored_peak).c_str());
  return b.planned_peak;
}

void train_ranks(const TrainCommand& c, Communicator* comm) {
  TrainOptions o = c.train;
  o.comm = comm;
  const bool leader = !comm || comm->rank() == 0;
  // Everything a typo can break is checked before any data is read or step is run.
  check_train_options(o);
  if (!c.save.empty()) check_writable(c.save);
  o.threads = capped_threads(o.threads);
  const ModelSpec& model = find_model(o.model);
  set_cpu_threads(o.threads);
  const SyntheticSizes synthetic{.train = o.batch * (o.steps > 0 ? o.steps : 4),
                                 .test = o.eval_batch};
  FolderOptions folder = c.folder;
  folder.image_size = o.image_size;
  if (is_image_folder(o.data)) o.augment = folder.augment;  // for the summary line
  const TrainData data =
      load_train_data(o.data, model_at_size(model, o.image_size), synthetic, o.seed, folder);
  for (const std::string& why : data.skipped) std::printf("skipped %s\n", why.c_str());
  const size_t budget_arena = c.memory_budget > 0 ? fit_budget(c, data.train.classes, o) : 0;
  FRUGAL_CHECK(!comm || o.device != "sim", "train: several ranks need host memory (MPI) or GPU ",
               "memory (NCCL); the simulated device has neither");
  // On GPUs the gradients go through NCCL, bootstrapped by MPI, which keeps the host-side
  // collectives (the start-up check, the loss) and the heartbeats.
  std::unique_ptr<Communicator> nccl;
  if (comm && o.device == "cuda") {
    nccl = nccl_communicator(*comm);
    o.host_comm = comm;
    o.comm = nccl.get();
  }
  Trainer t(o, data.train, data.test);
  if (o.model.starts_with(kOnnxModelPrefix))  // start from the exported weights
    load_onnx_weights(t.params(), onnx_model(o.model.substr(kOnnxModelPrefix.size())));
  FRUGAL_CHECK(budget_arena == 0 || t.executor().arena_bytes() == budget_arena,
               "train --memory-budget: the executor's arena is ", t.executor().arena_bytes(),
               " bytes where the schedule planned ", budget_arena);
  if (!c.resume.empty()) {
    t.resume(c.resume);
    std::printf("resumed from %s at epoch %d, step %lld of %lld\n", c.resume.c_str(), t.epoch() + 1,
                (long long)t.step_in_epoch(), (long long)t.steps_per_epoch());
  }
  const Shape s = data.train.sample_shape();
  std::printf(
      "frugal train: %s, %zu parameters, %s %lld train / %lld test images %s %s %s, batch %lld, "
      "%lld steps/epoch, %slr %g %s (warm-up %lld), augment %s, memory %s%s, threads %d%s\n",
      model.name.c_str(), t.params().count_elements(true), data.train.name.c_str(),
      (long long)data.train.size(), (long long)data.test.size(), image_size(s).c_str(),
      data.train.resize ? "resized to" : "->", image_size(t.model().input).c_str(),
      (long long)o.batch, (long long)t.steps_per_epoch(),
      o.optimizer == OptimizerKind::adamw ? "adamw " : "", o.lr, schedule_name(o.schedule),
      (long long)o.warmup, o.augment ? "on" : "off", memory_mode_name(o.memory),
      o.device == "cpu" ? "" : (", device " + t.backend().device().str()).c_str(),
      t.backend().threads(),
      comm ? detail::concat(" per rank, ", comm->size(), " ranks (", t.local_batch(),
                            " samples of each batch on rank 0)")
                 .c_str()
           : "");
  std::fflush(stdout);

  std::ofstream log;
  if (!c.log.empty() && leader) {  // several ranks: rank 0 writes the log
    log.open(c.log, c.resume.empty() ? std::ios::trunc : std::ios::app);
    FRUGAL_CHECK(log.good(), c.log, ": cannot open the log for writing");
  }
  const int64_t every =
      c.print_every > 0 ? c.print_every : std::max<int64_t>(1, t.steps_per_epoch() / 10);
  Progress progress(t.steps_per_epoch(), o.batch, t.executor().arena_bytes(), every);
  double wait_before = 0;
  while (!t.done()) {
    const int epoch = t.epoch();
    const int64_t first = t.step_in_epoch();
    progress.start_epoch(epoch, o.epochs, first);
    do {
      const int64_t s = t.step_in_epoch();
      t.step();
      const EpochTotals& e = t.totals();
      progress.update(s, e.loss_sum / double(e.steps),
                      double(e.correct) / double(e.steps * o.batch), t.lr());
    } while (t.step_in_epoch() != 0);
    const double train_s = progress.epoch_seconds();
    const double accuracy = leader ? t.evaluate() : 0.0;  // rank 0 evaluates
    const double total_s = progress.epoch_seconds();
    const EpochTotals& e = t.totals();
    const double loss = e.loss_sum / double(e.steps);
    const double train_acc = double(e.correct) / double(e.steps * o.batch);
    const double images_per_s = double((t.steps_per_epoch() - first) * o.batch) / train_s;
    progress.clear();
    // Image folders: the share of the epoch's training time the steps waited for decoding.
    const double waited = t.data_wait_seconds() - wait_before;
    wait_before = t.data_wait_seconds();
    std::string data_note;
    if (data.train.source)
      data_note = "  data " + mib(t.data_bytes()) + ", wait " + percent(waited / train_s) +
                  (t.skipped_files() ? ", " + std::to_string(t.skipped_files()) + " files skipped"
                                     : std::string());
    std::printf(
        "epoch %d/%d  loss %.4f  train acc %.2f%%  test acc %.2f%%  time %.1f s (eval %.1f s)  "
        "%.0f img/s  memory %s (arena %s), eval %s, peak RSS %s%s\n",
        epoch + 1, o.epochs, loss, 100.0 * train_acc, 100.0 * accuracy, total_s, total_s - train_s,
        images_per_s, mib(t.executor().memory_bytes()).c_str(),
        mib(t.executor().arena_bytes()).c_str(), mib(t.eval_memory_bytes()).c_str(),
        mib(peak_rss_bytes()).c_str(), data_note.c_str());
    std::fflush(stdout);
    if (log.is_open()) {
      nlohmann::ordered_json j = {
          {"epoch", epoch + 1},
          {"global_step", t.global_step()},
          {"train_loss", loss},
          {"train_acc", train_acc},
          {"test_acc", accuracy},
          {"seconds", total_s},
          {"train_seconds", train_s},
          {"images_per_s", images_per_s},
          {"lr_end", learning_rate(o, t.global_step() - 1, t.total_steps())},
          {"memory", memory_mode_name(o.memory)},
          {"train_memory_bytes", t.executor().memory_bytes()},
          {"arena_bytes", t.executor().arena_bytes()},
          {"eval_memory_bytes", t.eval_memory_bytes()},
          {"param_bytes", param_bytes(t.params())},
          {"peak_rss_bytes", peak_rss_bytes()}};
      if (data.train.source) {
        j["data_wait_seconds"] = waited;
        j["files_skipped"] = t.skipped_files();
        j["data_bytes"] = t.data_bytes();
      }
      log << j.dump() << '\n' << std::flush;
    }
    if (!c.save.empty()) t.save(c.save);  // every rank: ZeRO gathers state; rank 0 writes
  }
  if (!c.save.empty()) std::printf("saved %s\n", c.save.c_str());
  if (comm && comm->rank() == 0)
    std::printf("waited for gradient reductions: %.2f s of backward on rank 0\n",
                t.executor().comm_wait_seconds());
}

}  // namespace

void run_train(const TrainCommand& c) {
  if (!launched_by_mpi()) return train_ranks(c, nullptr);
  if (c.train.device == "cuda") {  // one GPU per rank on each host, before CUDA starts
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    cuda_select_device(local ? std::atoi(local) : 0);
  }
  std::unique_ptr<Communicator> comm = mpi_communicator({.timeout_seconds = c.comm_timeout});
  if (comm->rank() != 0)  // rank 0 speaks for the job; the others only report their errors
    FRUGAL_CHECK(std::freopen("/dev/null", "w", stdout) != nullptr,
                 "train: cannot silence stdout on rank ", comm->rank());
  try {
    train_ranks(c, comm->size() > 1 ? comm.get() : nullptr);
  } catch (const std::exception& e) {
    // Said here: the communicator ends the job when it is destroyed during an exception.
    std::fflush(stdout);
    std::fprintf(stderr, "error: rank %d: %s\n", comm->rank(), e.what());
    std::fflush(stderr);
    throw;
  }
}

Action add_train_command(CLI::App& app) {
  auto c = std::make_shared<TrainCommand>();
  auto memory = std::make_shared<std::string>("planned");
  auto schedule = std::make_shared<std::string>("cosine");
  TrainOptions& t = c->train;
  CLI::App* train = app.add_subcommand(
      "train",
      "Train a bundled model (Fashion-MNIST, CIFAR-10 or synthetic data), then measure "
      "test accuracy after every epoch");
  train
      ->add_option_function<std::string>(
          "--onnx", [c](const std::string& file) { c->train.model = kOnnxModelPrefix + file; },
          "Train an ONNX model (torch.onnx.export, opsets 11-17) from its exported weights "
          "instead of a bundled --model")
      ->check(CLI::ExistingFile);
  train->add_option("--model", t.model, "Model to train")
      ->check(CLI::IsMember(all_model_names()))
      ->capture_default_str();
  train
      ->add_option("--data", t.data,
                   "Fashion-MNIST IDX directory, CIFAR-10 binary directory (data_batch_*.bin, "
                   "test_batch.bin), an image folder (train/<class>/ and val/<class>/ of JPEG and "
                   "PNG files), or 'synthetic'")
      ->capture_default_str();
  train->add_option("--epochs", t.epochs, "Passes over the training set")
      ->check(whole_number(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  train->add_option("--batch", t.batch, "Training batch size (the last partial batch is dropped)")
      ->check(whole_number(1))
      ->capture_default_str();
  auto optimizer = std::make_shared<std::string>("sgd");
  train
      ->add_option("--optimizer", *optimizer,
                   "sgd (with momentum, as torch.optim.SGD) or adamw (as torch.optim.AdamW); "
                   "either is fused into backward")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  train->add_option("--lr", t.lr, "Learning rate (peak; finite, above 0)")->capture_default_str();
  train->add_option("--momentum", t.momentum, "SGD momentum (in [0, 1))")->capture_default_str();
  train
      ->add_option("--weight-decay", t.weight_decay,
                   "Weight decay (finite, >= 0): SGD adds it to the gradient (L2), AdamW decays "
                   "the weights by lr x it (decoupled)")
      ->capture_default_str();
  train->add_option("--beta1", t.beta1, "AdamW: the first moment's decay (in [0, 1))")
      ->capture_default_str();
  train->add_option("--beta2", t.beta2, "AdamW: the second moment's decay (in [0, 1))")
      ->capture_default_str();
  train->add_option("--eps", t.eps, "AdamW: added to the denominator (finite, above 0)")
      ->capture_default_str();
  train
      ->add_option("--schedule", *schedule,
                   "Learning rate: constant, step (x0.1 at 50% and 75% of the steps) or cosine "
                   "(per step, to 0)")
      ->check(CLI::IsMember({"constant", "step", "cosine"}))
      ->capture_default_str();
  train->add_option("--warmup", t.warmup, "Steps of linear learning-rate warm-up")
      ->check(whole_number(0))
      ->capture_default_str();
  CLI::Option* augment = train->add_flag(
      "--augment,!--no-augment", t.augment,
      "Random crop (padding 4) and horizontal flip of training images; image folders: random "
      "resized crops and flips, on unless --no-augment");
  train
      ->add_option("--crop-fraction", c->folder.crop_fraction,
                   "Image folders: evaluation's centre crop as a fraction of the shorter side "
                   "(1: the whole side)")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  train->add_option("--seed", t.seed, "Seed for parameters, shuffling, augmentation, dropout")
      ->capture_default_str();
  train->add_option("--memory", *memory, "Memory layout: planned (one arena) or baseline")
      ->check(CLI::IsMember({"planned", "baseline"}))
      ->capture_default_str();
  add_bytes_option(
      train, "--workspace-limit", &c->train.workspace_limit,
      "The most scratch one convolution pass may take for a faster algorithm (cuDNN's "
      "workspace; K, M, G: powers of 1024); default: what the planned arena has room for");
  add_recompute_option(train, &t.recompute);
  train
      ->add_option("--image-size", t.image_size,
                   "Image folders and ImageNet-size networks: the side of the square input "
                   "(e.g. 112 or 64; default: the network's own)")
      ->check(whole_number(0, 4096))
      ->capture_default_str();
  train
      ->add_option("--workers", c->folder.workers,
                   "Image folders: threads decoding batches ahead of the step (0: the cores)")
      ->check(whole_number(0, 1024))
      ->capture_default_str();
  train->add_flag("--resize", c->folder.resize,
                  "IDX, CIFAR-10 and synthetic data: resample each image to fill the input "
                  "(bilinear, as image folders are read) instead of centring it in a frame");
  train->add_flag("--skip-bad", c->folder.skip_bad,
                  "Image folders: leave out badly named files and replace files that fail to "
                  "decode, counting them, instead of stopping with an error");
  add_bytes_option(train, "--memory-budget", &c->memory_budget,
                   "Fit the planned arena into this many bytes (K, M, G: powers of 1024; e.g. "
                   "200M): the CIFAR ResNets checkpoint runs of blocks with the least recompute, "
                   "other networks rebuild op outputs in backward");
  auto float_coupling = std::make_shared<bool>(false);
  train->add_flag("--float-coupling", *float_coupling,
                  "RevNets: memcnn's floating-point coupling, whose rebuilt activations are "
                  "within rounding of the stored ones (default: the exact fixed-point coupling)");
  train->add_flag("--check-finite", t.check_finite,
                  "Look for NaN and inf after every op of every step; stop at the first, naming "
                  "the op, the pass (forward or backward), the tensor and the element (slower)");
  train
      ->add_option("--device", t.device,
                   "Where the step runs: cpu, sim (the simulated device: CPU kernels over memory "
                   "host code cannot touch, for tests) or cuda (where built)")
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}))
      ->capture_default_str();
  train
      ->add_option("--threads", t.threads,
                   "CPU threads (0: all cores; more than the cores: capped)")
      ->check(whole_number(0, kMaxThreads))
      ->capture_default_str();
  train->add_option("--steps", t.steps, "Training steps per epoch (0: the whole training set)")
      ->check(whole_number(0))
      ->capture_default_str();
  train->add_option("--eval-batch", t.eval_batch, "Test batch size")
      ->check(whole_number(1))
      ->capture_default_str();
  train
      ->add_option("--comm-timeout", c->comm_timeout,
                   "Several ranks (mpirun): seconds without a heartbeat after which a rank is "
                   "taken for dead and the job ends with an error naming it")
      ->check(CLI::Range(0.5, 86400.0))
      ->capture_default_str();
  train
      ->add_option("--zero", t.zero,
                   "Several ranks: ZeRO stage. 0: every rank holds all optimizer state; 1: each "
                   "holds and updates its chunk of it, parameters gathered after; 2: and each "
                   "receives only its chunk of the summed gradients (same bits at every stage)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  train->add_flag("--sync-bn", t.sync_bn,
                  "Several ranks: batch norm's statistics over the global batch (sums "
                  "all-reduced in forward and backward) instead of each rank's slice");
  add_bytes_option(train, "--bucket-size", &c->train.bucket_bytes,
                   "Several ranks: bytes of parameter gradients reduced together (K, M, G: "
                   "powers of 1024); default: an eighth of the parameters, 64K to 25M");
  train->add_option("--log", c->log, "Append one JSON line per epoch to this file");
  train->add_option("--save", c->save,
                    "Write a checkpoint (.safetensors) after every epoch; its folder is checked "
                    "to be writable before training starts");
  train->add_option("--resume", c->resume, "Continue from a checkpoint written by --save")
      ->check(CLI::ExistingFile);
  train
      ->add_option("--print-every", c->print_every,
                   "Without a terminal: print a line every N steps (0: ten per epoch)")
      ->check(whole_number(0));

  return [c, memory, schedule, float_coupling, augment, optimizer] {
    // Image folders train with augmentation unless --no-augment says otherwise.
    c->folder.augment = augment->count() == 0 || c->train.augment;
    c->train.memory = *memory == "baseline" ? MemoryMode::baseline : MemoryMode::planned;
    if (*float_coupling) c->train.fixed_point_range = 0;
    c->train.schedule = parse_schedule(*schedule);
    c->train.optimizer = *optimizer == "adamw" ? OptimizerKind::adamw : OptimizerKind::sgd;
    run_train(*c);
  };
}

}  // namespace frugal
