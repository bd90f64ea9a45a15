// A small network without BatchNorm and a few data-parallel steps of it, shared by the
// one-process bucket tests (test_dist.cpp) and the several-rank MPI tests (dist/): rank r of
// `comm` takes its slice chunk_of(B, ranks, r) of each global batch of B samples.
#pragma once

#include <cstring>
#include <vector>

#include "check/gradcheck.h"
#include "core/communicator.h"
#include "core/cpu/cpu_backend.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "models/registry.h"
#include "models/step.h"
#include "recompute/budget.h"
#include "run/executor.h"
#include "tests/worst.h"

namespace frugal::testing {

struct DistRun {
  std::vector<Tensor> weights, moments;  // every parameter (and its first moment) after the steps
  size_t bucket_count = 0;
  bool views = true;            // every parameter gradient a view into a bucket
  double arena_over_bound = 0;  // planned arena / liveness lower bound
  size_t state_bytes = 0;       // the executor's allocator: optimizer state at the end
  size_t grad_bytes = 0;        // the most parameter-gradient bytes live at once (the plan)
  size_t reported_state = 0;    // what `frugal memory --ranks --zero` reports for this rank
};

inline Tensor rows(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  const int64_t per = s.numel() / s[0];
  s[0] = end - begin;
  Tensor out = Tensor::empty(s, t.dtype());
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + begin * per * dtype_size(t.dtype()),
              out.bytes());
  return out;
}

// `steps` steps on random global batches of `batch` (images like `images`' samples, labels
// below `classes`, seeded from `seed`), this rank's slice `mine` of each, its gradients
// weighted by its share of the batch.
inline void train_steps(Executor& ex, OptimizerConfig opt, ChunkRange mine, int64_t batch,
                        int steps, Value images, Value labels, Value loss, int64_t classes,
                        uint64_t seed) {
  ex.set_grad_scale(double(mine.size()) / double(batch));
  Shape shape = images.shape();
  shape[0] = batch;
  for (int s = 0; s < steps; ++s) {
    opt.step = s + 1;
    ex.set_optimizer(opt);
    const Tensor x = random_tensor(shape, seed + static_cast<uint64_t>(s), -1, 1, images.dtype());
    const Tensor y = random_labels(batch, classes, seed + 100 + static_cast<uint64_t>(s));
    ex.set_input(images, rows(x, mine.begin, mine.end));
    ex.set_input(labels, rows(y, mine.begin, mine.end));
    ex.forward();
    ex.backward(loss);
  }
}

// What a data-parallel run left: weights, first moments (gathered from the ranks' chunks), the
// allocator's optimizer-state bytes and the report's, the plan's gradient peak and buckets.
inline void describe(Executor& ex, const Tape& tape, ParamStore& store, const Allocator& alloc,
                     OptimizerKind kind, int zero, int ranks, int rank, DistRun& r) {
  r.state_bytes = alloc.stats(Role::optimizer_state).current;
  ex.gather_optimizer_state();  // ZeRO: every rank's chunks of the state, for comparing
  for (Parameter* p : store.all()) {
    r.weights.push_back(clone(p->value));
    r.moments.push_back(p->momentum.defined() ? clone(p->momentum) : Tensor());  // stats: none
  }
  ex.release_gathered_state();
  const Liveness& live = ex.liveness();
  size_t trainable = 0;
  for (Parameter* p : store.all()) trainable += p->trainable ? p->value.bytes() : 0;
  r.reported_state = (kind == OptimizerKind::adamw ? 2 : 1) *
                     (zero > 0 ? bucket_chunk_bytes(live, ranks, rank) : trainable);
  r.grad_bytes = param_grad_peak(live);
  r.bucket_count = live.buckets.size();
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && live.grad_buffer[v] >= 0)
      r.views = r.views && live.buffers[static_cast<size_t>(live.grad_buffer[v])].view_of >= 0;
  r.arena_over_bound = double(ex.layout().plan.arena_bytes) /
                       double(std::max<size_t>(ex.layout().plan.lower_bound, 1));
}

// `steps` training steps on global batches of `batch` samples; comm null: one process with the
// whole batch.
inline DistRun dist_run(Communicator* comm, int64_t batch, OptimizerKind kind, MemoryMode memory,
                        DType dtype = DType::f32, int steps = 5, size_t bucket_bytes = 0,
                        int zero = 0) {
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  const ChunkRange mine = chunk_of(batch, ranks, rank);
  ParamStore store(7);
  Tape tape(store, dtype);
  Value x = tape.input("x", {mine.size(), 3, 8, 8}, dtype);
  Value labels = tape.input("labels", {mine.size()}, DType::i32);
  Value h = max_pool2d(relu(conv2d(x, {.out = 6, .kernel = 3, .pad = 1})), {.kernel = 2});
  h = relu(conv2d(h, {.out = 8, .kernel = 3, .pad = 1}));
  Value logits = linear(relu(linear(flatten(h), {.out = 16})), {.out = 5});
  Value loss = softmax_cross_entropy(logits, labels);
  OptimizerConfig opt{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .kind = kind};
  if (kind == OptimizerKind::adamw) opt.lr = 0.01;
  CpuAllocator alloc;
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::training,
               .memory = memory,
               .seed = 3,
               .keep = {loss},
               .optimizer = opt,
               .comm = comm,
               .grad_bucket_bytes = bucket_bytes,
               .zero = zero},
              alloc);
  train_steps(ex, opt, mine, batch, steps, x, labels, loss, 5, 100);
  DistRun r;
  describe(ex, tape, store, alloc, kind, zero, ranks, rank, r);
  return r;
}

// ResNet-20 (BatchNorm; or `model`, with `checkpoint_runs`) for `steps` steps on global
// batches of `batch` 32x32 images; with
// `sync`, batch norm's statistics span the ranks; `zero` the ZeRO stage. Returns every
// parameter and running statistic; with `info`, the rest of describe()'s account too.
inline std::vector<Tensor> resnet_run(Communicator* comm, int64_t batch, OptimizerKind kind,
                                      bool sync, DType dtype = DType::f32, int steps = 5,
                                      int zero = 0, DistRun* info = nullptr,
                                      const std::string& model = "resnet20",
                                      std::vector<BlockRun> checkpoint_runs = {}) {
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  const ChunkRange mine = chunk_of(batch, ranks, rank);
  ParamStore store(11);
  Tape tape(store, dtype);
  const ModelStep step =
      record_model_step(tape, find_model(model), mine.size(), Mode::training,
                        ModelConfig{.classes = 10, .checkpoint_runs = checkpoint_runs});
  // Small steps: ResNet-20 on random data at batch 8 amplifies rounding (f32 and f64 runs of
  // one process part by 1% within 5 steps at lr 0.05).
  OptimizerConfig opt{.lr = 0.002, .momentum = 0.9, .weight_decay = 1e-4, .kind = kind};
  if (kind == OptimizerKind::adamw) opt.lr = 2e-4;
  CpuAllocator alloc;
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::training,
               .memory = MemoryMode::planned,
               .keep = {step.loss},
               .optimizer = opt,
               .comm = comm,
               .zero = zero,
               .sync_bn_comm = sync ? comm : nullptr},
              alloc);
  train_steps(ex, opt, mine, batch, steps, step.images, step.labels, step.loss, 10, 300);
  if (info) describe(ex, tape, store, alloc, kind, zero, ranks, rank, *info);
  std::vector<Tensor> out;
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

// The largest |a - b| over the largest |b|, across every tensor of two runs' weights.
inline double relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    for (int64_t j = 0; j < a[i].numel(); ++j) {
      const double x = element_as_double(a[i], j), y = element_as_double(b[i], j);
      diff = worse(diff, std::abs(x - y));
      scale = std::max(scale, std::abs(y));
    }
  return a.size() == b.size() ? diff / std::max(scale, 1e-30) : 1e30;
}

inline bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !bitwise_equal(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace frugal::testing
