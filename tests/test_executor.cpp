// The executor's invariants: planned steps bitwise equal to baseline steps (outputs,
// gradients, updated weights) on composite graphs; determinism; clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "memory/encodings.h"
#include "memory/layout.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/temp_dir.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// Residual adds, concat branches, fan-out, dropout, batch norm, max-pool.
Value composite(Value x, bool with_dropout) {
  Value h = relu(batch_norm(conv2d(x, {.out = 8, .kernel = 3, .pad = 1})));
  h = max_pool2d(h, {.kernel = 2});
  Value a = relu(conv2d(h, {.out = 4, .kernel = 3, .pad = 1}));
  Value b = batch_norm(conv2d(h, {.out = 4, .kernel = 1}));
  Value c = concat({a, b});   // 8 channels
  Value r = relu(add(c, h));  // residual, h fans out to three readers
  if (with_dropout) r = dropout(r, 0.25);
  Value f = flatten(r);
  return linear(relu(linear(f, {.out = 16})), {.out = 5});
}

struct StepResult {
  std::vector<Tensor> weights;  // after one SGD step
  std::vector<Tensor> grads;    // parameter gradients
  Tensor loss, logits;
};

StepResult run_step(MemoryMode memory, DType dtype, bool dropout, int steps, bool poison,
                    bool check_finite = false) {
  ParamStore store(42);
  Tape tape(store, dtype);
  Value x = tape.input("x", {4, 3, 8, 8}, dtype);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value logits = composite(x, dropout);
  Value loss = softmax_cross_entropy(logits, labels);
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::training,
               .memory = memory,
               .poison = poison,
               .seed = 9,
               .keep = {loss, logits},
               .keep_param_grads = true,
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3},
               .check_finite = check_finite});
  StepResult r;
  for (int s = 0; s < steps; ++s) {
    ex.set_input(x, random_tensor({4, 3, 8, 8}, 100 + s, -1, 1, dtype));
    ex.set_input(labels, random_labels(4, 5, 200 + s));
    ex.forward();
    r.loss = clone(ex.value(loss));
    r.logits = clone(ex.value(logits));
    ex.backward(loss);
  }
  for (Parameter* p : store.all()) r.weights.push_back(clone(p->value));
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && tape.values()[v].requires_grad)
      r.grads.push_back(clone(ex.grad(Value(&tape, static_cast<int>(v)))));
  return r;
}

void check_bitwise(const StepResult& a, const StepResult& b) {
  CHECK(bitwise_equal(a.loss, b.loss));
  CHECK(bitwise_equal(a.logits, b.logits));
  REQUIRE(a.weights.size() == b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) CHECK(bitwise_equal(a.weights[i], b.weights[i]));
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) CHECK(bitwise_equal(a.grads[i], b.grads[i]));
}

}  // namespace

TEST_CASE("planned step is bitwise equal to baseline step") {
  for (DType dtype : {DType::f32, DType::f64}) {
    for (bool dropout : {false, true}) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(dropout);
      StepResult base = run_step(MemoryMode::baseline, dtype, dropout, 3, false);
      StepResult planned = run_step(MemoryMode::planned, dtype, dropout, 3, true);
      check_bitwise(base, planned);
    }
  }
}

TEST_CASE("a step run twice gives identical bits") {
  StepResult a = run_step(MemoryMode::planned, DType::f32, true, 2, false);
  StepResult b = run_step(MemoryMode::planned, DType::f32, true, 2, false);
  check_bitwise(a, b);
}

TEST_CASE("gradcheck composite graph") {
  check_gradients(
      [](std::span<const Value> in) {
        return std::vector<Value>{softmax_cross_entropy(composite(in[0], false), in[1])};
      },
      {random_tensor({2, 3, 4, 4}, 5), random_labels(2, 5, 6)}, {.tolerance = 1e-5});
}

TEST_CASE("planned inference equals baseline inference") {
  auto infer = [](MemoryMode memory) {
    ParamStore store(3);
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {2, 3, 8, 8}, DType::f32);
    Value y = composite(x, true);
    Executor ex(tape, cpu_backend(),
                {.mode = Mode::inference, .memory = memory, .poison = true, .keep = {y}});
    ex.set_input(x, random_tensor({2, 3, 8, 8}, 1, -1, 1, DType::f32));
    ex.forward();
    return clone(ex.value(y));
  };
  CHECK(bitwise_equal(infer(MemoryMode::baseline), infer(MemoryMode::planned)));
}

TEST_CASE("planned memory is smaller than baseline") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 8, 8}, DType::f32);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value loss = softmax_cross_entropy(composite(x, true), labels);
  Executor base(tape, cpu_backend(), {.memory = MemoryMode::baseline, .keep = {loss}});
  Executor planned(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {loss}});
  CHECK(planned.memory_bytes() < base.memory_bytes());
}

TEST_CASE("executor input errors name the input and shapes") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("images", {2, 3}, DType::f32);
  Value y = relu(x);
  Executor ex(tape, cpu_backend(), {.keep = {y}});
  CHECK_THROWS_WITH_AS(ex.set_input(x, Tensor::empty({3, 3}, DType::f32)),
                       doctest::Contains("input 'images' is [2,3] f32, got [3,3] f32"), Error);
  // A wrong dtype is not a shape to record again.
  const std::string dtype = error_message([&] {
    ex.set_input(x, Tensor::empty({2, 3}, DType::f64));
  });
  CHECK(dtype.find("input 'images' holds f32, got f64 data [2,3] (convert the batch to f32)") !=
        std::string::npos);
  CHECK(dtype.find("record the model again") == std::string::npos);
  CHECK_THROWS_WITH_AS(ex.backward(y), doctest::Contains("one-element loss"), Error);
}

TEST_CASE("a borrowed input reads its caller's tensor and takes no arena bytes") {
  ParamStore store(3);
  Tape tape(store);
  Value x = tape.input("x", {2, 4, 5, 5}, DType::f32, true);
  Value y = relu(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}));
  const Tensor in = random_tensor({2, 4, 5, 5}, 5, -1, 1, DType::f32);
  const std::pair<Value, Tensor> seed{y, random_tensor({2, 4, 5, 5}, 6, -1, 1, DType::f32)};
  ExecutorOptions o{.mode = Mode::training, .keep = {y}, .keep_param_grads = true};
  auto run = [&](bool borrow) {
    o.borrow_inputs = borrow;
    o.arena = Tensor::empty({int64_t{1} << 20}, DType::u8);
    Executor ex(tape, cpu_backend(), o);
    if (borrow)
      ex.bind_input(x, in);
    else
      ex.set_input(x, in);
    ex.forward();
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    return std::vector<Tensor>{clone(ex.value(y)), clone(ex.grad(x))};
  };
  const std::vector<Tensor> copied = run(false), borrowed = run(true);
  CHECK(bitwise_equal(copied[0], borrowed[0]));
  CHECK(bitwise_equal(copied[1], borrowed[1]));
  o.borrow_inputs = false;
  const size_t with = Executor::planned_bytes(tape, cpu_backend(), o);
  o.borrow_inputs = true;
  CHECK(Executor::planned_bytes(tape, cpu_backend(), o) + in.bytes() <= with);
  Executor ex(tape, cpu_backend(), o);
  CHECK_THROWS_WITH_AS(ex.forward(), doctest::Contains("input 'x' is borrowed and not bound"),
                       Error);
  CHECK_THROWS_WITH_AS(ex.bind_input(x, Tensor::empty({2, 4, 5, 4}, DType::f32)),
                       doctest::Contains("input 'x' is [2,4,5,5] f32 on cpu, bound to [2,4,5,4]"),
                       Error);
  o.borrow_inputs = false;
  Executor own(tape, cpu_backend(), o);
  CHECK_THROWS_WITH_AS(own.bind_input(x, in),
                       doctest::Contains("needs ExecutorOptions::borrow_inputs"), Error);
}

TEST_CASE("planned training makes no allocation after the first step") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 8, 8}, DType::f32);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value loss = softmax_cross_entropy(composite(x, true), labels);
  Executor ex(
      tape, cpu_backend(),
      {.memory = MemoryMode::planned, .keep = {loss}, .optimizer = OptimizerConfig{.lr = 0.01}});
  auto step = [&](int s) {
    copy_bytes(random_tensor({4, 3, 8, 8}, s, -1, 1, DType::f32), ex.input(x));
    copy_bytes(random_labels(4, 5, s), ex.input(labels));
    ex.forward();
    ex.backward(loss);
  };
  step(1);  // creates the optimizer state
  const size_t before = cpu_allocator().allocation_count();
  step(2);
  step(3);
  CHECK(cpu_allocator().allocation_count() == before + 4);  // the 4 test tensors only
}

TEST_CASE("switching memory modes between steps does not change results") {
  auto run = [](std::vector<MemoryMode> modes) {
    ParamStore store(5);
    std::vector<Tensor> out;
    uint64_t step = 0;
    for (MemoryMode m : modes) {
      Tape tape(store, DType::f32);
      Value x = tape.input("x", {4, 3, 8, 8}, DType::f32);
      Value labels = tape.input("labels", {4}, DType::i32);
      Value loss = softmax_cross_entropy(composite(x, true), labels);
      Executor ex(tape, cpu_backend(),
                  {.memory = m,
                   .seed = 3,
                   .keep = {loss},
                   .optimizer = OptimizerConfig{.lr = 0.05, .momentum = 0.9}});
      ex.set_step(step);
      ex.set_input(x, random_tensor({4, 3, 8, 8}, 10 + step, -1, 1, DType::f32));
      ex.set_input(labels, random_labels(4, 5, 20 + step));
      ex.forward();
      out.push_back(clone(ex.value(loss)));
      ex.backward(loss);
      step = ex.step();
    }
    for (Parameter* p : store.all()) out.push_back(clone(p->value));
    return out;
  };
  auto a = run({MemoryMode::baseline, MemoryMode::baseline, MemoryMode::baseline});
  auto b = run({MemoryMode::planned, MemoryMode::baseline, MemoryMode::planned});
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(bitwise_equal(a[i], b[i]));
}

TEST_CASE("planned relu saves a mask only where its output would otherwise die") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 8, 8}, DType::f32);
  Value a = relu(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}));  // conv2 reads a in backward
  Value b = relu(conv2d(a, {.out = 4, .kernel = 3, .pad = 1}));  // max-pool does not read b
  Value y = max_pool2d(b, {.kernel = 2});
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {y}});
  auto relu_op = [&](Value v) {
    return static_cast<const ReluOp&>(*tape.ops()[tape.value(v.id()).producer].op);
  };
  // The two rules the plan scores: a, read by conv2's backward, keeps its output; or a keeps
  // a mask, so that it dies at conv2's backward and conv2's input gradient takes its bytes.
  Step s = lower_step(tape, Mode::training, cpu_backend());
  const std::vector<int> keep{y.id()};
  const size_t a_op = static_cast<size_t>(tape.value(a.id()).producer);
  choose_encodings(s, keep);
  CHECK_FALSE(*s.ops[a_op].compact);
  choose_encodings(s, keep, true);
  CHECK(*s.ops[a_op].compact);
  // Here backward peaks at conv2's backward: the mask's plan is the lower one, and kept.
  CHECK(relu_op(a).saves == ReluOp::Saves::mask);
  CHECK(relu_op(b).saves == ReluOp::Saves::mask);
  const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                 {.keep = keep, .alignment = 64});
  const int g = l.live.grad_buffer[static_cast<size_t>(a.id())];
  REQUIRE(g >= 0);
  CHECK(l.live.alias_root(g) ==
        l.live.alias_root(l.live.value_buffer[static_cast<size_t>(a.id())]));
}

TEST_CASE("backward reading an undeclared input fails at once") {
  struct Sneaky final : Op {
    std::string name() const override { return "sneaky"; }
    std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override { return {in[0]}; }
    Roles roles(Mode, const Backend&) const override { return {}; }
    void forward(const OpContext& c) override { c.backend().copy(c.input(0), c.output(0)); }
    void backward(const OpContext& c) override {
      c.backend().copy(c.input(0), c.grad_input(0));  // reads x without declaring it
    }
  };
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {3}, DType::f64, true);
  Value y = tape.record(std::make_unique<Sneaky>(), {x}, std::source_location::current())[0];
  Executor ex(tape, cpu_backend(), {.keep = {y}});
  ex.set_input(x, random_tensor({3}, 1));
  ex.forward();
  std::pair<Value, Tensor> seed{y, random_tensor({3}, 2)};
  CHECK_THROWS_WITH_AS(
      ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1)),
      doctest::Contains("sneaky: backward reads input 0 which its roles do not declare"), Error);
}

TEST_CASE("check_finite changes no result where everything is finite") {
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned})
    check_bitwise(run_step(memory, DType::f32, true, 2, false),
                  run_step(memory, DType::f32, true, 2, false, /*check_finite=*/true));
}

namespace {
// x (2,4) -> linear (3 outputs, every weight w) -> relu, with check_finite and plain SGD.
struct FiniteRun {
  ParamStore store{1};
  Tape tape{store, DType::f32};
  Value x, h, y;
  std::unique_ptr<Executor> ex;
  FiniteRun(float w, double lr) {
    x = tape.input("x", {2, 4}, DType::f32, /*requires_grad=*/true);
    h = linear(x, {.out = 3, .bias = false, .name = "fc"});
    y = relu(h);
    for (Parameter* p : store.all()) std::fill_n(p->value.data<float>(), p->value.numel(), w);
    ex = std::make_unique<Executor>(
        tape, cpu_backend(),
        ExecutorOptions{.keep = {y}, .optimizer = OptimizerConfig{.lr = lr}, .check_finite = true});
  }
  void fill_x(float v) { std::fill_n(ex->input(x).data<float>(), 8, v); }
  // Backward from dy = g everywhere.
  void backward(float g) {
    Tensor dy = Tensor::empty({2, 3}, DType::f32);
    std::fill_n(dy.data<float>(), 6, g);
    std::pair<Value, Tensor> seed{y, dy};
    ex->backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  }
};
}  // namespace

TEST_CASE("check_finite names the first op and pass and tensor that made a NaN or inf") {
  SUBCASE("forward: a huge weight overflows in linear, named before relu passes the inf on") {
    FiniteRun r(1e30f, 0.1);
    r.fill_x(1e10f);
    const std::string m = error_message([&] { r.ex->forward(); });
    CHECK(m.find("check_finite: op 0 'linear' (") != std::string::npos);
    CHECK(m.find("test_executor.cpp:") != std::string::npos);
    CHECK(m.find(") forward wrote inf at element 0 [0,0] of [2,3] to output 0 ('linear')") !=
          std::string::npos);
  }
  SUBCASE("an input holding NaN is named before any op runs") {
    FiniteRun r(1, 0.1);
    r.fill_x(1);
    r.ex->input(r.x).data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    CHECK(error_message([&] { r.ex->forward(); }) ==
          "check_finite: input 'x' holds nan at element 5 [1,1] of [2,4] before forward (step 1)");
  }
  SUBCASE("backward: dx = dy w overflows") {
    FiniteRun r(1e30f, 0.1);
    r.fill_x(1e-30f);
    r.ex->forward();
    const std::string m = error_message([&] { r.backward(1e30f); });
    CHECK(m.find("check_finite: op 0 'linear'") != std::string::npos);
    CHECK(m.find(") backward wrote inf at element 0 [0,0] of [2,4] to d input 0 ('x')") !=
          std::string::npos);
  }
  SUBCASE("an SGD update that overflows names the parameter") {
    FiniteRun r(1, 1e38);
    r.fill_x(1);
    r.ex->forward();
    const std::string m = error_message([&] { r.backward(10); });
    CHECK(m.find("check_finite: the SGD update (lr 1e+38) of parameter 'fc.weight' wrote -inf") !=
          std::string::npos);
  }
  SUBCASE("without the option nothing is checked") {
    ParamStore store(1);
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {2}, DType::f32);
    Value y = relu(x);
    Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
    std::fill_n(ex.input(x).data<float>(), 2, std::numeric_limits<float>::infinity());
    ex.forward();
    CHECK(std::isinf(ex.value(y).data<float>()[0]));
  }
}
