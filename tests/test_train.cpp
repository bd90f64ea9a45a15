// The training loop as a library: baseline and planned memory give the same losses bit for
// bit, a resumed run continues exactly where a saved one stopped (momentum, BatchNorm
// statistics, schedule, shuffling, augmentation), an ImageNet-size model overfits two
// synthetic samples, and the schedule and bad options behave as documented.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "data/safetensors.h"
#include "data/synthetic.h"
#include "tests/temp_dir.h"
#include "train/trainer.h"
#include "train/weights.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::vector<uint32_t> run_steps(Trainer& t, int n) {
  std::vector<uint32_t> losses;
  for (int i = 0; i < n; ++i) losses.push_back(bits(t.step().loss));
  return losses;
}

// Every parameter, running statistic and momentum buffer of two stores, byte for byte.
bool same_state(ParamStore& a, ParamStore& b) {
  std::vector<Parameter*> pa = a.all(), pb = b.all();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    const Parameter &x = *pa[i], &y = *pb[i];
    if (x.name != y.name || x.momentum.defined() != y.momentum.defined()) return false;
    if (std::memcmp(x.value.raw(), y.value.raw(), x.meta.bytes()) != 0) return false;
    if (x.momentum.defined() && std::memcmp(x.momentum.raw(), y.momentum.raw(), x.meta.bytes()))
      return false;
    if (x.second_moment.defined() != y.second_moment.defined()) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("train: baseline and planned memory give bitwise equal losses for 50 steps") {
  const Dataset train = synthetic_dataset({1, 28, 28}, 16 * 25, 10, 5);
  const Dataset test = synthetic_dataset({1, 28, 28}, 30, 10, 6);
  // Test set 30 = 3 x 8 + 6: the remainder runs on its own executor.
  TrainOptions o{.model = "small-cnn",
                 .epochs = 2,
                 .batch = 16,
                 .lr = 0.05,
                 .warmup = 10,
                 .threads = 2,
                 .eval_batch = 8};
  o.memory = MemoryMode::baseline;
  Trainer base(o, train, test);
  o.memory = MemoryMode::planned;
  Trainer planned(o, train, test);
  CHECK(planned.executor().memory_bytes() < base.executor().memory_bytes());
  REQUIRE(base.total_steps() == 50);
  const std::vector<uint32_t> a = run_steps(base, 50), b = run_steps(planned, 50);
  CHECK(a == b);
  CHECK(same_state(base.params(), planned.params()));
  CHECK(base.done());
  CHECK(base.evaluate() == planned.evaluate());
  CHECK_THROWS_WITH_AS(base.step(), "train: all 50 steps are done", Error);
}

TEST_CASE("train: rebuilding op outputs gives the baseline's losses, weights and accuracy") {
  // ResNet-20 at 16 x 16 (BatchNorm, ReLU and adds rebuilt), 12 steps, every rebuild and the
  // cheap ones, against baseline memory.
  const Dataset train = synthetic_dataset({3, 16, 16}, 8 * 12, 10, 5);
  const Dataset test = synthetic_dataset({3, 16, 16}, 16, 10, 6);
  TrainOptions o{.model = "resnet20", .batch = 8, .lr = 0.05, .threads = 2, .eval_batch = 8};
  o.memory = MemoryMode::baseline;
  Trainer base(o, train, test);
  const std::vector<uint32_t> losses = run_steps(base, 12);
  for (Recompute r : {Recompute::cheap, Recompute::all}) {
    CAPTURE(recompute_name(r));
    o.memory = MemoryMode::planned;
    o.recompute = r;
    Trainer rebuilt(o, train, test);
    CHECK(run_steps(rebuilt, 12) == losses);
    CHECK(same_state(base.params(), rebuilt.params()));
    CHECK(base.evaluate() == rebuilt.evaluate());
  }
  o.memory = MemoryMode::baseline;
  o.recompute = Recompute::cheap;
  CHECK_THROWS_WITH_AS(Trainer(o, train, test),
                       "train: --recompute cheap rebuilds activations in planned memory; use "
                       "--memory planned",
                       Error);
}

TEST_CASE("train: a resumed run continues bit for bit where the saved one stopped") {
  // ResNet-20 (BatchNorm running statistics, momentum) on 1x28x28 images placed in its 3x32x32
  // input with crops and flips; saved mid-epoch, during the warm-up and cosine schedule.
  TempDir dir("frugal-train");
  const Dataset train = synthetic_dataset({1, 28, 28}, 9, 10, 1);
  const Dataset test = synthetic_dataset({1, 28, 28}, 5, 10, 2);
  const TrainOptions o{.model = "resnet20",
                       .epochs = 3,
                       .batch = 2,
                       .lr = 0.05,
                       .warmup = 3,
                       .augment = true,
                       .seed = 4,
                       .threads = 2,
                       .eval_batch = 2};
  Trainer first(o, train, test);
  REQUIRE(first.steps_per_epoch() == 4);
  run_steps(first, 6);
  first.save(dir / "run.safetensors");
  const std::vector<uint32_t> expected = run_steps(first, 6);

  Trainer resumed(o, train, test);
  resumed.resume(dir / "run.safetensors");
  CHECK(resumed.global_step() == 6);
  CHECK(resumed.epoch() == 1);
  CHECK(resumed.totals().steps == 2);
  CHECK(run_steps(resumed, 6) == expected);
  CHECK(same_state(first.params(), resumed.params()));
  CHECK(first.totals().loss_sum == resumed.totals().loss_sum);
  CHECK(first.evaluate() == resumed.evaluate());

  TrainOptions other = o;
  other.batch = 3;
  Trainer wrong(other, train, test);
  CHECK(error_message([&] { wrong.resume(dir / "run.safetensors"); }) ==
        dir / "run.safetensors" +
            ": saved with batch 2 and 4 steps per epoch; this run has batch 3 and 3 (resume "
            "with the same --batch and --steps)");
}

TEST_CASE("train: loss falls when ResNet-18 overfits two synthetic ImageNet-size samples") {
  const Dataset two = synthetic_dataset({3, 224, 224}, 2, 1000, 3);
  const TrainOptions o{.model = "resnet18",
                       .epochs = 8,
                       .batch = 2,
                       .lr = 0.01,
                       .schedule = Schedule::constant,
                       .warmup = 0,
                       .threads = 2};
  Trainer t(o, two, two);
  std::vector<float> losses;
  while (!t.done()) losses.push_back(t.step().loss);
  MESSAGE("resnet18 losses: first ", losses.front(), ", last ", losses.back());
  CHECK(losses.front() > 5.0f);  // about ln 1000 = 6.9
  CHECK(losses.back() < 0.5f * losses.front());
}

TEST_CASE("train: learning-rate schedules") {
  TrainOptions o{.lr = 0.1, .warmup = 0};
  o.schedule = Schedule::step;
  CHECK(learning_rate(o, 0, 100) == 0.1);
  CHECK(learning_rate(o, 49, 100) == 0.1);
  CHECK(learning_rate(o, 50, 100) == doctest::Approx(0.01));
  CHECK(learning_rate(o, 75, 100) == doctest::Approx(0.001));
  o.schedule = Schedule::cosine;
  CHECK(learning_rate(o, 0, 100) == 0.1);
  CHECK(learning_rate(o, 50, 100) == doctest::Approx(0.05));
  CHECK(learning_rate(o, 99, 100) == doctest::Approx(0.1 * 0.5 * (1 + std::cos(M_PI * 0.99))));
  o.warmup = 4;
  CHECK(learning_rate(o, 0, 100) == doctest::Approx(0.025));
  CHECK(learning_rate(o, 3, 100) == doctest::Approx(0.1 * 0.5 * (1 + std::cos(M_PI * 0.03))));
  o.schedule = Schedule::constant;
  CHECK(learning_rate(o, 1, 100) == doctest::Approx(0.05));
  CHECK(learning_rate(o, 80, 100) == 0.1);
  CHECK(parse_schedule("cosine") == Schedule::cosine);
  CHECK_THROWS_WITH_AS(parse_schedule("linear"),
                       "unknown schedule 'linear'; valid: constant, step, cosine", Error);
}

TEST_CASE("train: bad options and files") {
  const Dataset d = synthetic_dataset({1, 28, 28}, 4, 10, 1);
  CHECK(error_message([&] { Trainer(TrainOptions{.batch = 8}, d, d); }) ==
        "train: batch 8 exceeds the 4 training images");
  CHECK(error_message([&] {
          Trainer(TrainOptions{.model = "lenet"}, d, d);
        }).find("unknown model 'lenet'") == 0);
  TempDir dir("frugal-train");
  write_bytes(dir / "w.safetensors",
              {8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '});
  Trainer t(TrainOptions{.batch = 2}, d, d);
  CHECK(error_message([&] { t.resume(dir / "w.safetensors"); }) ==
        dir / "w.safetensors" +
            ": not a training checkpoint (no 'global_step' in __metadata__); `frugal eval "
            "--weights` reads plain weights");
  Safetensors meta;
  meta.metadata = {{"global_step", "12x"}};
  save_safetensors(dir / "meta.safetensors", meta);
  CHECK(error_message([&] { t.resume(dir / "meta.safetensors"); }) ==
        dir / "meta.safetensors" +
            ": __metadata__ global_step '12x' is not a whole number in 0..2");
}

TEST_CASE("train: options out of range are errors naming the option") {
  const Dataset d = synthetic_dataset({1, 28, 28}, 4, 10, 1);
  auto error_for = [&](TrainOptions o) { return error_message([&] { Trainer(o, d, d); }); };
  CHECK(error_for({.batch = 2, .lr = std::nan("")}) ==
        "train: learning rate (--lr) nan must be a finite number above 0");
  CHECK(error_for({.batch = 2, .lr = -1}) ==
        "train: learning rate (--lr) -1 must be a finite number above 0");
  CHECK(error_for({.batch = 2, .momentum = INFINITY}) ==
        "train: momentum (--momentum) inf must lie in [0, 1)");
  CHECK(error_for({.batch = 2, .weight_decay = -1e-4}) ==
        "train: weight decay (--weight-decay) -0.0001 must be a finite number >= 0");
  CHECK(error_for({.batch = 2, .threads = 1000000000}) ==
        "train: threads (--threads) 1000000000 must lie in 0..4096 (0: all cores)");
}

// Every counter of a checkpoint is range-checked on load: a bad one is an error naming it, and
// the trainer is left as it was.
TEST_CASE("train: a checkpoint's counters out of range are errors naming the field") {
  TempDir dir("frugal-train");
  const Dataset d = synthetic_dataset({1, 28, 28}, 8, 10, 1);
  const TrainOptions o{.epochs = 2, .batch = 2, .threads = 2};
  Trainer t(o, d, d);
  t.step();
  t.save(dir / "good.safetensors");
  const Safetensors good = load_safetensors(dir / "good.safetensors");
  auto resume_with = [&](const std::string& key, const std::string& value) {
    Safetensors bad = good;
    bad.metadata[key] = value;
    save_safetensors(dir / "bad.safetensors", bad);
    Trainer fresh(o, d, d);
    const std::string m = error_message([&] { fresh.resume(dir / "bad.safetensors"); });
    CHECK(fresh.global_step() == 0);
    return m;
  };
  const std::string p = dir / "bad.safetensors";
  CHECK(resume_with("global_step", "99999999999999999999") ==
        p + ": __metadata__ global_step '99999999999999999999' is not a whole number in 0..8");
  CHECK(resume_with("global_step", "9") ==
        p + ": __metadata__ global_step '9' is not a whole number in 0..8");
  CHECK(resume_with("global_step", "-1") ==
        p + ": __metadata__ global_step '-1' is not a whole number in 0..8");
  CHECK(resume_with("global_step", "1.5") ==
        p + ": __metadata__ global_step '1.5' is not a whole number in 0..8");
  CHECK(resume_with("epoch_steps", "5") ==
        p + ": __metadata__ epoch_steps '5' is not a whole number in 0..4");
  CHECK(resume_with("epoch_correct", "3") ==
        p + ": __metadata__ epoch_correct '3' is not a whole number in 0..2");
  CHECK(resume_with("epoch_loss_sum", "inf") ==
        p + ": __metadata__ epoch_loss_sum 'inf' is not a finite number >= 0");
  CHECK(resume_with("seed", "18446744073709551616") ==
        p + ": __metadata__ seed '18446744073709551616' is not a whole number in 0..2^64-1");
  CHECK(resume_with("format", "pt") == p + ": __metadata__ format 'pt' is not frugal-checkpoint");
  Trainer fresh(o, d, d);
  fresh.resume(dir / "good.safetensors");
  CHECK(fresh.global_step() == 1);
}

namespace {
// The training images with one NaN pixel in every image.
Dataset with_nan_pixels(Dataset d) {
  const int64_t n = d.size(), per_image = d.images.numel() / n;
  for (int64_t i = 0; i < n; ++i)
    d.images.data<float>()[i * per_image + 17] = std::numeric_limits<float>::quiet_NaN();
  return d;
}
}  // namespace

TEST_CASE("train: a non-finite loss stops training with an error and writes no checkpoint") {
  TempDir dir("frugal-train");
  const Dataset test = synthetic_dataset({1, 28, 28}, 8, 10, 6);
  const TrainOptions o{.batch = 8, .warmup = 0, .threads = 2, .eval_batch = 8};
  // The loop of `frugal train --save`: steps, then a checkpoint at the epoch's end.
  auto run = [&](Trainer& t) {
    while (!t.done()) {
      do t.step();
      while (t.step_in_epoch() != 0);
      t.save(dir / "ckpt.safetensors");
    }
  };
  SUBCASE("one NaN pixel per image: the first step's loss is NaN, no SGD update runs") {
    const Dataset train = with_nan_pixels(synthetic_dataset({1, 28, 28}, 32, 10, 5));
    Trainer t(o, train, test);
    Trainer untouched(o, train, test);
    CHECK(error_message([&] { run(t); }) ==
          "train: the loss of step 1 of 4 (epoch 1) is nan; stopped before its SGD update. "
          "Lower --lr, look for NaN or inf in the data, or run with --check-finite to name the "
          "op that first wrote one");
    CHECK(t.global_step() == 0);
    // The weights are the initial ones (the batch norm running statistics took the NaN in).
    std::vector<Parameter*> a = t.params().all(), b = untouched.params().all();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i]->trainable) CHECK(bitwise_equal(a[i]->value, b[i]->value));
    // check_finite names the input instead.
    TrainOptions checked = o;
    checked.check_finite = true;
    Trainer c(checked, train, test);
    const std::string m = error_message([&] { c.step(); });
    CHECK(m.starts_with("check_finite: input 'images' holds nan at element 17 [0,0,0,17] "));
  }
  SUBCASE("an absurd learning rate: the loss overflows within a few steps") {
    const Dataset train = synthetic_dataset({1, 28, 28}, 32, 10, 5);
    TrainOptions absurd = o;
    absurd.lr = 1e30;
    absurd.schedule = Schedule::constant;
    Trainer t(absurd, train, test);
    const std::string m = error_message([&] { run(t); });
    CHECK(m.find("train: the loss of step ") == 0);
    CHECK(m.find(" (epoch 1) is ") != std::string::npos);
  }
  CHECK(!std::filesystem::exists(dir / "ckpt.safetensors"));
  CHECK(!std::filesystem::exists(dir / "ckpt.safetensors.tmp"));
}

TEST_CASE("train: a checkpoint of non-finite weights is refused and leaves no file") {
  TempDir dir("frugal-train");
  const Dataset d = synthetic_dataset({1, 28, 28}, 8, 10, 1);
  Trainer t(TrainOptions{.batch = 4, .threads = 2}, d, d);
  t.step();
  t.save(dir / "good.safetensors");  // finite: written
  Parameter* p = t.params().all().back();
  p->value.data<float>()[0] = std::numeric_limits<float>::infinity();
  const std::string m = error_message([&] { t.save(dir / "bad.safetensors"); });
  CHECK(m.find("weights: '" + p->name + "' ") == 0);
  CHECK(m.find(" holds inf at element 0; non-finite weights are not written") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "good.safetensors"));
  CHECK(!std::filesystem::exists(dir / "bad.safetensors"));
  CHECK(!std::filesystem::exists(dir / "bad.safetensors.tmp"));
}

TEST_CASE("train: a checkpoint says how its images were read, eval and predict follow it") {
  TempDir dir("frugal-train-resize");
  Dataset train = synthetic_dataset({1, 20, 20}, 4, 10, 1);
  train.resize = true;  // 1x20x20 resampled to fill resnet20's 3x32x32
  Trainer t({.model = "resnet20", .batch = 2, .threads = 2, .steps = 1, .eval_batch = 2}, train,
            train);
  t.step();
  t.save(dir / "r.safetensors");
  Safetensors file = load_safetensors(dir / "r.safetensors");
  CHECK(saved_resize(file, "r"));
  CHECK(saved_image_size(file, "r") == 0);
  file.metadata["resize"] = "yes";
  file.metadata["image_size"] = "99999";
  CHECK(error_message([&] { saved_resize(file, "r"); }) ==
        "r: metadata resize 'yes' is neither true nor false");
  CHECK(error_message([&] { saved_image_size(file, "r"); }) ==
        "r: metadata image_size '99999' is not a side in 1..4096");
}
