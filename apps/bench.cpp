// `frugal bench`: times steps of a bundled network on random data and reports its memory as
// the peers measure theirs: the allocator's peak bytes (parameters, momentum, arena, inputs)
// and the process peak RSS. bench/peers/ runs it beside PyTorch. (Just past 400 lines: the
// command, its several-rank relaunch and its JSON output read together.)
#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/options.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/rng.h"
#include "cuda/cuda_entry.h"
#include "data/batcher.h"
#include "data/image_folder.h"
#include "dist/communicators.h"
#include "models/onnx.h"
#include "models/registry.h"
#include "models/step.h"
#include "recompute/budget.h"
#include "report/profile.h"
#include "run/executor.h"
#include "train/step_budget.h"
#include "train/train_data.h"
#include "train/trainer.h"

namespace frugal {
namespace {

struct BenchOptions : ModelChoice {
  int steps = 5;  // the first is a warm-up
  MemoryMode memory = MemoryMode::planned;
  std::vector<BlockRun> runs;  // the budget's checkpoint runs
  int threads = 0;             // 0: all cores
  bool im2col = false;         // every conv through im2col + GEMM, no direct kernels
  bool json = false;
  // An image folder to read batches from (training: random resized crops), instead of random
  // images: the steps then include waiting for the decode workers.
  std::string data;
  FolderOptions folder;      // image_size, workers
  bool decode_only = false;  // with data: time the decode pipeline alone, no network
  int ranks = 0;             // > 1 outside mpirun: run again under mpirun with this many
  int zero = 0;              // several ranks: ZeRO stage (ExecutorOptions::zero)
  bool sync_bn = false;      // several ranks: synchronized batch norm
  bool profile = false;      // time each op's passes (the measured steps)
  int profile_top = 10;      // with profile: how many of the slowest ops to list
};

struct BenchResult {
  std::vector<double> step_s;  // measured steps (after the warm-up)
  double wait_s = 0;           // image folders: of the measured steps, waiting for batches
  int workers = 0;
  double median_s = 0;
  size_t params = 0, optimizer_state = 0, inputs = 0, arena = 0, executor = 0;
  size_t packed = 0;                // --pack: the packed outputs' memory after the steps
  int batch_norms_from_output = 0;  // --bn-from-output: how many switched
  int layer_norms_from_output = 0;  // --ln-from-output: how many switched
  size_t allocator_peak = 0;        // over the measured steps
  size_t rss_start = 0, rss_peak = 0;
  // Several ranks (mpirun): this rank's samples of each batch, and per measured step the
  // seconds of backward and of those spent waiting for gradient reductions.
  int ranks = 1;
  int64_t local_batch = 0;
  std::vector<double> backward_s, comm_wait_s;
  // CUDA: the driver's used device memory before the model was recorded and at its peak
  // reading (after each step), cuDNN's and cuBLAS's own allocations and the context included.
  bool driver = false;
  size_t driver_start = 0, driver_peak = 0;
  std::optional<Profile> profile;  // with --profile
};

// The process's peak resident set so far (ru_maxrss is in KiB on Linux).
size_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<size_t>(u.ru_maxrss) * 1024;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Standard normal images and uniform labels in [0, classes).
void fill_random(Tensor& x, Tensor* labels, int64_t classes) {
  Rng rng(7);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.dtype() == DType::f32)
      x.data<float>()[i] = static_cast<float>(rng.normal());
    else
      x.data<double>()[i] = rng.normal();
  }
  if (labels == nullptr) return;
  for (int64_t i = 0; i < labels->numel(); ++i)
    labels->data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
}

BenchResult run_bench(const BenchOptions& o, Communicator* comm) {
  const ModelSpec spec = model_at_size(find_model(o.model), o.folder.image_size);
  FRUGAL_CHECK(o.batch > 0 && o.steps > 0, "bench: batch and steps must be positive, got batch ",
               o.batch, ", steps ", o.steps);
  set_cpu_threads(capped_threads(o.threads));
  set_cpu_direct_conv(!o.im2col);
  Backend& be = backend_named(o.device);
  Allocator& alloc = be.allocator();
  BenchResult r;
  r.ranks = comm ? comm->size() : 1;
  r.local_batch = chunk_of(o.batch, r.ranks, comm ? comm->rank() : 0).size();
  FRUGAL_CHECK(r.local_batch >= 1, "bench: a batch of ", o.batch, " over ", r.ranks,
               " ranks leaves a rank no sample");
  FRUGAL_CHECK(!comm || (o.mode == Mode::training && o.data.empty() && o.device == "cpu"),
               "bench on several ranks: training steps on random data on the CPU only");
  r.driver = be.device().kind == DeviceKind::cuda;
  if (r.driver) r.driver_start = r.driver_peak = cuda_memory_info().used();
  r.rss_start = peak_rss_bytes();
  ParamStore params(1, be);
  Tape tape(params, o.dtype);
  const ModelStep step = record_model_step(tape, spec, r.local_batch, o.mode,
                                           {.dropout = o.dropout,
                                            .batch_norm = o.batch_norm,
                                            .segments = o.segments,
                                            .checkpoint_runs = o.runs,
                                            .checkpoint_rebuilds = o.recompute,
                                            .batch_norm_from_output = o.bn_from_output,
                                            .layer_norm_from_output = o.ln_from_output});
  r.batch_norms_from_output = step.batch_norms_from_output;
  r.layer_norms_from_output = step.layer_norms_from_output;
  load_exported_weights(params, o.model);  // an ONNX model's, as PyTorch runs them
  const Value images = step.images, labels = step.labels, out = step.out();
  const bool training = o.mode == Mode::training;
  std::optional<OptimizerConfig> optimizer;
  if (training) optimizer = OptimizerConfig{.lr = 0.01, .momentum = 0.9, .kind = o.optimizer};
  Executor ex(tape, be,
              {.mode = o.mode,
               .memory = o.memory,
               .keep = {out},
               .optimizer = optimizer,
               .workspace_limit = o.workspace_limit,
               .workspace_growth = o.workspace_growth,
               .recompute = o.recompute,
               .rebuild_budget = o.rebuild_budget,
               .pack = o.pack,
               .comm = comm,
               .zero = comm ? o.zero : 0,
               .sync_bn_comm = o.sync_bn ? comm : nullptr,
               .profile = o.profile});
  ex.set_grad_scale(double(r.local_batch) / double(o.batch));
  if (o.rebuild_budget > 0)
    std::fprintf(stderr, "memory budget %s: op outputs rebuilt in backward, planned arena %s\n",
                 bytes_text(o.rebuild_budget).c_str(), bytes_text(ex.arena_bytes()).c_str());
  // One label per image, or per pixel for segmentation models (labels (N, H, W)). On the CPU
  // the executor's own input tensors take the random batch, so the allocator holds it once,
  // as PyTorch holds its input tensor once; a device gets it through a host copy. In
  // inference, y takes the labels an image folder's batches carry.
  Tensor y = training ? Tensor() : Tensor::empty(Shape{r.local_batch}, DType::i32);
  if (be.device().kind == DeviceKind::cpu) {
    fill_random(ex.input(images), training ? &ex.input(labels) : nullptr, spec.classes);
  } else {
    Tensor x = Tensor::empty(ex.input(images).shape(), o.dtype);
    Tensor l = training ? Tensor::empty(labels.shape(), DType::i32) : Tensor();
    fill_random(x, training ? &l : nullptr, spec.classes);
    ex.set_input(images, x);
    if (training) ex.set_input(labels, l);
  }
  r.inputs = ex.input(images).bytes() + (training ? ex.input(labels).bytes() : 0);
  {  // The network's other inputs (an ONNX model's timestep or second image): random too,
     // their host copies freed before the steps so the allocator holds them once.
    const std::vector<Tensor> extra = random_extra_inputs(spec, step.extra_inputs, 11);
    for (size_t i = 0; i < extra.size(); ++i) {
      ex.set_input(step.extra_inputs[i], extra[i]);
      r.inputs += extra[i].bytes();
    }
  }
  std::optional<Dataset> folder;
  std::unique_ptr<Batcher> batches;
  if (!o.data.empty()) {
    FRUGAL_CHECK(
        spec.label_shape.rank() == 0, "bench --data: ", spec.name,
        " is a segmentation model; it runs on random images and labels (leave out --data)");
    FRUGAL_CHECK(is_image_folder(o.data), "bench --data: ", o.data,
                 " is not an image folder (train/<class>/, val/<class>/)");
    folder = load_data(o.data, spec, training, {}, 1, o.folder);
    FRUGAL_CHECK(folder->size() >= o.batch * o.steps, "bench --data: ", folder->size(),
                 " images, fewer than ", o.steps, " steps of ", o.batch);
    batches = std::make_unique<Batcher>(*folder, BatcherOptions{.shuffle = true, .seed = 1});
    batches->start_epoch(0);
    r.workers = folder->source->transform.workers > 0
                    ? folder->source->transform.workers
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }

  for (int s = 0; s < o.steps; ++s) {
    // Step 0 warms up (and creates the momentum); with one step it is also the measured one.
    if (s == 1 || o.steps == 1) alloc.reset_peaks();
    if (s == 1) ex.reset_op_times();  // the profile leaves the warm-up out
    const auto start = std::chrono::steady_clock::now();
    const double waited_before = batches ? batches->data_wait_seconds() : 0.0;
    if (batches) batches->copy(be, s * o.batch, ex.input(images), training ? ex.input(labels) : y);
    if (batches && s > 0) r.wait_s += batches->data_wait_seconds() - waited_before;
    ex.forward();
    const auto backward_start = std::chrono::steady_clock::now();
    const double waited = ex.comm_wait_seconds();
    if (training) ex.backward(out);
    be.synchronize();
    const auto end = std::chrono::steady_clock::now();
    const double t = std::chrono::duration<double>(end - start).count();
    if (s > 0 || o.steps == 1) {
      r.step_s.push_back(t);
      r.backward_s.push_back(std::chrono::duration<double>(end - backward_start).count());
      r.comm_wait_s.push_back(ex.comm_wait_seconds() - waited);
    }
    if (r.driver) r.driver_peak = std::max(r.driver_peak, cuda_memory_info().used());
  }
  r.median_s = median(r.step_s);
  r.allocator_peak = alloc.peak_bytes();
  r.params = alloc.stats(Role::param).current;
  r.optimizer_state = alloc.stats(Role::optimizer_state).current;
  r.arena = ex.arena_bytes();
  r.executor = ex.memory_bytes();
  r.packed = ex.packed_bytes();
  r.rss_peak = peak_rss_bytes();
  if (o.profile) r.profile = profile_of(tape, ex, o.profile_top);
  return r;
}

// The decode pipeline alone over `steps` batches of the folder: images per second.
void run_decode_only(const BenchOptions& o) {
  FRUGAL_CHECK(is_image_folder(o.data), "bench --decode-only: --data ", o.data,
               " is not an image folder");
  const ModelSpec spec = model_at_size(find_model(o.model), o.folder.image_size);
  const bool training = o.mode == Mode::training;
  const Dataset d = load_data(o.data, spec, training, {}, 1, o.folder);
  FRUGAL_CHECK(d.size() >= o.batch * o.steps, "bench --decode-only: ", d.size(),
               " images, fewer than ", o.steps, " batches of ", o.batch);
  Batcher b(d, BatcherOptions{.shuffle = true, .seed = 1});
  b.start_epoch(0);
  Tensor x = Tensor::empty({o.batch, 3, spec.input[1], spec.input[2]}, DType::f32);
  Tensor y = Tensor::empty({o.batch}, DType::i32);
  b.copy(0, x, y);  // warm-up: threads started, files cached
  const auto start = std::chrono::steady_clock::now();
  for (int s = 1; s < o.steps; ++s) b.copy(s * o.batch, x, y);
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double per_s = static_cast<double>((o.steps - 1) * o.batch) / t;
  const int workers = d.source->transform.workers > 0
                          ? d.source->transform.workers
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf(
      "decode only: %s, %s, %lldx%lld, %d worker(s): %.0f images/s (%.0f per worker) over %d "
      "batches of %lld\n",
      o.data.c_str(), training ? "training crops" : "evaluation crops",
      static_cast<long long>(spec.input[1]), static_cast<long long>(spec.input[2]), workers, per_s,
      per_s / workers, o.steps - 1, static_cast<long long>(o.batch));
}

void print_result(const BenchOptions& o, const BenchResult& r) {
  if (o.json) {
    nlohmann::ordered_json j{{"framework", "frugal"},
                             {"model", o.model},
                             {"batch", o.batch},
                             {"mode", mode_name(o.mode)},
                             {"memory", memory_mode_name(o.memory)},
                             {"dtype", dtype_name(o.dtype)},
                             {"segments", o.segments},
                             {"memory_budget_bytes", o.memory_budget},
                             {"checkpoint_runs", runs_text(o.runs)},
                             {"device", o.device},
                             {"threads", cpu_backend().threads()},
                             {"conv", cpu_direct_conv() ? "direct where it applies" : "im2col"},
                             {"steps", o.steps},
                             {"step_s", r.step_s},
                             {"median_s", r.median_s},
                             {"allocator_peak_bytes", r.allocator_peak},
                             {"param_bytes", r.params},
                             {"optimizer_state_bytes", r.optimizer_state},
                             {"input_bytes", r.inputs},
                             {"arena_bytes", r.arena},
                             {"executor_bytes", r.executor},
                             {"pack", o.pack},
                             {"packed_bytes", r.packed},
                             {"bn_from_output", o.bn_from_output},
                             {"batch_norms_from_output", r.batch_norms_from_output},
                             {"ln_from_output", o.ln_from_output},
                             {"layer_norms_from_output", r.layer_norms_from_output},
                             {"rss_start_bytes", r.rss_start},
                             {"rss_peak_bytes", r.rss_peak},
                             {"ranks", r.ranks},
                             {"zero", o.zero},
                             {"images_per_s", double(o.batch) / r.median_s}};
    if (o.mode == Mode::training) j["backward_s"] = r.backward_s;
    if (r.ranks > 1) {
      j["local_batch"] = r.local_batch;
      j["comm_wait_s"] = r.comm_wait_s;
    }
    if (!o.data.empty()) {
      j["data"] = o.data;
      j["workers"] = r.workers;
      j["data_wait_s"] = r.wait_s;
    }
    if (r.driver) {
      j["driver_start_bytes"] = r.driver_start;
      j["driver_peak_bytes"] = r.driver_peak;
    }
    if (r.profile) j["profile"] = profile_json(*r.profile);
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  const std::string where =
      o.device == "cpu" ? std::to_string(cpu_backend().threads()) + " threads" : o.device;
  std::printf("%s, batch %lld, %s, %s memory, %s, %s%s\n", o.model.c_str(),
              static_cast<long long>(o.batch), mode_name(o.mode), memory_mode_name(o.memory),
              dtype_name(o.dtype), where.c_str(),
              cpu_direct_conv() ? "" : ", convolutions through im2col");
  std::printf("step time: median %.4f s over %zu step(s)%s\n", r.median_s, r.step_s.size(),
              o.steps == 1 ? " (the only step, warm-up included)" : " after one warm-up");
  if (r.ranks > 1) {
    double backward = 0, waited = 0;
    for (size_t i = 0; i < r.backward_s.size(); ++i) {
      backward += r.backward_s[i];
      waited += r.comm_wait_s[i];
    }
    std::printf(
        "%d ranks, %lld samples each on rank 0: %.0f images/s; backward waited %.1f%% of its "
        "time for gradient reductions on rank 0\n",
        r.ranks, static_cast<long long>(r.local_batch), double(o.batch) / r.median_s,
        backward > 0 ? 100.0 * waited / backward : 0.0);
  }
  char packed_text[64] = "";
  if (o.pack)
    std::snprintf(packed_text, sizeof packed_text, " + packed outputs %.2f", to_mib(r.packed));
  std::printf(
      "allocator peak %.2f MiB: params %.2f + optimizer state %.2f + executor %.2f (arena %.2f "
      "+ inputs %.2f%s)\n",
      to_mib(r.allocator_peak), to_mib(r.params), to_mib(r.optimizer_state), to_mib(r.executor),
      to_mib(r.arena), to_mib(r.inputs), packed_text);
  std::printf("process peak RSS %.2f MiB (%.2f MiB before the model was recorded)\n",
              to_mib(r.rss_peak), to_mib(r.rss_start));
  print_norms_from_output(o.bn_from_output ? r.batch_norms_from_output : -1,
                          o.ln_from_output ? r.layer_norms_from_output : -1);
  if (!o.data.empty()) {
    double total = 0;
    for (double t : r.step_s) total += t;
    std::printf(
        "data: %s, %d decode worker(s): the measured steps waited %.3f s for batches, %.1f%% of "
        "their time\n",
        o.data.c_str(), r.workers, r.wait_s, total > 0 ? 100.0 * r.wait_s / total : 0.0);
  }
  if (r.driver)
    std::printf(
        "device memory in use (driver, cudaMemGetInfo): peak %.2f MiB, %.2f MiB above the %.2f "
        "MiB before the model was recorded\n",
        to_mib(r.driver_peak), to_mib(r.driver_peak - r.driver_start), to_mib(r.driver_start));
  if (r.profile) std::printf("%s", profile_text(*r.profile).c_str());
}

}  // namespace

Action add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto memory = std::make_shared<std::string>("planned");
  CLI::App* c = app.add_subcommand(
      "bench", "Time steps of a bundled network on random data; peak allocator bytes and RSS");
  add_model_options(c, o,
                    {.mode_help = "training (an optimizer step fused into backward) or inference",
                     .segments_help = "CIFAR ResNets: checkpoint the blocks in this many "
                                      "segments, as PyTorch's checkpoint_sequential (0: none)",
                     .budget_help = "Training: the planned arena fits this many bytes (K, M, G: "
                                    "powers of 1024): the CIFAR ResNets checkpoint the runs of "
                                    "blocks with the least recompute; other networks rebuild op "
                                    "outputs in backward (convolutions where nothing cheaper "
                                    "fits)"});
  c->add_option("--steps", o->steps, "Steps to run; the first is a warm-up")
      ->check(whole_number(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  c->add_option("--memory", *memory, "baseline or planned")
      ->check(CLI::IsMember({"baseline", "planned"}))
      ->capture_default_str();
  c->add_option("--threads", o->threads, "CPU threads (0: all cores; more than the cores: capped)")
      ->check(whole_number(0, kMaxThreads))
      ->capture_default_str();
  c->add_flag("--im2col", o->im2col,
              "Every convolution through im2col + GEMM, none through the direct f32 kernels "
              "(to compare the two)");
  c->add_flag("--json", o->json, "Print one JSON object (seconds and bytes)");
  c->add_option("--data", o->data,
                "An image folder to read batches from, decoded by worker threads ahead of the "
                "step (default: random images)");
  c->add_option("--image-size", o->folder.image_size,
                "ImageNet-size networks: the side of the square input (0: the network's)")
      ->check(whole_number(0, 4096));
  c->add_option("--workers", o->folder.workers, "Image folders: decode threads (0: the cores)")
      ->check(whole_number(0, 1024));
  c->add_option("--ranks", o->ranks,
                "Run data parallel on this many ranks of this machine: the same command again "
                "under mpirun --oversubscribe -np N (inside mpirun, the ranks are mpirun's)")
      ->check(whole_number(1, 4096));
  c->add_option("--zero", o->zero,
                "Under mpirun: ZeRO stage (1: optimizer state sharded over the ranks; 2: and "
                "gradients reduce-scattered)")
      ->check(CLI::Range(0, 2));
  c->add_flag("--sync-bn", o->sync_bn, "Under mpirun: batch norm statistics over every rank");
  c->add_flag("--profile", o->profile,
              "Time each op's passes over the measured steps: ms per step by op kind and the "
              "slowest ops (a device is synchronized after each pass)");
  c->add_option("--profile-top", o->profile_top, "With --profile: the slowest ops listed")
      ->check(whole_number(0, 1000000));
  c->add_flag("--decode-only", o->decode_only,
              "With --data: time the decode pipeline alone (images per second), no network");
  return [o, memory] {
    o->memory = *memory == "baseline" ? MemoryMode::baseline : MemoryMode::planned;
    FRUGAL_CHECK(o->recompute == Recompute::none ||
                     (o->mode == Mode::training && o->memory == MemoryMode::planned),
                 "bench --recompute ", recompute_name(o->recompute),
                 ": rebuilds activations for backward in planned memory; use --mode training "
                 "--memory planned");
    FRUGAL_CHECK(!o->pack || (o->mode == Mode::training && o->memory == MemoryMode::planned),
                 "bench --pack: keeps ReLU outputs packed for backward in planned memory; use "
                 "--mode training --memory planned");
    check_from_output_flags(*o, "bench");
    if (o->memory_budget > 0) {
      FRUGAL_CHECK(o->mode == Mode::training && o->memory == MemoryMode::planned,
                   "bench --memory-budget: bounds the planned arena of a training step; use "
                   "--mode training --memory planned");
    }
    if (o->memory_budget > 0 && find_model(o->model).chain_blocks == 0) {
      // No chain of blocks to checkpoint: op outputs rebuilt until the arena fits.
      o->rebuild_budget = o->memory_budget;
    } else if (o->memory_budget > 0) {
      TrainingStep step{.model = o->model, .batch = o->batch, .dtype = o->dtype};
      step.config = {.dropout = o->dropout,
                     .batch_norm = o->batch_norm,
                     .checkpoint_rebuilds = o->recompute,
                     .batch_norm_from_output = o->bn_from_output,
                     .layer_norm_from_output = o->ln_from_output};
      step.recompute = o->recompute;
      step.pack = o->pack;
      step.backend = &backend_named(o->device);
      step.workspace_limit = o->workspace_limit;
      step.checkpoint_levels = o->checkpoint_levels;
      const BudgetSchedule b = fit_step_budget(step, o->memory_budget);
      o->runs = b.schedule.checkpointed;
      std::fprintf(stderr, "memory budget %s: checkpointing blocks %s, planned arena %s\n",
                   bytes_text(o->memory_budget).c_str(), runs_text(o->runs).c_str(),
                   bytes_text(b.planned_peak).c_str());
    }
    if (o->decode_only) return run_decode_only(*o);
    if (o->ranks > 1 && !launched_by_mpi()) relaunch_under_mpirun(o->ranks);
    if (!launched_by_mpi()) return print_result(*o, run_bench(*o, nullptr));
    // mpirun -np N frugal bench: data-parallel steps, batch split over the ranks; rank 0 reports.
    std::unique_ptr<Communicator> comm = mpi_communicator();
    const BenchResult r = run_bench(*o, comm->size() > 1 ? comm.get() : nullptr);
    if (comm->rank() == 0) print_result(*o, r);
  };
}

}  // namespace frugal
