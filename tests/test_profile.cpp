// The executor's per-op times (ExecutorOptions::profile) and the profile built from them
// (report/profile.h, `frugal bench --profile`): every op timed in the passes it runs, steps
// counted from the last reset, the kinds adding up to the step, and the same bits as a run
// without the profile.
#include <doctest/doctest.h>

#include <cstring>

#include "check/gradcheck.h"
#include "core/error.h"
#include "models/step.h"
#include "report/profile.h"
#include "run/executor.h"

using namespace frugal;

namespace {

struct Run {
  ParamStore store{1};
  Tape tape{store};
  ModelStep step;
  std::unique_ptr<Executor> ex;
  Run(Mode mode, bool profile, const char* model = "small-cnn",
      Recompute recompute = Recompute::none) {
    step = record_model_step(tape, find_model(model), 4, mode);
    ExecutorOptions o{.mode = mode, .memory = MemoryMode::planned, .keep = {step.out()}};
    o.recompute = recompute;
    if (mode == Mode::training) o.optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9};
    o.profile = profile;
    ex = std::make_unique<Executor>(tape, cpu_backend(), o);
  }
  void steps(int n) {
    for (int s = 0; s < n; ++s) {
      Tensor& x = ex->input(step.images);
      const Tensor r = testing::random_tensor(x.shape(), 7 + s, -1, 1, x.dtype());
      std::memcpy(x.raw(), r.raw(), x.bytes());
      if (step.labels.valid()) {
        Tensor& l = ex->input(step.labels);
        for (int64_t i = 0; i < l.numel(); ++i) l.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
      }
      ex->forward();
      if (step.loss.valid()) ex->backward(step.loss);
    }
  }
};

}  // namespace

TEST_CASE("profile: each op's passes timed, the kinds adding up to the step") {
  Run run(Mode::training, true);
  run.steps(1);
  run.ex->reset_op_times();  // a warm-up left out
  CHECK(run.ex->profiled_steps() == 0);
  CHECK_THROWS_AS(profile_of(run.tape, *run.ex), Error);
  run.steps(2);
  CHECK(run.ex->profiled_steps() == 2);
  const std::vector<OpTimes>& t = run.ex->op_times();
  REQUIRE(t.size() == run.tape.ops().size());
  double forward = 0, backward = 0, update = 0, rebuild = 0;
  for (const OpTimes& o : t)
    forward += o.forward_s, backward += o.backward_s, update += o.update_s, rebuild += o.rebuild_s;
  CHECK(forward > 0);
  CHECK(backward > 0);
  CHECK(update > 0);    // the SGD steps of the parameters each op's backward finished
  CHECK(rebuild == 0);  // nothing recomputed
  const Profile p = profile_of(run.tape, *run.ex, 3);
  CHECK(p.steps == 2);
  int ops = 0;
  double kinds = 0;
  for (const ProfileRow& r : p.kinds) ops += r.ops, kinds += r.per_step.total();
  CHECK(ops == static_cast<int>(run.tape.ops().size()));
  CHECK(kinds + p.other.total() == doctest::Approx(p.all.total()).epsilon(1e-12));
  CHECK(p.all.forward_s == doctest::Approx(forward / 2).epsilon(1e-12));
  REQUIRE(p.slowest.size() == 3);
  CHECK(p.slowest[0].per_step.total() >= p.slowest[1].per_step.total());
  CHECK(p.slowest[1].per_step.total() >= p.slowest[2].per_step.total());
  for (size_t i = 1; i < p.kinds.size(); ++i)
    CHECK(p.kinds[i - 1].per_step.total() >= p.kinds[i].per_step.total());
  const std::string text = profile_text(p);
  CHECK(text.find("conv2d") != std::string::npos);
  CHECK(text.find("(all)") != std::string::npos);
  CHECK(text.find("slowest ops:") != std::string::npos);
  const nlohmann::ordered_json j = profile_json(p);
  CHECK(j["steps"] == 2);
  CHECK(j["kinds"].size() == p.kinds.size());
  CHECK(j["slowest"].size() == 3);
}

TEST_CASE("profile: inference times forward only, no profile without the option") {
  Run inference(Mode::inference, true);
  inference.steps(2);
  CHECK(inference.ex->profiled_steps() == 2);
  for (const OpTimes& o : inference.ex->op_times()) CHECK(o.backward_s + o.update_s == 0);
  CHECK(profile_of(inference.tape, *inference.ex).all.forward_s > 0);
  Run plain(Mode::training, false);
  plain.steps(1);
  CHECK_THROWS_WITH_AS(profile_of(plain.tape, *plain.ex), doctest::Contains("timed no step"),
                       Error);
}

TEST_CASE("profile: a profiled run gives the same bits") {
  Run a(Mode::training, true), b(Mode::training, false);
  a.steps(2);
  b.steps(2);
  const std::vector<Parameter*> pa = a.store.all(), pb = b.store.all();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i]->name);
    CHECK(std::memcmp(pa[i]->value.raw(), pb[i]->value.raw(), pa[i]->value.bytes()) == 0);
  }
}

TEST_CASE("profile: ops rebuilt in backward have their rebuilds timed") {
  Run run(Mode::training, true, "resnet20", Recompute::cheap);
  run.steps(1);
  int rebuilt = 0;
  for (const auto& at : run.ex->liveness().rebuilds_at) rebuilt += static_cast<int>(at.size());
  REQUIRE(rebuilt > 0);  // --recompute cheap rebuilds some of ResNet-20's BatchNorms and ReLUs
  double rebuild = 0;
  for (const OpTimes& o : run.ex->op_times()) rebuild += o.rebuild_s;
  CHECK(rebuild > 0);
  CHECK(profile_of(run.tape, *run.ex).all.rebuild_s == doctest::Approx(rebuild).epsilon(1e-12));
}
