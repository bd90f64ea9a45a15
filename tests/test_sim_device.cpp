// The simulated device (core/sim/): host code that touches its memory outside the backend faults
// at once, and the executor (baseline and planned), training with evaluation, checkpoint save and
// resume, reversible, affine coupling and invertible blocks, and a memory budget's checkpointed
// ResNet run on it with results bitwise equal to the CPU backend's. Past 400 lines: one case per
// op family the device runs, each the same CPU-against-sim comparison (train_on).
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>

#include "check/gradcheck.h"
#include "data/synthetic.h"
#include "layers/activation.h"
#include "layers/binary.h"
#include "layers/clamp.h"
#include "layers/concat.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/elu.h"
#include "layers/fixed_point.h"
#include "layers/flatten.h"
#include "layers/gather.h"
#include "layers/group_norm.h"
#include "layers/layer_norm.h"
#include "layers/leaky_relu.h"
#include "layers/linear.h"
#include "layers/matmul.h"
#include "layers/pad.h"
#include "layers/pow.h"
#include "layers/prelu.h"
#include "layers/reduce.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/resize.h"
#include "layers/slice.h"
#include "layers/softmax.h"
#include "layers/softmax_cross_entropy.h"
#include "layers/split.h"
#include "layers/transpose.h"
#include "recompute/affine_coupling.h"
#include "recompute/invertible.h"
#include "recompute/reversible.h"
#include "run/executor.h"
#include "tests/device/harness.h"
#include "tests/temp_dir.h"
#include "train/step_budget.h"
#include "train/trainer.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// Runs f in a forked child with the default SIGSEGV action and no core file; returns the
// signal that ended the child, 0 if it exited.
int signal_of(const std::function<void()>& f) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::signal(SIGSEGV, SIG_DFL);
    f();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

TEST_CASE("sim device: host access to its memory faults, backend copies reach it") {
  Backend& sim = sim_backend();
  CHECK(sim.device().str() == "sim");
  CHECK(!sim.device().is_host());
  Tensor t = Tensor::empty({4, 8}, DType::f32, Role::input, sim.allocator());
  CHECK(t.device() == sim.device());
  CHECK_THROWS_WITH_AS(t.data<float>(), doctest::Contains("lives on sim; copy it to the host"),
                       Error);
  CHECK_THROWS_WITH_AS(t.raw(), doctest::Contains("lives on sim"), Error);
  CHECK_THROWS_WITH_AS(bitwise_equal(t, t), doctest::Contains("lives on sim"), Error);

  const Tensor host = random_tensor({4, 8}, 1, -1, 1, DType::f32);
  sim.copy_to_device(host, t);
  Tensor sum = Tensor::empty({4, 8}, DType::f32, Role::input, sim.allocator());
  sim.add(t, t, sum);
  Tensor back = Tensor::empty({4, 8}, DType::f32);
  sim.copy_to_host(sum, back);
  for (int64_t i = 0; i < host.numel(); ++i)
    REQUIRE(back.data<float>()[i] == host.data<float>()[i] + host.data<float>()[i]);

  // A stray read or write through the device address, before or after kernels ran on it.
  const auto* p = static_cast<const volatile float*>(t.device_raw());
  CHECK(signal_of([&] { (void)p[0]; }) == SIGSEGV);
  CHECK(signal_of([&] { const_cast<volatile float*>(p)[5] = 1.0f; }) == SIGSEGV);
  CHECK(signal_of([&] { std::memcpy(back.raw(), sum.device_raw(), 16); }) == SIGSEGV);
  CHECK(signal_of([] {}) == 0);  // the child itself runs cleanly
}

TEST_CASE("sim device: kernels take sim memory only, and an executor one device") {
  Backend& sim = sim_backend();
  Tensor host = Tensor::empty({3}, DType::f32);
  Tensor dev = Tensor::empty({3}, DType::f32, Role::input, sim.allocator());
  CHECK_THROWS_WITH_AS(
      sim.fill(host, 1.0),
      doctest::Contains("fill: tensor [3] f32 lives on cpu, the backend runs on sim"), Error);
  CHECK_THROWS_WITH_AS(cpu_backend().fill(dev, 1.0), doctest::Contains("lives on sim"), Error);
  CHECK_THROWS_WITH_AS(sim.copy_to_device(dev, dev), doctest::Contains("the host side"), Error);

  ParamStore cpu_params(1);
  Tape tape(cpu_params, DType::f32);
  Value x = tape.input("x", {2, 3}, DType::f32);
  Value y = linear(x, {.out = 2});
  CHECK_THROWS_WITH_AS(
      Executor(tape, sim, {.keep = {y}}),
      doctest::Contains("parameter 'linear0.weight' lives on cpu, the backend runs "
                        "on sim (make the ParamStore with this backend)"),
      Error);
  CHECK_THROWS_WITH_AS(
      Executor(tape, cpu_backend(), {.keep = {y}}, sim.allocator()),
      doctest::Contains("the allocator's memory is on sim, the backend runs on cpu"), Error);
  CHECK_THROWS_WITH_AS(backend_named("tpu"), "unknown device 'tpu'; valid: cpu, sim, cuda", Error);
  CHECK(&backend_named("sim") == &sim);
}

TEST_CASE(
    "sim device: executor steps of a small CNN equal the CPU's bitwise, baseline and planned") {
  const Shape shape{4, 1, 28, 28};
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    const std::vector<Tensor> cpu =
        train_on(cpu_backend(), bundled("small-cnn"), shape, 10, memory, 2);
    const std::vector<Tensor> sim =
        train_on(sim_backend(), bundled("small-cnn"), shape, 10, memory, 2);
    check_all_bitwise(cpu, sim);
  }
}

TEST_CASE("sim device: activation, ELU-family, pow and clamp steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    x = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    for (Activation a :
         {Activation::sigmoid, Activation::tanh, Activation::silu, Activation::gelu,
          Activation::gelu_tanh, Activation::erf, Activation::hardsigmoid, Activation::hardswish,
          Activation::relu6, Activation::abs, Activation::elu, Activation::selu,
          Activation::softplus, Activation::softsign, Activation::neg, Activation::sin,
          Activation::cos, Activation::atan, Activation::sign})
      x = activation(x, a);
    x = celu(elu(elu(x, 0.5), -0.3), 2);
    x = power(power(sigmoid(x), 3), -0.5);
    x = clamp(x, 0.9, 1.6);
    return linear(flatten(x), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("sim device: gather's and constant's steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    x = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});  // (2, 4, 6, 6)
    Tensor c = Tensor::empty({1, 1, 6, 6}, DType::f32);
    for (int64_t i = 0; i < c.numel(); ++i) c.data<float>()[i] = i % 4 == 0 ? -1.f : 0.5f;
    x = binary(BinaryKind::add, x, constant(x.tape(), c));
    Value table = x.tape().param("table", {3, 4}, Init::normal(0.5));
    Value bias = reshape(gather(table, 0, {2, 0, 1, 2}, {4}), Shape{1, 4, 4, 1});
    x = binary(BinaryKind::add, gather(x, 2, {5, 0, 3, 3}, {4}), bias);  // (2, 4, 4, 6)
    return linear(flatten(x), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("sim device: layer norm's steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    x = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    Value t = transpose(x, {0, 2, 3, 1});  // channels last, as ConvNeXt normalizes
    x = transpose(gelu(layer_norm(t, 1)), {0, 3, 1, 2});
    return linear(flatten(layer_norm(x, 3)), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("sim device: group norm's and PReLU's steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    x = relu(group_norm(conv2d(x, {.out = 6, .kernel = 3, .pad = 1}), 3));
    x = group_norm(conv2d(x, {.out = 6, .kernel = 3, .pad = 1}), 6, {.affine = false});
    x = prelu(prelu(x), {.per_channel = false});
    return linear(flatten(x), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("sim device: the reductions' steps equal the CPU's bitwise") {
  const Network net = [](Value x) {
    x = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    std::vector<Value> parts;
    for (Reduction r :
         {Reduction::sum, Reduction::mean, Reduction::max, Reduction::min, Reduction::sum_square,
          Reduction::l1, Reduction::l2, Reduction::log_sum_exp})
      parts.push_back(reduce(x, r, 2));
    return linear(concat(parts, 1), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE(
    "sim device: data movement, softmax, bilinear and bicubic resizing and matmul equal the CPU's "
    "bitwise") {
  const Network net = [](Value x) {
    x = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    auto parts = split(x, 1, {1, 3});
    Value t = reshape(transpose(parts[1], {0, 1, 3, 2}), Shape{2, 3, 6, 6});
    Value p = pad(slice(t, 3, 1, 5), {.before = {0, 0, 0, 1}, .after = {0, 0, 0, 1}, .value = 1});
    Value j = softmax(concat({p, parts[0]}, 1), 1);
    Value r = resize_bilinear(x, {.height = 9, .width = 6, .mode = ResizeCoordinates::half_pixel});
    Value c = resize_bicubic(x, {.height = 5, .width = 6});
    return linear(flatten(concat({matmul(j, j), r, c}, 2)), {.out = 5});
  };
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_all_bitwise(train_on(cpu_backend(), net, {2, 3, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), net, {2, 3, 6, 6}, 5, memory, 2));
}

TEST_CASE("sim device: concat_batch_norm equals the CPU's and concat then batch_norm bitwise") {
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    const std::vector<Tensor> cpu =
        train_on(cpu_backend(), dense_net(false), {2, 3, 6, 6}, 5, memory, 2);
    check_all_bitwise(cpu, train_on(sim_backend(), dense_net(true), {2, 3, 6, 6}, 5, memory, 2));
  }
}

TEST_CASE("sim device: conv3d's and conv_transpose3d's steps equal the CPU's bitwise") {
  // 5 volumes of 4 planes: chunks of 4 samples and 1 in the first layers.
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(cpu_backend(), volume_net, {5, 2, 4, 6, 6}, 5, memory, 2),
                      train_on(sim_backend(), volume_net, {5, 2, 4, 6, 6}, 5, memory, 2));
  }
  check_all_bitwise(
      train_on(cpu_backend(), volume_net, {5, 2, 4, 6, 6}, 5, MemoryMode::baseline, 2),
      train_on(sim_backend(), volume_net, {5, 2, 4, 6, 6}, 5, MemoryMode::planned, 2,
               OptimizerKind::sgd, Recompute::all));
}

TEST_CASE("sim device: AdamW steps of ResNet-20 equal the CPU's bitwise, baseline and planned") {
  const Shape shape{2, 3, 32, 32};
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(
        train_on(cpu_backend(), bundled("resnet20"), shape, 10, memory, 2, OptimizerKind::adamw),
        train_on(sim_backend(), bundled("resnet20"), shape, 10, memory, 2, OptimizerKind::adamw));
  }
}

TEST_CASE("sim device: ResNet-20 with every rebuildable op rebuilt equals the CPU's baseline") {
  const Shape shape{2, 3, 32, 32};
  check_all_bitwise(
      train_on(cpu_backend(), bundled("resnet20"), shape, 10, MemoryMode::baseline, 2),
      train_on(sim_backend(), bundled("resnet20"), shape, 10, MemoryMode::planned, 2,
               OptimizerKind::sgd, Recompute::all));
}

TEST_CASE("sim device: with cuDNN-like scratch choices, the picks fit the arena and bits hold") {
  struct Choices {  // on for this test only
    Choices() { set_sim_scratch_choices(true); }
    ~Choices() { set_sim_scratch_choices(false); }
  } on;
  struct Case {
    const char* model;
    Shape shape;
  };
  for (const Case& c : {Case{"resnet20", {4, 3, 32, 32}}, Case{"googlenet", {2, 3, 224, 224}}}) {
    CAPTURE(std::string(c.model));
    const int64_t classes = find_model(c.model).classes;
    // The kernels are the CPU's: any scratch they are given leaves their bits.
    const std::vector<Tensor> cpu =
        train_on(cpu_backend(), bundled(c.model), c.shape, classes, MemoryMode::baseline, 2);
    for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
      CAPTURE(memory_mode_name(memory));
      check_all_bitwise(cpu,
                        train_on(sim_backend(), bundled(c.model), c.shape, classes, memory, 2));
    }
    // Every convolution pass has its choices; the picks stay in the arena planned at the least
    // scratch, which stays a valid plan; some passes get more than their least.
    ParamStore store(3, sim_backend());
    Tape tape(store, DType::f32);
    Value x = tape.input("images", c.shape, DType::f32, true);
    Value labels = tape.input("labels", {c.shape[0]}, DType::i32);
    Value loss = model_loss(find_model(c.model), bundled(c.model)(x), labels);
    Executor ex(tape, sim_backend(),
                {.memory = MemoryMode::planned,
                 .keep = {loss},
                 .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
    const Layout& l = ex.layout();
    const WorkspacePlan& w = l.workspace;
    REQUIRE(!w.picks.empty());
    CHECK(w.arena == w.arena_least);
    CHECK(ex.arena_bytes() == w.arena);
    std::string why;
    CHECK_MESSAGE(plan_is_valid(l.requests, l.plan, &why), why);
    size_t upgraded = 0;
    for (const ScratchPick& p : w.picks) upgraded += p.chosen.bytes > p.least.bytes;
    CHECK(upgraded > 0);
    CHECK(w.seconds_chosen < w.seconds_least);
    MESSAGE(std::string(c.model), ": ", upgraded, " of ", w.picks.size(),
            " passes above their least scratch");
    // With room to grow, the arena grows by at most that much, and without bound every pass
    // runs its fastest choice.
    for (size_t growth : {size_t{1} << 20, SIZE_MAX}) {
      CAPTURE(growth);
      Executor grown(tape, sim_backend(),
                     {.memory = MemoryMode::planned,
                      .keep = {loss},
                      .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9},
                      .workspace_growth = growth});
      const WorkspacePlan& g = grown.layout().workspace;
      CHECK(g.arena_least == w.arena_least);
      CHECK(g.arena - g.arena_least <= growth);
      CHECK(g.seconds_chosen <= w.seconds_chosen);
      CHECK_MESSAGE(plan_is_valid(grown.layout().requests, grown.layout().plan, &why), why);
      if (growth == SIZE_MAX) CHECK(g.seconds_chosen == g.seconds_fastest);
    }
  }
}

TEST_CASE(
    "sim device: leaky_relu, affine coupling and fixed-point reversible blocks equal the CPU's") {
  const Shape shape{2, 4, 6, 6};
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(cpu_backend(), coupling_net, shape, 5, memory, 2),
                      train_on(sim_backend(), coupling_net, shape, 5, memory, 2));
  }
  // The invertible check runs on the store's backend.
  auto fw = [](Value x) { return fixed_point(x); };
  ParamStore cpu_params(2), sim_params(2, sim_backend());
  const InvertibleCheck a = check_invertible(cpu_params, fw, fw, {Shape{2, 3}, DType::f64});
  const InvertibleCheck b = check_invertible(sim_params, fw, fw, {Shape{2, 3}, DType::f64});
  CHECK(a.max_abs == b.max_abs);
  CHECK(a.worst == b.worst);
}

TEST_CASE("sim device: a RevNet-38 step equals the CPU's bitwise") {
  const Shape shape{2, 3, 32, 32};
  check_all_bitwise(
      train_on(cpu_backend(), bundled("revnet38"), shape, 10, MemoryMode::planned, 1),
      train_on(sim_backend(), bundled("revnet38"), shape, 10, MemoryMode::planned, 1));
}

TEST_CASE("sim device: trainer steps and evaluation equal the CPU's bitwise") {
  const Dataset train = synthetic_dataset({1, 28, 28}, 16 * 3, 10, 5);
  const Dataset test = synthetic_dataset({1, 28, 28}, 30, 10, 6);  // 3 x 8 + 6: two executors
  TrainOptions o{.model = "small-cnn", .batch = 16, .warmup = 2, .threads = 2, .eval_batch = 8};
  Trainer cpu(o, train, test);
  o.device = "sim";
  Trainer sim(o, train, test);
  CHECK(sim.backend().device().str() == "sim");
  CHECK(sim.params().all().front()->value.device().str() == "sim");
  CHECK(sim.executor().arena_bytes() == cpu.executor().arena_bytes());
  CHECK(loss_bits(cpu, 3) == loss_bits(sim, 3));
  CHECK(cpu.totals().correct == sim.totals().correct);
  check_all_bitwise(state_of(cpu.params()), state_of(sim.params()));
  CHECK(cpu.evaluate() == sim.evaluate());
  CHECK(cpu.eval_memory_bytes() == sim.eval_memory_bytes());
}

TEST_CASE("sim device: a checkpoint saved on sim resumes bit for bit and equals the CPU's file") {
  TempDir dir("frugal-sim");
  const Dataset train = synthetic_dataset({3, 32, 32}, 8, 10, 1);
  const Dataset test = synthetic_dataset({3, 32, 32}, 4, 10, 2);
  TrainOptions o{.model = "resnet20",
                 .epochs = 2,
                 .batch = 2,
                 .warmup = 2,
                 .augment = true,
                 .seed = 4,
                 .threads = 2,
                 .steps = 2,
                 .eval_batch = 4};
  Trainer cpu(o, train, test);
  loss_bits(cpu, 3);
  cpu.save(dir / "cpu.safetensors");
  o.device = "sim";
  Trainer first(o, train, test);
  loss_bits(first, 3);
  first.save(dir / "sim.safetensors");
  CHECK(read_bytes(dir / "sim.safetensors") == read_bytes(dir / "cpu.safetensors"));
  const std::vector<uint32_t> expected = loss_bits(first, 1);

  Trainer resumed(o, train, test);
  resumed.resume(dir / "sim.safetensors");
  CHECK(resumed.global_step() == 3);
  CHECK(loss_bits(resumed, 1) == expected);
  check_all_bitwise(state_of(first.params()), state_of(resumed.params()));
  CHECK(first.evaluate() == resumed.evaluate());
}

TEST_CASE("sim device: a memory budget's checkpointed ResNet-20 plans and trains as on the CPU") {
  TrainingStep step{.model = "resnet20", .batch = 4, .keep_logits = true};
  const size_t budget = size_t{9} << 19;  // 4.5 MiB
  set_cpu_threads(2);  // the trainers' threads: the scratch of a convolution is per thread
  const BudgetSchedule on_cpu = fit_step_budget(step, budget);
  step.backend = &sim_backend();
  const BudgetSchedule on_sim = fit_step_budget(step, budget);
  REQUIRE(!on_sim.schedule.checkpointed.empty());
  CHECK(on_sim.planned_peak == on_cpu.planned_peak);
  CHECK(on_sim.schedule.checkpointed.size() == on_cpu.schedule.checkpointed.size());

  const Dataset train = synthetic_dataset({3, 32, 32}, 8, 10, 3);
  TrainOptions o{.model = "resnet20",
                 .batch = 4,
                 .threads = 2,
                 .steps = 2,
                 .eval_batch = 4,
                 .checkpoint_runs = on_sim.schedule.checkpointed};
  Trainer cpu(o, train, train);
  o.device = "sim";
  Trainer sim(o, train, train);
  CHECK(sim.executor().arena_bytes() == on_sim.planned_peak);  // the budget's plan is what runs
  CHECK(loss_bits(cpu, 2) == loss_bits(sim, 2));
  check_all_bitwise(state_of(cpu.params()), state_of(sim.params()));
}
