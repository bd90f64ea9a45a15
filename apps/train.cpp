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
  step.config.batch_norm_from_output = o.bn_from_output;
  step.config.layer_norm_from_output = o.ln_from_output;
  step.recompute = o.recompute;
  step.pack = o.pack;
  step.backend = &backend_named(o.device);
  step.workspace_limit = o.workspace_limit;
  step.workspace_growth = o.workspace_growth;
  step.checkpoint_levels = c.checkpoint_levels;
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
  check_images_only(model, "train");  // before any data is read
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
  load_exported_weights(t.params(), o.model);  // an ONNX model starts from the file's weights
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
  print_norms_from_output(o.bn_from_output ? t.batch_norms_from_output() : -1,
                          o.ln_from_output ? t.layer_norms_from_output() : -1);
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

}  // namespace frugal
