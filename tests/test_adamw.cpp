// AdamW, fused into backward like SGD: the kernel against torch.optim.AdamW's algorithm in
// long double (f64 within 1e-12, f32 within 1e-5), a hand case, planned == baseline bitwise
// through the trainer (weights, both moments, BatchNorm statistics), checkpoints that resume
// bit for bit, and the errors bad settings and mismatched checkpoints give.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "check/gradcheck.h"
#include "core/cpu/cpu_backend.h"
#include "data/synthetic.h"
#include "tests/temp_dir.h"
#include "train/trainer.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// torch.optim.AdamW's documented algorithm, one element, in long double.
struct Reference {
  long double w, m = 0, v = 0;
  void step(long double g, const OptimizerConfig& c) {
    const long double t = static_cast<long double>(c.step);
    w -= static_cast<long double>(c.lr) * c.weight_decay * w;
    m = c.beta1 * m + (1 - static_cast<long double>(c.beta1)) * g;
    v = c.beta2 * v + (1 - static_cast<long double>(c.beta2)) * g * g;
    const long double mhat = m / (1 - std::pow(static_cast<long double>(c.beta1), t));
    const long double vhat = v / (1 - std::pow(static_cast<long double>(c.beta2), t));
    w -= c.lr * mhat / (std::sqrt(vhat) + c.eps);
  }
};

double element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::f32 ? t.data<float>()[i] : t.data<double>()[i];
}

// Every parameter, running statistic and both moments of two stores, byte for byte.
void check_same_state(ParamStore& a, ParamStore& b) {
  std::vector<Parameter*> pa = a.all(), pb = b.all();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(pa[i]->name);
    for (Tensor Parameter::*t :
         {&Parameter::value, &Parameter::momentum, &Parameter::second_moment}) {
      const Tensor &x = pa[i]->*t, &y = pb[i]->*t;
      REQUIRE(x.defined() == y.defined());
      if (x.defined()) CHECK(std::memcmp(x.raw(), y.raw(), x.bytes()) == 0);
    }
  }
}

std::vector<float> run_steps(Trainer& t, int n) {
  std::vector<float> losses;
  for (int i = 0; i < n; ++i) losses.push_back(t.step().loss);
  return losses;
}

}  // namespace

TEST_CASE("adamw: the kernel follows torch.optim.AdamW's algorithm over several steps") {
  for (DType dtype : {DType::f64, DType::f32}) {
    CAPTURE(dtype_name(dtype));
    const int64_t n = 257;
    Tensor w = random_tensor({n}, 1, -1, 1, dtype);
    Tensor m = Tensor::zeros({n}, dtype), v = Tensor::zeros({n}, dtype);
    std::vector<Reference> ref;
    for (int64_t i = 0; i < n; ++i) ref.push_back({element(w, i)});
    for (int step = 1; step <= 5; ++step) {
      const Tensor g = random_tensor({n}, 10 + step, -2, 2, dtype);
      const OptimizerConfig c{.lr = 0.01,
                              .weight_decay = 0.05,
                              .kind = OptimizerKind::adamw,
                              .beta1 = 0.8,
                              .beta2 = 0.99,
                              .eps = 1e-6,
                              .step = step};
      cpu_backend().adamw_step(w, g, m, v, c);
      for (int64_t i = 0; i < n; ++i) ref[static_cast<size_t>(i)].step(element(g, i), c);
    }
    const double tol = dtype == DType::f64 ? 1e-12 : 1e-5;
    for (int64_t i = 0; i < n; ++i) {
      const Reference& r = ref[static_cast<size_t>(i)];
      REQUIRE(element(w, i) == doctest::Approx(static_cast<double>(r.w)).epsilon(tol));
      REQUIRE(element(m, i) == doctest::Approx(static_cast<double>(r.m)).epsilon(tol));
      REQUIRE(element(v, i) == doctest::Approx(static_cast<double>(r.v)).epsilon(tol));
    }
  }
}

TEST_CASE("adamw: by hand, the first step moves each weight by lr against its gradient's sign") {
  // Step 1 from zero moments: m^ = g, v^ = g^2, so w' = w (1 - lr wd) - lr g / (|g| + eps).
  Tensor w = Tensor::empty({3}, DType::f64), g = Tensor::empty({3}, DType::f64);
  const double w0[] = {1.0, -2.0, 0.5}, g0[] = {0.3, -4.0, 0.0};
  std::memcpy(w.raw(), w0, sizeof w0);
  std::memcpy(g.raw(), g0, sizeof g0);
  Tensor m = Tensor::zeros({3}, DType::f64), v = Tensor::zeros({3}, DType::f64);
  cpu_backend().adamw_step(w, g, m, v,
                           {.lr = 0.1, .weight_decay = 0.5, .kind = OptimizerKind::adamw});
  const double* y = w.data<double>();
  CHECK(y[0] == doctest::Approx(1.0 * 0.95 - 0.1 * 0.3 / (0.3 + 1e-8)).epsilon(1e-14));
  CHECK(y[1] == doctest::Approx(-2.0 * 0.95 + 0.1 * 4.0 / (4.0 + 1e-8)).epsilon(1e-14));
  CHECK(y[2] == 0.5 * 0.95);  // no gradient: decay alone
  CHECK(m.data<double>()[1] == doctest::Approx(-0.4));
  CHECK(v.data<double>()[1] == doctest::Approx(0.016));
  CHECK_THROWS_WITH_AS(
      cpu_backend().adamw_step(w, g, m, v, {.kind = OptimizerKind::adamw, .step = 0}),
      "adamw: step 0 must count from 1", Error);
  Tensor short_v = Tensor::zeros({2}, DType::f64);
  CHECK_THROWS_WITH_AS(cpu_backend().adamw_step(w, g, m, short_v, {.kind = OptimizerKind::adamw}),
                       "adamw: weight [3], gradient [3], moments [3] and [2] must match", Error);
}

TEST_CASE("adamw: planned and baseline training are bitwise equal, moments included") {
  // One batch of 8, six epochs: the loss must fall as the net fits it.
  const Dataset train = synthetic_dataset({1, 28, 28}, 8, 10, 5);
  const Dataset test = synthetic_dataset({1, 28, 28}, 10, 10, 6);
  TrainOptions o{.model = "resnet20",
                 .epochs = 6,
                 .batch = 8,
                 .lr = 0.002,
                 .weight_decay = 0.01,
                 .optimizer = OptimizerKind::adamw,
                 .warmup = 2,
                 .threads = 2,
                 .eval_batch = 5};
  o.memory = MemoryMode::baseline;
  Trainer base(o, train, test);
  o.memory = MemoryMode::planned;
  Trainer planned(o, train, test);
  const std::vector<float> a = run_steps(base, 6), b = run_steps(planned, 6);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  check_same_state(base.params(), planned.params());
  CHECK(base.evaluate() == planned.evaluate());
  // Both moments exist for every trainable parameter, and the loss falls.
  CHECK(b.back() < b.front());
  for (Parameter* p : planned.params().all())
    if (p->trainable) CHECK(p->second_moment.defined());
}

TEST_CASE("adamw: a resumed run continues bit for bit, SGD's checkpoint is refused") {
  TempDir dir("frugal-adamw");
  const Dataset train = synthetic_dataset({1, 28, 28}, 9, 10, 1);
  const Dataset test = synthetic_dataset({1, 28, 28}, 5, 10, 2);
  const TrainOptions o{.model = "small-cnn",
                       .epochs = 3,
                       .batch = 2,
                       .lr = 0.003,
                       .optimizer = OptimizerKind::adamw,
                       .beta2 = 0.98,
                       .warmup = 3,
                       .seed = 4,
                       .threads = 2,
                       .eval_batch = 2};
  Trainer first(o, train, test);
  run_steps(first, 5);
  first.save(dir / "adamw.safetensors");
  const std::vector<float> expected = run_steps(first, 5);
  Trainer resumed(o, train, test);
  resumed.resume(dir / "adamw.safetensors");
  const std::vector<float> got = run_steps(resumed, 5);
  CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
  check_same_state(first.params(), resumed.params());

  TrainOptions sgd = o;
  sgd.optimizer = OptimizerKind::sgd;
  Trainer wrong(sgd, train, test);
  CHECK(error_message([&] { wrong.resume(dir / "adamw.safetensors"); }) ==
        dir / "adamw.safetensors" +
            ": saved by optimizer 'adamw'; this run uses sgd (resume with the same --optimizer)");
}

TEST_CASE("adamw: settings out of range are errors naming the option") {
  const Dataset d = synthetic_dataset({1, 28, 28}, 4, 10, 1);
  auto error_for = [&](TrainOptions o) { return error_message([&] { Trainer(o, d, d); }); };
  CHECK(error_for({.batch = 2, .optimizer = OptimizerKind::adamw, .beta1 = 1}) ==
        "train: AdamW's betas (--beta1 1, --beta2 0.999) must lie in [0, 1)");
  CHECK(error_for({.batch = 2, .optimizer = OptimizerKind::adamw, .beta2 = std::nan("")}) ==
        "train: AdamW's betas (--beta1 0.9, --beta2 nan) must lie in [0, 1)");
  CHECK(error_for({.batch = 2, .optimizer = OptimizerKind::adamw, .eps = 0}) ==
        "train: AdamW's eps (--eps) 0 must be a finite number above 0");
}
