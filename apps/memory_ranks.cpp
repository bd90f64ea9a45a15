// `frugal memory --ranks N [--zero K]`: the memory of one rank of a data-parallel training
// step, from shapes, before anything runs: rank 0's slice of the batch planned with its
// gradient buckets, the parameters, and the optimizer state whole or sharded (ZeRO), beside
// one process with the whole batch. What the executor allocates is what this reports
// (tests/dist/test_mpi.cpp).
#include <cstdio>

#include "apps/memory.h"
#include "apps/options.h"
#include "core/communicator.h"
#include "run/plan.h"

namespace frugal {

namespace {

struct RankMemory {
  int64_t batch = 0;
  size_t arena = 0, bound = 0, params = 0, state = 0, grads = 0;
  size_t buckets = 0, bucket_bytes = 0;
  size_t total() const { return arena + params + state; }
};

// The memory of the last rank, whose slice of the batch and chunks of the buckets are the
// largest (ceil, where others may have floor), or with ranks == 1 one process without buckets.
RankMemory rank_memory(const MemoryOptions& options, int ranks, int zero) {
  MemoryOptions o = options;
  RankMemory m;
  m.batch = o.batch = chunk_of(options.batch, ranks, ranks - 1).size();
  FRUGAL_CHECK(o.batch >= 1, "memory --ranks: a batch of ", options.batch, " over ", ranks,
               " ranks leaves a rank no sample");
  RecordedModel r;
  record_model(r, o);
  const ReportOptions ro{.optimizer_kind = o.optimizer,
                         .keep = {r.out.id()},
                         .workspace_limit = o.workspace_limit,
                         .workspace_growth = o.workspace_growth,
                         .recompute = o.recompute,
                         .rebuild_budget = o.rebuild_budget,
                         .pack = o.pack};
  LayoutOptions lo = report_layout_options(Mode::training, ro);
  if (ranks > 1)
    lo.grad_bucket_bytes =
        o.bucket_bytes > 0 ? o.bucket_bytes : default_grad_bucket_bytes(*r.tape, zero);
  const Layout layout =
      memory_layout(*r.tape, Mode::training, MemoryMode::planned, backend_named(o.device), lo);
  m.arena = layout.plan.arena_bytes;
  m.bound = layout.plan.lower_bound;
  m.buckets = layout.live.buckets.size();
  m.bucket_bytes = lo.grad_bucket_bytes;
  size_t trainable = 0;
  for (const ValueNode& v : r.tape->values())
    if (v.param) {
      m.params += v.param->meta.bytes();
      if (v.param->trainable) trainable += v.param->meta.bytes();
    }
  const size_t tensors = o.optimizer == OptimizerKind::adamw ? 2 : 1;
  m.state = tensors * (zero > 0 ? bucket_chunk_bytes(layout.live, ranks, ranks - 1) : trainable);
  m.grads = param_grad_peak(layout.live);
  return m;
}

}  // namespace

nlohmann::ordered_json print_ranks(const MemoryOptions& o, bool print) {
  FRUGAL_CHECK(o.mode == Mode::training,
               "memory --ranks: data parallel training; use --mode "
               "training");
  FRUGAL_CHECK(o.zero >= 0 && o.zero <= 2, "memory --zero ", o.zero, " is not 0, 1 or 2");
  const RankMemory one = rank_memory(o, 1, 0);
  const RankMemory rank = rank_memory(o, o.ranks, o.zero);
  if (print) {
    std::printf(
        "\nper rank, %d ranks, ZeRO %d, %s: rank %d holds %lld of each batch of %lld, no rank more "
        "(MiB)\n",
        o.ranks, o.zero, optimizer_name(o.optimizer), o.ranks - 1,
        static_cast<long long>(rank.batch), static_cast<long long>(o.batch));
    std::printf("%-28s %12s %12s\n", "", "one process", "per rank");
    auto row = [](const char* name, size_t a, size_t b) {
      std::printf("%-28s %12.2f %12.2f\n", name, to_mib(a), to_mib(b));
    };
    row("planned arena", one.arena, rank.arena);
    row("  of it, gradients at most", one.grads, rank.grads);
    row("parameters", one.params, rank.params);
    row("optimizer state", one.state, rank.state);
    row("total", one.total(), rank.total());
    std::printf(
        "gradient buckets: %zu of about %s, each reduced as soon as its last gradient is final; "
        "arena %.2f%% above its liveness lower bound\n",
        rank.buckets, bytes_text(rank.bucket_bytes).c_str(),
        100.0 * (double(rank.arena) / double(std::max<size_t>(rank.bound, 1)) - 1.0));
  }
  return {{"ranks", o.ranks},
          {"zero", o.zero},
          {"rank_batch", rank.batch},
          {"arena", rank.arena},
          {"lower_bound", rank.bound},
          {"gradients_peak", rank.grads},
          {"params", rank.params},
          {"optimizer_state", rank.state},
          {"total", rank.total()},
          {"buckets", rank.buckets},
          {"one_process_total", one.total()}};
}

}  // namespace frugal
