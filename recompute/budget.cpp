// Checkpoint schedules: the chain's memory model, the dynamic programme over it, and the loop
// that checks each chosen schedule with the real planner. Past 400 lines: the model, the DP
// and the least-peak recurrence share the run types (one and two levels) defined here.
#include "recompute/budget.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace frugal {
namespace {

size_t minus_or_zero(size_t a, size_t b) {
  return a > b ? a - b : 0;
}

// What one block's backward needs beyond its input, held bytes, output and weight gradients.
size_t transient(const ChainBlock& b) {
  return minus_or_zero(b.arena, b.input + b.held + b.output + b.param_grads);
}

// A stored block: what it keeps until its backward, and the peak it adds there (its own kept
// bytes included).
size_t stored_held(const ChainBlock& b) {
  return b.input + b.held;
}
size_t stored_peak(const ChainBlock& b) {
  return std::max(b.arena, b.input + b.held + b.output);
}

// A checkpointed run, grown one block at a time.
struct Run {
  size_t input = 0, body = 0, grads = 0, work = 0, output = 0;
  double flops = 0;
  int blocks = 0;
  void add(const ChainBlock& b) {
    if (blocks++ == 0) input = b.input;
    body += b.input + b.held;
    grads += b.param_grads;
    work = std::max(work, transient(b));
    output = b.output;
    flops += b.flops;
  }
  // Its input, kept; in backward: input, the run's arena, d input, d output, weight gradients.
  size_t held() const { return input; }
  size_t peak() const { return input + (body + output + grads + work) + input + output + grads; }
};

// A checkpointed run rebuilt with inner checkpoints of k blocks (BlockRun::inner; k 0: one
// level, Run alone), grown one block at a time: chain_peak of its own blocks under inner_runs
// is kept current, the finished inner checkpoints in `prefix` and `inside`, the last piece as
// stored blocks after them.
struct NestedRun {
  explicit NestedRun(int inner) : k(inner) {}
  int k;
  Run whole, piece;  // the run's totals; its last piece, as a run should a block follow
  size_t prefix = 0, inside = 0;         // kept by, and the peak over, the inner checkpoints
  size_t piece_held = 0, piece_top = 0;  // the last piece's blocks stored after them
  double inner_flops = 0;                // the inner checkpoints' blocks, rebuilt again
  void add(const ChainBlock& b) {
    whole.add(b);
    if (k == 0) return;
    if (piece.blocks == k) {  // the last piece becomes an inner checkpoint
      inside = std::max(inside, prefix + piece.peak());
      prefix += piece.held();
      inner_flops += piece.flops;
      piece = Run{};
      piece_held = piece_top = 0;
    }
    piece_top = std::max(piece_top, prefix + piece_held + stored_peak(b));
    piece_held += stored_held(b);
    piece.add(b);
  }
  // As Run::peak, with the arena the rebuild's own peak plus the weight gradients it keeps.
  size_t peak() const {
    if (k == 0) return whole.peak();
    const size_t own = std::max({inside, piece_top, prefix + piece_held + whole.output});
    return whole.input + (own + whole.grads) + whole.input + whole.output + whole.grads;
  }
  double flops() const { return whole.flops + inner_flops; }
};

// The best inner choice of every run [i, r), indexed i * (n + 1) + r: the lowest peak with
// inner checkpoints (the least recompute among equal peaks) where it is below the one-level
// run's; inner 0 elsewhere. O(n^3) cheap steps.
struct NestedChoices {
  std::vector<size_t> peak;
  std::vector<double> flops;
  std::vector<int> inner;
  // `levels` 1: no run has inner checkpoints.
  NestedChoices(std::span<const ChainBlock> blocks, int levels) {
    const size_t n = blocks.size(), W = n + 1;
    peak.assign(n * W, 0);
    flops.assign(n * W, 0.0);
    inner.assign(n * W, 0);
    for (size_t i = 0; i < n && levels > 1; ++i) {
      std::vector<size_t> single(W, 0);
      Run run;
      for (size_t r = i + 1; r <= n; ++r) {
        run.add(blocks[r - 1]);
        single[r] = run.peak();
      }
      for (int k = 1; static_cast<size_t>(k) + 1 < n - i + 1; ++k) {
        NestedRun nested(k);
        for (size_t r = i + 1; r <= n; ++r) {
          nested.add(blocks[r - 1]);
          if (r - i <= static_cast<size_t>(k)) continue;  // no inner checkpoint yet
          const size_t at = i * W + r;
          const size_t p = nested.peak();
          const double f = nested.flops();
          const bool lower = inner[at] == 0 ? p < single[r] : p < peak[at];
          if (lower || (inner[at] != 0 && p == peak[at] && f < flops[at]))
            peak[at] = p, flops[at] = f, inner[at] = k;
        }
      }
    }
  }
};

// Rounding each step's bytes up to units costs up to one unit per block, so long chains want
// fine units; the DP's n^2 M time caps them: M from 2048 to 200 n units up to the all-stored
// peak, about 2e8 steps at most beyond 2048.
size_t default_unit(std::span<const ChainBlock> blocks) {
  const double n = static_cast<double>(blocks.size());
  const double units = std::clamp(2e8 / (n * n), 2048.0, std::max(2048.0, 200.0 * n));
  const size_t peak = chain_peak(blocks, {});
  return std::max<size_t>(1, static_cast<size_t>(std::ceil(static_cast<double>(peak) / units)));
}

}  // namespace

void check_block_runs(std::span<const BlockRun> runs, int blocks) {
  int end = 0;
  for (const BlockRun& r : runs) {
    FRUGAL_CHECK(r.begin >= end && r.end > r.begin && r.end <= blocks, "checkpoint schedule: run ",
                 runs_text(std::span(&r, 1)), " of ", runs_text(runs),
                 " is empty, out of order, overlapping or outside the chain of ", blocks,
                 " blocks");
    FRUGAL_CHECK(r.inner >= 0 && r.inner < r.end - r.begin, "checkpoint schedule: run ",
                 runs_text(std::span(&r, 1)), " checkpoints ", r.inner,
                 " blocks at a time inside it; a run of ", r.end - r.begin, " blocks takes 1 to ",
                 r.end - r.begin - 1, " (or 0: none)");
    end = r.end;
  }
}

std::vector<BlockRun> inner_runs(const BlockRun& run) {
  std::vector<BlockRun> runs;
  if (run.inner > 0)
    for (int b = run.begin; b + run.inner < run.end; b += run.inner)
      runs.push_back({b, b + run.inner});
  return runs;
}

std::vector<BlockRun> segment_runs(int segments, int blocks) {
  if (segments <= 1) return {};
  FRUGAL_CHECK(segments <= blocks, "checkpoint segments: ", segments, " segments for ", blocks,
               " blocks");
  const int per = blocks / segments;
  std::vector<BlockRun> runs;
  for (int i = 0; i + 1 < segments; ++i) runs.push_back({i * per, (i + 1) * per});
  return runs;
}

size_t chain_peak(std::span<const ChainBlock> blocks, std::span<const BlockRun> checkpointed) {
  check_block_runs(checkpointed, static_cast<int>(blocks.size()));
  size_t prefix = 0, peak = 0;
  size_t next = 0;  // the next checkpointed run
  for (int i = 0; i < static_cast<int>(blocks.size());) {
    if (next < checkpointed.size() && checkpointed[next].begin == i) {
      const BlockRun& r = checkpointed[next++];
      NestedRun run(r.inner);
      for (; i < r.end; ++i) run.add(blocks[static_cast<size_t>(i)]);
      peak = std::max(peak, prefix + run.peak());
      prefix += run.whole.held();
    } else {
      const ChainBlock& b = blocks[static_cast<size_t>(i++)];
      peak = std::max(peak, prefix + stored_peak(b));
      prefix += stored_held(b);
    }
  }
  return blocks.empty() ? 0 : std::max(peak, prefix + blocks.back().output);
}

double chain_recompute(std::span<const ChainBlock> blocks, std::span<const BlockRun> checkpointed) {
  check_block_runs(checkpointed, static_cast<int>(blocks.size()));
  double flops = 0;
  for (const BlockRun& r : checkpointed) {
    for (int i = r.begin; i < r.end; ++i) flops += blocks[static_cast<size_t>(i)].flops;
    for (const BlockRun& in : inner_runs(r))
      for (int i = in.begin; i < in.end; ++i) flops += blocks[static_cast<size_t>(i)].flops;
  }
  return flops;
}

int lowest_inner(std::span<const ChainBlock> blocks, int begin, int end) {
  check_block_runs(std::vector<BlockRun>{{begin, end}}, static_cast<int>(blocks.size()));
  const auto run = blocks.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin));
  return NestedChoices(run, 2).inner[static_cast<size_t>(end - begin)];
}

// g(i, m): the least recompute for blocks [i, n) when the blocks before keep m units; a stored
// block i or a checkpointed run [i, r), in one level or with its best inner checkpoints, is
// allowed when m plus its peak fits the limit. O(n^2 M) time for M units of memory.
std::optional<ChainSchedule> solve_chain(std::span<const ChainBlock> blocks, size_t limit,
                                         size_t unit, int levels) {
  const size_t all_stored = chain_peak(blocks, {});
  if (limit >= all_stored) return ChainSchedule{{}, 0, all_stored};
  if (unit == 0) unit = default_unit(blocks);
  auto units = [unit](size_t bytes) { return (bytes + unit - 1) / unit; };
  const size_t n = blocks.size(), M = limit / unit, W = n + 1;
  std::vector<size_t> keep(n), peak(n), input(n), run_peak(n * W, 0), nested_peak(n * W, 0);
  std::vector<double> flops(W, 0.0);  // prefix sums
  const NestedChoices nested(blocks, levels);
  for (size_t i = 0; i < n; ++i) {
    keep[i] = units(stored_held(blocks[i]));
    peak[i] = units(stored_peak(blocks[i]));
    input[i] = units(blocks[i].input);
    flops[i + 1] = flops[i] + blocks[i].flops;
    Run run;
    for (size_t r = i + 1; r <= n; ++r) {
      run.add(blocks[r - 1]);
      run_peak[i * W + r] = units(run.peak());
      nested_peak[i * W + r] = units(nested.peak[i * W + r]);
    }
  }
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // Indexed [m * W + i]: for a fixed m the runs' ends r lie side by side.
  std::vector<double> g((M + 1) * W, kNone);
  // 0: block i stored; r in [1, W): run [i, r); W + r: run [i, r) with inner checkpoints.
  std::vector<int> choice((M + 1) * W, -1);
  const size_t tail = units(blocks.back().output);
  for (size_t m = 0; m + tail <= M; ++m) g[m * W + n] = 0;
  for (size_t i = n; i-- > 0;) {
    for (size_t m = 0; m <= M; ++m) {
      double best = kNone;
      int pick = -1;
      if (m + peak[i] <= M && g[(m + keep[i]) * W + i + 1] < best) {
        best = g[(m + keep[i]) * W + i + 1];
        pick = 0;
      }
      if (m + input[i] <= M) {
        const double* after = &g[(m + input[i]) * W];
        for (size_t r = i + 1; r <= n; ++r) {
          if (m + run_peak[i * W + r] <= M) {
            const double v = flops[r] - flops[i] + after[r];
            if (v < best) best = v, pick = static_cast<int>(r);
          } else if (nested.inner[i * W + r] > 0 && m + nested_peak[i * W + r] <= M) {
            const double v = nested.flops[i * W + r] + after[r];
            if (v < best) best = v, pick = static_cast<int>(W + r);
          }
        }
      }
      g[m * W + i] = best;
      choice[m * W + i] = pick;
    }
  }
  if (g[0] == kNone) return std::nullopt;
  ChainSchedule s;
  for (size_t i = 0, m = 0; i < n;) {
    const int c = choice[m * W + i];
    if (c == 0) {
      m += keep[i++];
    } else {
      const size_t r = static_cast<size_t>(c) % W;
      const int inner = static_cast<size_t>(c) >= W ? nested.inner[i * W + r] : 0;
      s.checkpointed.push_back({static_cast<int>(i), static_cast<int>(r), inner});
      m += input[i];
      i = r;
    }
  }
  s.recompute = chain_recompute(blocks, s.checkpointed);
  s.peak = chain_peak(blocks, s.checkpointed);
  return s;
}

// R(i) = min over the first step from i of max(its peak, what it keeps + R(next)), exact in
// bytes; among equal peaks the step with the least recompute after it.
ChainSchedule min_peak_chain(std::span<const ChainBlock> blocks, int levels) {
  const size_t n = blocks.size();
  if (n == 0) return {};
  std::vector<size_t> R(n + 1);
  std::vector<double> C(n + 1, 0.0);
  std::vector<size_t> next(n);
  std::vector<int> inner(n, 0);
  const size_t W = n + 1;
  const NestedChoices nested(blocks, levels);
  R[n] = blocks.back().output;
  for (size_t i = n; i-- > 0;) {
    R[i] = std::max(stored_peak(blocks[i]), stored_held(blocks[i]) + R[i + 1]);
    C[i] = C[i + 1];
    next[i] = 0;  // stored
    Run run;
    for (size_t r = i + 1; r <= n; ++r) {
      run.add(blocks[r - 1]);
      const size_t p = std::max(run.peak(), run.held() + R[r]);
      const double c = run.flops + C[r];
      if (p < R[i] || (p == R[i] && c < C[i])) R[i] = p, C[i] = c, next[i] = r, inner[i] = 0;
      const size_t at = i * W + r;
      if (nested.inner[at] == 0) continue;
      const size_t pn = std::max(nested.peak[at], run.held() + R[r]);
      const double cn = nested.flops[at] + C[r];
      if (pn < R[i] || (pn == R[i] && cn < C[i]))
        R[i] = pn, C[i] = cn, next[i] = r, inner[i] = nested.inner[at];
    }
  }
  ChainSchedule s;
  for (size_t i = 0; i < n;) {
    if (next[i] == 0) {
      ++i;
    } else {
      s.checkpointed.push_back({static_cast<int>(i), static_cast<int>(next[i]), inner[i]});
      i = next[i];
    }
  }
  s.recompute = chain_recompute(blocks, s.checkpointed);
  s.peak = chain_peak(blocks, s.checkpointed);
  return s;
}

BudgetSchedule minimum_memory(std::span<const ChainBlock> blocks, const PlannedPeak& planned_peak,
                              int levels) {
  BudgetSchedule best;
  best.schedule = min_peak_chain(blocks, levels);
  best.planned_peak = planned_peak(best.schedule.checkpointed);
  best.plans = 1;
  // Where the model's two lowest peaks are close, the real plans may order them otherwise, so
  // the one-level least peak is planned too: two levels never name a higher minimum.
  ChainSchedule every;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i)
    every.checkpointed.push_back({i, i + 1});
  std::vector<ChainSchedule> others{every};
  if (levels > 1) others.push_back(min_peak_chain(blocks, 1));
  for (ChainSchedule& other : others) {
    if (other.checkpointed == best.schedule.checkpointed) continue;
    other.recompute = chain_recompute(blocks, other.checkpointed);
    other.peak = chain_peak(blocks, other.checkpointed);
    const size_t real = planned_peak(other.checkpointed);
    ++best.plans;
    if (real < best.planned_peak) {
      best.schedule = other;
      best.planned_peak = real;
    }
  }
  return best;
}

// The model is offset by what it misses of the real plan (the layers outside the chain, the
// planner's packing): first the all-stored difference, then each planned schedule's own.
// A plan over the budget raises the offset to its difference; a plan with room to spare lowers
// it, to look for a schedule with less recompute. Each schedule is planned at most once.
BudgetSchedule fit_memory_budget(std::span<const ChainBlock> blocks, size_t budget,
                                 const PlannedPeak& planned_peak, const std::string& what,
                                 int levels) {
  BudgetSchedule r;
  r.stored_peak = planned_peak({});
  r.plans = 1;
  r.schedule = {{}, 0, chain_peak(blocks, {})};
  r.planned_peak = r.stored_peak;
  if (r.stored_peak <= budget) return r;
  const size_t unit = blocks.empty() ? 1 : default_unit(blocks);
  using ll = long long;
  ll offset = static_cast<ll>(r.stored_peak) - static_cast<ll>(r.schedule.peak);
  std::optional<BudgetSchedule> best;
  std::vector<std::vector<BlockRun>> tried{{}};
  for (int round = 0; round < 16 && !blocks.empty(); ++round) {
    const ll limit = static_cast<ll>(budget) - offset;
    if (limit <= 0) break;
    const std::optional<ChainSchedule> s =
        solve_chain(blocks, static_cast<size_t>(limit), unit, levels);
    if (!s || std::find(tried.begin(), tried.end(), s->checkpointed) != tried.end()) break;
    tried.push_back(s->checkpointed);
    const size_t real = planned_peak(s->checkpointed);
    ++r.plans;
    const ll missed = static_cast<ll>(real) - static_cast<ll>(s->peak);
    if (real <= budget) {
      if (!best || s->recompute < best->schedule.recompute)
        best = BudgetSchedule{*s, real, r.stored_peak, 0};
      if (missed >= offset) break;  // no room to spare: nothing better to find
    }
    offset = missed;
  }
  if (best) {
    best->plans = r.plans;
    return *best;
  }
  BudgetSchedule least = minimum_memory(blocks, planned_peak, levels);
  least.stored_peak = r.stored_peak;
  least.plans += r.plans;
  FRUGAL_CHECK(least.planned_peak <= budget, "memory budget ", bytes_text(budget),
               " is below the minimum ", bytes_text(least.planned_peak), " for ", what,
               " (checkpointing ",
               runs_summary(least.schedule.checkpointed, static_cast<int>(blocks.size())),
               "; nothing checkpointed: ", bytes_text(r.stored_peak), ")");
  return least;
}

}  // namespace frugal
