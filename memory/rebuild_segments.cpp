// Segment schedules under a memory budget on any graph (see rebuild_segments.h).
#include "memory/rebuild_segments.h"

#include <algorithm>
#include <limits>

#include "memory/layout.h"
#include "memory/planner.h"

namespace frugal {

std::pair<size_t, int> peak_live(const Liveness& L, size_t alignment) {
  std::vector<int> request;
  const std::vector<size_t> live =
      live_curve(arena_requests(L, false, request), L.steps, alignment);
  const auto peak = std::max_element(live.begin(), live.end());
  return {*peak, static_cast<int>(peak - live.begin())};
}

namespace {

// A rebuild set and its real planned arena.
struct Candidate {
  std::vector<int> rebuild;
  size_t arena = 0;
};

class Segments {
 public:
  Segments(const Step& step, const LivenessOptions& options, size_t alignment, size_t budget,
           RebuildFit& fit)
      : step_(step),
        options_(options),
        alignment_(alignment),
        budget_(budget),
        fit_(fit),
        cuts_(cut_values(step)),
        all_(rebuildable_ops(step, true)) {
    // The forward ops between cut values, as ranges [first, last] of op indices: from the op
    // after one cut's producer to the next cut's producer (the first from op 0, the last to the
    // end).
    int first = 0;
    for (int v : cuts_) {
      const int p = step.value(v).producer;
      if (p >= first) blocks_.emplace_back(first, p);
      first = p + 1;
    }
    if (first < static_cast<int>(step.ops.size()))
      blocks_.emplace_back(first, static_cast<int>(step.ops.size()) - 1);
    block_of_.assign(step.ops.size(), 0);
    for (size_t b = 0; b < blocks_.size(); ++b)
      for (int p = blocks_[b].first; p <= blocks_[b].second; ++p)
        block_of_[static_cast<size_t>(p)] = static_cast<int>(b);
  }

  void run() {
    if (cuts_.empty()) return;
    // Uniform: keep every m-th cut value and rebuild every other output, convolutions
    // included, from the cut before it (a run's forward once more at the start of its
    // backward). The first m that fits, then what it can store back.
    const std::vector<int> none(blocks_.size(), 0);
    for (size_t m = 2; m <= cuts_.size(); ++m) {
      const Schedule s{none, every(m)};
      if (peak(set_of(s)) <= budget_ && offer(set_of(s))) {
        store_back(set_of(s));
        break;
      }
    }
    // Uneven: the kept cuts moved from the lowest uniform spacing; then a tail of blocks
    // stored (their convolutions' outputs kept, the cheap ops rebuilt from them; or whole) in
    // front of such segments, the longest tail that fits, improved by a descent.
    const Schedule moved = lowest_cuts(none);
    const bool moved_fits = peak(set_of(moved)) <= budget_;
    if (!fit_.fits && moved_fits && offer(set_of(moved))) store_back(set_of(moved));
    if (moved_fits)
      for (int mode : {1, 2}) {
        const Schedule better = descend(stored_tail(mode, moved));
        if (offer(set_of(better))) store_back(set_of(better));
      }
    if (!fit_.fits) offer(set_of(moved));  // none fits: the smallest arena found
  }

 private:
  // Per block, what its rebuildable ops do (0: all rebuilt, convolutions included; 1:
  // convolutions and linear layers kept, the cheap ops rebuilt from them; 2: all kept), and
  // per cut value whether it is kept.
  struct Schedule {
    std::vector<int> mode;
    std::vector<bool> kept;
  };

  LivenessOptions with(const std::vector<int>& set) const {
    LivenessOptions o = options_;
    o.rebuild.insert(o.rebuild.end(), set.begin(), set.end());
    return o;
  }
  size_t peak(const std::vector<int>& set) {
    ++fit_.plans;
    return peak_live(analyze(step_, with(set)), alignment_).first;
  }
  size_t arena(const std::vector<int>& set) {
    ++fit_.plans;
    return planned_arena_bytes(step_, with(set), alignment_);
  }
  // What rebuilding `set` costs, in flops: its arithmetic, and the bytes it reads and writes
  // at a CPU's balance of about 10 flops a byte (BatchNorm and ReLU rebuilds are bandwidth).
  double cost(int p) const {
    const Roles& r = step_.ops[static_cast<size_t>(p)].roles;
    return r.rebuild_flops + 10 * r.rebuild_bytes;
  }
  double cost(const std::vector<int>& set) const {
    double f = 0;
    for (int p : set) f += cost(p);
    return f;
  }

  std::vector<bool> every(size_t m) const {
    std::vector<bool> kept(cuts_.size(), false);
    for (size_t c = m - 1; c < cuts_.size(); c += m) kept[c] = true;
    return kept;
  }

  std::vector<int> set_of(const Schedule& s) const {
    std::vector<bool> keep(step_.ops.size(), false);
    for (size_t c = 0; c < cuts_.size(); ++c)
      if (s.kept[c]) keep[static_cast<size_t>(step_.value(cuts_[c]).producer)] = true;
    std::vector<int> set;
    for (int p : all_) {
      const int mode = s.mode[static_cast<size_t>(block_of_[static_cast<size_t>(p)])];
      if (keep[static_cast<size_t>(p)] || mode == 2 ||
          (mode == 1 && step_.ops[static_cast<size_t>(p)].roles.rebuild_expensive))
        continue;
      set.push_back(p);
    }
    return set;
  }

  // Plans `set` for real and keeps it if it fits at a lower rebuild cost than the fit so far
  // (or, while nothing fits, if its arena is the smallest); true when it fits.
  bool offer(const std::vector<int>& set) { return offer(Candidate{set, arena(set)}); }
  bool offer(const Candidate& c) {
    const bool fits = c.arena <= budget_;
    if ((fits && (!fit_.fits || cost(c.rebuild) < cost(fit_.rebuild))) ||
        (!fit_.fits && c.arena < fit_.arena)) {
      fit_.rebuild = c.rebuild;
      fit_.arena = c.arena;
      fit_.fits = fits;
    }
    return fits;
  }

  // A schedule that fits, with blocks and then single ops stored back; offered.
  void store_back(const std::vector<int>& set) {
    Candidate c{set, arena(set)};
    store_blocks_and_ops(c);
    offer(c);
  }

  // The single change of the kept cuts (keep one more, drop one, or move one to the next cut
  // either side) that lowers the step's peak live bytes most, until none does. Uniform spacing
  // keeps as many of the large early maps as of the small late ones; the lowest peak keeps few
  // where maps are large and more where they are small, as the chain schedules of
  // recompute/budget.h do, here on the real liveness of any graph.
  Schedule move_cuts(Schedule s) {
    size_t best_peak = peak(set_of(s));
    for (;;) {
      Schedule best;
      auto try_change = [&](const Schedule& t) {
        if (const size_t p = peak(set_of(t)); p < best_peak) best_peak = p, best = t;
      };
      for (size_t c = 0; c < cuts_.size(); ++c) {
        Schedule t = s;
        t.kept[c] = !t.kept[c];
        try_change(t);
        if (!s.kept[c]) continue;
        for (size_t d : {c - 1, c + 1}) {
          if (d >= cuts_.size() || s.kept[d]) continue;  // c - 1 wraps to a huge index at 0
          t = s;
          t.kept[c] = false;
          t.kept[d] = true;
          try_change(t);
        }
      }
      if (best.kept.empty()) return s;
      s = std::move(best);
    }
  }

  // From a schedule whose peak fits, the single change (one block's mode, one cut's flag)
  // that lowers the rebuild cost most while the peak still fits, until none does.
  Schedule descend(Schedule s) {
    double best_cost = cost(set_of(s));
    for (;;) {
      Schedule best;
      auto try_change = [&](const Schedule& t) {
        const std::vector<int> set = set_of(t);
        if (const double c = cost(set); c < best_cost && peak(set) <= budget_)
          best_cost = c, best = t;
      };
      for (size_t b = 0; b < blocks_.size(); ++b)
        for (int m = 0; m < 3; ++m)
          if (m != s.mode[b]) {
            Schedule t = s;
            t.mode[b] = m;
            try_change(t);
          }
      for (size_t c = 0; c < cuts_.size(); ++c) {
        Schedule t = s;
        t.kept[c] = !t.kept[c];
        try_change(t);
      }
      if (best.kept.empty()) return s;
      s = std::move(best);
    }
  }

  // The uniform spacing with the lowest peak for these block modes, its cuts then moved.
  Schedule lowest_cuts(const std::vector<int>& mode) {
    Schedule lowest;
    size_t lowest_peak = std::numeric_limits<size_t>::max();
    for (size_t m = 2; m <= cuts_.size(); ++m) {
      const Schedule s{mode, every(m)};
      if (const size_t p = peak(set_of(s)); p < lowest_peak) lowest_peak = p, lowest = s;
    }
    return move_cuts(lowest);
  }

  // Blocks [t, end) stored (`tail_mode` 1: as their convolutions' outputs; 2: whole), the
  // blocks before t in segments (lowest_cuts): the smallest t whose peak fits, found by
  // bisection from `no_tail` (t at the end, whose peak fits), as a longer stored tail keeps
  // more at the start of backward, where such schedules peak. A network's late blocks cost many
  // flops on small maps: storing them and rebuilding the early ones is what a chain's optimal
  // schedules do.
  Schedule stored_tail(int tail_mode, const Schedule& no_tail) {
    size_t lo = 0, hi = blocks_.size();  // the tail from hi fits; from lo, unknown
    Schedule found = no_tail;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      std::vector<int> mode(blocks_.size(), 0);
      for (size_t b = mid; b < blocks_.size(); ++b) mode[b] = tail_mode;
      if (Schedule s = lowest_cuts(mode); peak(set_of(s)) <= budget_) {
        hi = mid;
        found = std::move(s);
      } else {
        lo = mid + 1;
      }
    }
    return found;
  }

  // Blocks (the ops between cut values) whose outputs can stay stored instead, greedily: each
  // round stores the block that saves the most rebuild cost while the step's peak live bytes
  // stay within the budget. Stored blocks are mostly late ones (small maps, many flops), whose
  // outputs are freed before the early blocks' backward, where the peak is. Then single rebuilt
  // ops, most rebuild cost per output byte first (a convolution with few output channels, a
  // late one on a small map), each stored while the peak fits. Of the stores accepted, the
  // longest run from the first whose real plan fits.
  void store_blocks_and_ops(Candidate& c) {
    std::vector<bool> in(step_.ops.size(), false);
    for (int p : c.rebuild) in[static_cast<size_t>(p)] = true;
    auto set_in = [&] {
      std::vector<int> set;
      for (size_t p = 0; p < in.size(); ++p)
        if (in[p]) set.push_back(static_cast<int>(p));
      return set;
    };
    std::vector<std::vector<int>> stored;  // what each accepted store takes out, in order
    std::vector<bool> done(blocks_.size(), false);
    for (;;) {
      size_t best = blocks_.size();
      double best_cost = 0;
      for (size_t b = 0; b < blocks_.size(); ++b) {
        if (done[b]) continue;
        double f = 0;
        for (int p = blocks_[b].first; p <= blocks_[b].second; ++p)
          if (in[static_cast<size_t>(p)]) f += cost(p);
        if (f == 0) {
          done[b] = true;
          continue;
        }
        std::vector<bool> was = in;
        for (int p = blocks_[b].first; p <= blocks_[b].second; ++p)
          in[static_cast<size_t>(p)] = false;
        const bool fits = peak(set_in()) <= budget_;
        in = std::move(was);
        if (!fits) {
          done[b] = true;  // storing more blocks only raises the peak: it stays out
          continue;
        }
        if (f > best_cost) best = b, best_cost = f;
      }
      if (best == blocks_.size()) break;
      done[best] = true;
      std::vector<int> taken;
      for (int p = blocks_[best].first; p <= blocks_[best].second; ++p)
        if (in[static_cast<size_t>(p)]) taken.push_back(p), in[static_cast<size_t>(p)] = false;
      stored.push_back(std::move(taken));
    }
    std::vector<std::pair<double, int>> order;
    for (size_t p = 0; p < in.size(); ++p) {
      if (!in[p] || cost(static_cast<int>(p)) <= 0) continue;
      size_t bytes = 0;
      for (int v : step_.ops[p].outputs) bytes += step_.value(v).meta.bytes();
      order.emplace_back(cost(static_cast<int>(p)) / (static_cast<double>(bytes) + 1.0),
                         static_cast<int>(p));
    }
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [ratio, p] : order) {
      in[static_cast<size_t>(p)] = false;
      if (peak(set_in()) > budget_)
        in[static_cast<size_t>(p)] = true;
      else
        stored.push_back({p});
    }
    // The real plan packs less tightly than the live bytes: the longest prefix that fits
    // (often all of them: tried first).
    size_t lo = 0, hi = stored.size();
    Candidate best = c;
    for (bool first = true; lo < hi; first = false) {
      const size_t mid = first ? hi : (lo + hi + 1) / 2;
      std::fill(in.begin(), in.end(), false);
      for (int p : c.rebuild) in[static_cast<size_t>(p)] = true;
      for (size_t k = 0; k < mid; ++k)
        for (int p : stored[k]) in[static_cast<size_t>(p)] = false;
      std::vector<int> trial = set_in();
      if (const size_t a = arena(trial); a <= budget_) {
        lo = mid;
        best = Candidate{std::move(trial), a};
      } else {
        hi = mid - 1;
      }
    }
    c = std::move(best);
  }

  const Step& step_;
  const LivenessOptions& options_;
  const size_t alignment_, budget_;
  RebuildFit& fit_;
  const std::vector<int> cuts_, all_;
  std::vector<std::pair<int, int>> blocks_;
  std::vector<int> block_of_;
};

}  // namespace

void fit_segments(const Step& step, const LivenessOptions& options, size_t alignment, size_t budget,
                  RebuildFit& fit) {
  Segments(step, options, alignment, budget, fit).run();
}

}  // namespace frugal
