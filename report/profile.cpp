#include "report/profile.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "autograd/tape.h"
#include "core/error.h"

namespace frugal {
namespace {

OpTimes scaled(const OpTimes& t, double by) {
  return {t.forward_s * by, t.backward_s * by, t.rebuild_s * by, t.update_s * by};
}
void add(OpTimes& to, const OpTimes& t) {
  to.forward_s += t.forward_s, to.backward_s += t.backward_s;
  to.rebuild_s += t.rebuild_s, to.update_s += t.update_s;
}
bool slower(const ProfileRow& a, const ProfileRow& b) {
  return a.per_step.total() > b.per_step.total();
}

// "#12 conv2d (32,64,56,56) layer1.0": index, kind, first output's shape, scope or origin.
std::string describe(const Tape& tape, size_t k) {
  const OpNode& node = tape.ops()[k];
  std::ostringstream s;
  s << "#" << k << " " << node.op->name();
  if (!node.outputs.empty())
    s << " " << tape.values()[static_cast<size_t>(node.outputs[0])].meta.shape;
  const std::string& where = node.scope.empty() ? node.where : node.scope;
  if (!where.empty()) s << " " << where;
  return s.str();
}

std::string row_text(const ProfileRow& r, double total) {
  const OpTimes& t = r.per_step;
  char line[256];
  std::snprintf(line, sizeof line, "%6.1f%% %10.2f %10.2f %10.2f %10.2f %10.2f  ",
                total > 0 ? 100 * t.total() / total : 0.0, 1e3 * t.total(), 1e3 * t.forward_s,
                1e3 * t.backward_s, 1e3 * t.rebuild_s, 1e3 * t.update_s);
  return line + r.what + (r.ops > 1 ? " (" + std::to_string(r.ops) + " ops)" : "") + "\n";
}

nlohmann::ordered_json times_json(const OpTimes& t) {
  return {{"total_s", t.total()},
          {"forward_s", t.forward_s},
          {"backward_s", t.backward_s},
          {"rebuild_s", t.rebuild_s},
          {"update_s", t.update_s}};
}

}  // namespace

Profile profile_of(const Tape& tape, const Executor& ex, int top) {
  FRUGAL_CHECK(ex.options().profile && ex.profiled_steps() > 0,
               "profile: the executor timed no step (ExecutorOptions::profile, then a step)");
  const std::vector<OpTimes>& times = ex.op_times();
  FRUGAL_CHECK(times.size() == tape.ops().size(), "profile: the executor ran another tape");
  Profile p;
  p.steps = ex.profiled_steps();
  const double per = 1.0 / p.steps;
  std::map<std::string, ProfileRow> kinds;
  std::vector<ProfileRow> ops;
  for (size_t k = 0; k < times.size(); ++k) {
    const OpTimes t = scaled(times[k], per);
    ProfileRow& kind = kinds[tape.ops()[k].op->name()];
    kind.what = tape.ops()[k].op->name();
    ++kind.ops;
    add(kind.per_step, t);
    ops.push_back({describe(tape, k), 1, t});
    add(p.all, t);
  }
  p.other = scaled(ex.other_times(), per);
  add(p.all, p.other);
  for (auto& [name, row] : kinds) p.kinds.push_back(row);
  std::stable_sort(p.kinds.begin(), p.kinds.end(), slower);
  std::stable_sort(ops.begin(), ops.end(), slower);
  ops.resize(std::min(ops.size(), static_cast<size_t>(std::max(top, 0))));
  p.slowest = std::move(ops);
  return p;
}

std::string profile_text(const Profile& p) {
  std::string s = "profile: ms per step, over " + std::to_string(p.steps) +
                  " step(s), each op's pass timed alone\n";
  const std::string head = "  share      total    forward   backward    rebuild     update  ";
  s += head + "op kind\n";
  const double total = p.all.total();
  for (const ProfileRow& r : p.kinds) s += row_text(r, total);
  if (p.other.total() > 0) s += row_text({"(updates at the step's end)", 0, p.other}, total);
  s += row_text({"(all)", 0, p.all}, total);
  if (!p.slowest.empty()) {
    s += "slowest ops:\n" + head + "op\n";
    for (const ProfileRow& r : p.slowest) s += row_text(r, total);
  }
  return s;
}

nlohmann::ordered_json profile_json(const Profile& p) {
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array(),
                         slowest = nlohmann::ordered_json::array();
  for (const ProfileRow& r : p.kinds) {
    nlohmann::ordered_json j{{"kind", r.what}, {"ops", r.ops}};
    j.update(times_json(r.per_step));
    kinds.push_back(j);
  }
  for (const ProfileRow& r : p.slowest) {
    nlohmann::ordered_json j{{"op", r.what}};
    j.update(times_json(r.per_step));
    slowest.push_back(j);
  }
  return {{"steps", p.steps},
          {"all", times_json(p.all)},
          {"kinds", kinds},
          {"slowest", slowest},
          {"other", times_json(p.other)}};
}

}  // namespace frugal
