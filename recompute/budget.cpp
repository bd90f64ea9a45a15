// Checkpoint schedules: the chain's memory model, the dynamic programme over it, and the loop
// that checks each chosen schedule with the real planner.
#include "recompute/budget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
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
    end = r.end;
  }
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
      Run run;
      for (; i < checkpointed[next].end; ++i) run.add(blocks[static_cast<size_t>(i)]);
      peak = std::max(peak, prefix + run.peak());
      prefix += run.held();
      ++next;
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
  for (const BlockRun& r : checkpointed)
    for (int i = r.begin; i < r.end; ++i) flops += blocks[static_cast<size_t>(i)].flops;
  return flops;
}

// g(i, m): the least recompute for blocks [i, n) when the blocks before keep m units; a stored
// block i or a checkpointed run [i, r) is allowed when m plus its peak fits the limit. O(n^2 M)
// time for M units of memory.
std::optional<ChainSchedule> solve_chain(std::span<const ChainBlock> blocks, size_t limit,
                                         size_t unit) {
  const size_t all_stored = chain_peak(blocks, {});
  if (limit >= all_stored) return ChainSchedule{{}, 0, all_stored};
  if (unit == 0) unit = default_unit(blocks);
  auto units = [unit](size_t bytes) { return (bytes + unit - 1) / unit; };
  const size_t n = blocks.size(), M = limit / unit, W = n + 1;
  std::vector<size_t> keep(n), peak(n), input(n), run_peak(n * W, 0);
  std::vector<double> flops(W, 0.0);  // prefix sums
  for (size_t i = 0; i < n; ++i) {
    keep[i] = units(stored_held(blocks[i]));
    peak[i] = units(stored_peak(blocks[i]));
    input[i] = units(blocks[i].input);
    flops[i + 1] = flops[i] + blocks[i].flops;
    Run run;
    for (size_t r = i + 1; r <= n; ++r) {
      run.add(blocks[r - 1]);
      run_peak[i * W + r] = units(run.peak());
    }
  }
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // Indexed [m * W + i]: for a fixed m the runs' ends r lie side by side.
  std::vector<double> g((M + 1) * W, kNone);
  std::vector<int> choice((M + 1) * W, -1);  // 0: block i stored; r > 0: run [i, r)
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
          if (m + run_peak[i * W + r] > M) continue;
          const double v = flops[r] - flops[i] + after[r];
          if (v < best) best = v, pick = static_cast<int>(r);
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
      s.checkpointed.push_back({static_cast<int>(i), c});
      m += input[i];
      i = static_cast<size_t>(c);
    }
  }
  s.recompute = chain_recompute(blocks, s.checkpointed);
  s.peak = chain_peak(blocks, s.checkpointed);
  return s;
}

// R(i) = min over the first step from i of max(its peak, what it keeps + R(next)), exact in
// bytes; among equal peaks the step with the least recompute after it.
ChainSchedule min_peak_chain(std::span<const ChainBlock> blocks) {
  const size_t n = blocks.size();
  if (n == 0) return {};
  std::vector<size_t> R(n + 1);
  std::vector<double> C(n + 1, 0.0);
  std::vector<size_t> next(n);
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
      if (p < R[i] || (p == R[i] && c < C[i])) R[i] = p, C[i] = c, next[i] = r;
    }
  }
  ChainSchedule s;
  for (size_t i = 0; i < n;) {
    if (next[i] == 0) {
      ++i;
    } else {
      s.checkpointed.push_back({static_cast<int>(i), static_cast<int>(next[i])});
      i = next[i];
    }
  }
  s.recompute = chain_recompute(blocks, s.checkpointed);
  s.peak = chain_peak(blocks, s.checkpointed);
  return s;
}

BudgetSchedule minimum_memory(std::span<const ChainBlock> blocks, const PlannedPeak& planned_peak) {
  BudgetSchedule best;
  best.schedule = min_peak_chain(blocks);
  best.planned_peak = planned_peak(best.schedule.checkpointed);
  best.plans = 1;
  ChainSchedule every;
  for (int i = 0; i < static_cast<int>(blocks.size()); ++i)
    every.checkpointed.push_back({i, i + 1});
  if (every.checkpointed != best.schedule.checkpointed) {
    every.recompute = chain_recompute(blocks, every.checkpointed);
    every.peak = chain_peak(blocks, every.checkpointed);
    const size_t real = planned_peak(every.checkpointed);
    ++best.plans;
    if (real < best.planned_peak) {
      best.schedule = every;
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
                                 const PlannedPeak& planned_peak, const std::string& what) {
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
    const std::optional<ChainSchedule> s = solve_chain(blocks, static_cast<size_t>(limit), unit);
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
  BudgetSchedule least = minimum_memory(blocks, planned_peak);
  least.stored_peak = r.stored_peak;
  least.plans += r.plans;
  FRUGAL_CHECK(least.planned_peak <= budget, "memory budget ", bytes_text(budget),
               " is below the minimum ", bytes_text(least.planned_peak), " for ", what,
               " (checkpointing ",
               runs_summary(least.schedule.checkpointed, static_cast<int>(blocks.size())),
               "; nothing checkpointed: ", bytes_text(r.stored_peak), ")");
  return least;
}

size_t parse_bytes(const std::string& text, bool zero_allowed) {
  const auto fail = [&text] {
    return Error("'" + text + "' is not a size in bytes (e.g. 1073741824, 200M, 1.5G, 64KiB)");
  };
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
    throw fail();
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    throw fail();
  }
  std::string suffix;
  for (char c : text.substr(used)) suffix += static_cast<char>(std::tolower(c));
  double scale = 0;
  const char* prefixes = "kmgt";
  if (suffix.empty() || suffix == "b") scale = 1;
  for (int p = 0; p < 4 && scale == 0; ++p) {
    const std::string k(1, prefixes[p]);
    if (suffix == k || suffix == k + "b" || suffix == k + "ib") scale = std::pow(1024.0, p + 1);
  }
  if (scale == 0 || !std::isfinite(v) || (scale == 1 && v != std::floor(v))) throw fail();
  const double bytes = std::floor(v * scale);
  FRUGAL_CHECK((zero_allowed || bytes >= 1) && bytes < 1e19, "'", text, "' must be ",
               zero_allowed ? "" : "at least one byte and ", "below 2^63");
  return static_cast<size_t>(bytes);
}

std::string runs_text(std::span<const BlockRun> runs) {
  std::string s;
  for (const BlockRun& r : runs)
    s += (s.empty() ? "[" : " [") + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")";
  return s.empty() ? "none" : s;
}

std::string runs_summary(std::span<const BlockRun> runs, int blocks) {
  int covered = 0;
  for (const BlockRun& r : runs) covered += r.end - r.begin;
  if (static_cast<int>(runs.size()) == blocks && covered == blocks) return "every block";
  if (runs.size() <= 6) return runs_text(runs);
  return std::to_string(runs.size()) + " runs over " + std::to_string(covered) + " of the " +
         std::to_string(blocks) + " blocks";
}

std::string bytes_text(size_t bytes) {
  char s[64];
  std::snprintf(s, sizeof s, "%.1f MiB (%zu bytes)", static_cast<double>(bytes) / 1048576.0, bytes);
  return s;
}

}  // namespace frugal
