// LayerNorm's backward from its output (LayerNormOptions::from_output): the gradient check in
// f64, gradients beside the default's (from the input), the forward unchanged bit for bit, its
// roles and which layer norms read_layer_norm_outputs switches, planned == baseline bitwise,
// the memory it frees, and its errors (a zero or diverged weight, the kernel's arguments; a
// device without the kernel: tests/test_optional_kernels.cpp, tests/cuda/test_cuda.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/tape_values.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// A transformer's blocks in small over x's last axis (D = x's): tokens t = linear(x); then
// t + linear(ln1(t)) (ln1's output read by a linear layer's backward: it switches), then
// h + linear(gelu(linear(ln2(h)))) (switches too), then ln3 into an addition and a ReLU
// (nothing reads its output in backward: it keeps reading its input).
Value block(Value x, bool from_output) {
  const int64_t D = x.shape()[x.shape().rank() - 1];
  Value t = linear(x, {.out = D, .name = "embed"});
  Value h = add(t, linear(layer_norm(t, 1, {.name = "ln1", .from_output = from_output}),
                          {.out = D, .name = "attn"}));
  Value m = linear(layer_norm(h, 1, {.name = "ln2", .from_output = from_output}),
                   {.out = 2 * D, .name = "fc1"});
  Value u = add(h, linear(gelu(m), {.out = D, .name = "fc2"}));
  return relu(add(layer_norm(u, 1, {.name = "ln3", .from_output = from_output}), u));
}

// Weights and biases away from 1 and 0 (both signs), so x^ from the output divides by
// something.
void randomize_norm(Tape& tape, const std::string& name, uint64_t seed) {
  randomize_param(tape, name + ".weight", seed, -1.5, 1.5);
  randomize_param(tape, name + ".bias", seed + 1, -1, 1);
}

// One training forward and backward of sum(R * layer_norm(x)) with R fixed: y, then the
// gradients of x, gamma and beta.
std::vector<Tensor> ln_step(DType t, bool from_output, const Tensor& input, int axes) {
  ParamStore store;
  Tape tape(store, t);
  Value x = tape.input("x", input.shape(), t, true);
  Value y = layer_norm(x, axes, {.name = "ln", .from_output = from_output});
  randomize_norm(tape, "ln", 3);
  Executor ex(tape, cpu_backend(), {.keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, input);
  ex.forward();
  Tensor r = random_tensor(input.shape(), 11, -1, 1, t);
  std::pair<Value, Tensor> seed{y, r};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  std::vector<Tensor> out{clone(ex.value(y)), clone(ex.grad(x))};
  for (const char* p : {"ln.weight", "ln.bias"})
    out.push_back(clone(ex.grad(param_value(tape, p))));
  return out;
}

std::vector<const LayerNormOp*> layer_norms(const Tape& tape) {
  std::vector<const LayerNormOp*> out;
  for (const OpNode& n : tape.ops())
    if (auto* ln = dynamic_cast<const LayerNormOp*>(n.op.get())) out.push_back(ln);
  return out;
}

}  // namespace

TEST_CASE("gradcheck layer_norm from its output") {
  for (auto [shape, axes] : {std::pair{Shape{4, 5}, 1}, std::pair{Shape{2, 3, 6}, 1},
                             std::pair{Shape{2, 3, 2, 2}, 3}, std::pair{Shape{3, 2, 70}, 1}}) {
    INFO("x ", shape, " over ", axes, " axes");
    check_gradients(
        [axes](std::span<const Value> x) {
          Value y = layer_norm(x[0], axes, {.eps = 1e-3, .name = "ln", .from_output = true});
          randomize_norm(x[0].tape(), "ln", 3);
          return std::vector<Value>{y};
        },
        {random_tensor(shape, 7, -2, 2)});
  }
  // Between GELUs: its dy comes through the next op's backward.
  check_gradients(
      [](std::span<const Value> x) {
        Value y = layer_norm(gelu(x[0]), 1, {.name = "ln", .from_output = true});
        randomize_norm(x[0].tape(), "ln", 5);
        return std::vector<Value>{gelu(y)};
      },
      {random_tensor({3, 4, 5}, 9, -2, 2)});
}

TEST_CASE("layer_norm from its output: the default's forward bits, its gradients within rounding") {
  for (DType t : {DType::f64, DType::f32}) {
    for (auto [shape, axes] : {std::pair{Shape{8, 5, 96}, 1}, std::pair{Shape{4, 6, 3, 5}, 2}}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(axes);
      const Tensor input = random_tensor(shape, 21, -3, 5, t);
      const std::vector<Tensor> plain = ln_step(t, false, input, axes);
      const std::vector<Tensor> out = ln_step(t, true, input, axes);
      REQUIRE(plain.size() == out.size());
      CHECK(std::memcmp(plain[0].raw(), out[0].raw(), plain[0].bytes()) == 0);  // y
      // dx, dgamma, dbeta: x^ = (y - beta) / gamma in double differs from (x - mean) / std by
      // the rounding of y (f32: about 6e-8 of |y| / |gamma|).
      const double tolerance = t == DType::f64 ? 1e-12 : 1e-5;
      for (size_t k = 1; k <= 3; ++k) {
        CAPTURE(k);
        double worst = 0, scale = 0;
        bool differs = false;
        for (int64_t i = 0; i < plain[k].numel(); ++i) {
          const double want = element_as_double(plain[k], i), got = element_as_double(out[k], i);
          worst = worse(worst, std::abs(got - want));
          scale = std::max(scale, std::abs(want));
          differs = differs || got != want;
        }
        CHECK(scale > 0.1);
        CHECK(worst <= tolerance * scale);
        if (k == 2) CHECK(differs);  // dgamma: the other source of x^ was read
      }
    }
  }
}

TEST_CASE("layer_norm from its output: roles, and which layer norms read_layer_norm_outputs sets") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 8}, DType::f32, true);
  block(x, false);
  const std::vector<const LayerNormOp*> lns = layer_norms(tape);
  REQUIRE(lns.size() == 3);
  CHECK(lns[0]->roles(Mode::training, cpu_backend()).backward_reads_inputs ==
        std::vector<int>{0, 1});
  CHECK(read_layer_norm_outputs(tape, cpu_backend()) == 2);
  CHECK(lns[0]->from_output());
  CHECK(lns[1]->from_output());
  CHECK_FALSE(lns[2]->from_output());                        // its output goes to an addition only
  CHECK(read_layer_norm_outputs(tape, cpu_backend()) == 0);  // already set
  check_from_output_roles(lns[0]->roles(Mode::training, cpu_backend()));
  // Where the input lives on anyway, nothing switches: a graph input, a value another
  // backward reads (a linear layer's), an output its producer's backward reads (a sigmoid's).
  ParamStore store2;
  Tape tape2(store2);
  Value x2 = tape2.input("x", {2, 3, 8}, DType::f32, true);
  linear(layer_norm(linear(x2, {.out = 8}), 1, {.name = "switches"}), {.out = 4});
  linear(layer_norm(x2, 1, {.name = "on_input"}), {.out = 4});
  Value g = linear(x2, {.out = 8});
  linear(layer_norm(g, 1, {.name = "input_read"}), {.out = 4});
  linear(g, {.out = 4});  // this linear layer's backward reads g
  linear(layer_norm(sigmoid(x2), 1, {.name = "after_sigmoid"}), {.out = 4});
  // ... nor where nothing needs the layer norm's gradients (no backward to change).
  Value frozen = relu(tape2.input("z", {2, 3, 8}, DType::f32, false));
  Value fw = tape2.param("frozen.weight", {8}, Init::ones(), false);
  Value fb = tape2.param("frozen.bias", {8}, Init::zeros(), false);
  linear(tape2.record(std::make_unique<LayerNormOp>(LayerNormOptions{}),
                      std::vector<Value>{frozen, fw, fb}, std::source_location::current())[0],
         {.out = 4});
  CHECK(read_layer_norm_outputs(tape2, cpu_backend()) == 1);
  for (const OpNode& n : tape2.ops())
    if (auto* ln = dynamic_cast<const LayerNormOp*>(n.op.get()))
      CHECK(ln->from_output() == (tape2.value(n.inputs[1]).name == "switches.weight"));
}

TEST_CASE("layer_norm from its output: planned == baseline bitwise, rebuilt and packed too") {
  check_planned_equals_baseline([](Value x) { return block(x, true); });
  check_planned_equals_baseline([](Value x) {
    return gelu(
        layer_norm(gelu(layer_norm(x, 2, {.from_output = true})), 1, {.from_output = true}));
  });
}

TEST_CASE("layer_norm from its output: the planned arena no longer holds the input") {
  auto arena = [](bool from_output) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store);
    Value x = tape.input("x", {8, 256, 128}, DType::f32);
    Value v = linear(x, {.out = 128});
    for (int k = 0; k < 4; ++k)
      v = add(v, linear(layer_norm(v, 1, {.from_output = from_output}), {.out = 128}));
    const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                   {.keep = {v.id()}, .alignment = 64});
    return l.plan.arena_bytes;
  };
  const size_t plain = arena(false), out = arena(true);
  MESSAGE("four pre-norm residual linear blocks: ", plain, " bytes, from outputs ", out);
  // Each block kept the residual stream (the layer norm's input) and the layer norm's output
  // (the linear layer's); from outputs, the residual stream dies after forward: 1 MiB a block,
  // the last one's still live at the end.
  const size_t tensor = size_t{8} * 256 * 128 * 4;
  CHECK(out + 3 * tensor <= plain);
}

TEST_CASE("layer_norm from its output: a zero or non-finite weight is an error in forward") {
  for (DType t : {DType::f32, DType::f64}) {
    for (double bad : {0.0, std::nan("")}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(bad);
      ParamStore store;
      Tape tape(store, t);
      Value x = tape.input("x", {4, 3, 5}, t, true);
      Value y = layer_norm(x, 1, {.name = "ln", .from_output = true});
      Tensor& gamma = store.find("ln.weight")->value;
      if (t == DType::f64)
        gamma.data<double>()[3] = bad;
      else
        gamma.data<float>()[3] = static_cast<float>(bad);
      Executor ex(tape, cpu_backend(), {.keep = {y}, .optimizer = std::nullopt});
      ex.set_input(x, random_tensor({4, 3, 5}, 5, -1, 1, t));
      CHECK_THROWS_WITH_AS(ex.forward(),
                           doctest::Contains(bad == 0 ? "layer_norm ln: weight of element 3 is 0, "
                                                        "so its normalized input cannot be "
                                                        "recovered from the output; record it "
                                                        "with from_output off (frugal's "
                                                        "commands: without --ln-from-output)"
                                                      : "layer_norm ln: weight of element 3 is "
                                                        "nan: the weights diverged"),
                           Error);
    }
  }
}

TEST_CASE("layer_norm from its output: the CPU kernel checks its arguments itself") {
  const Tensor y = random_tensor({4, 3}, 5, -1, 1, DType::f64);
  const Tensor dy = random_tensor({4, 3}, 6, -1, 1, DType::f64);
  const Tensor gamma = from({3}, {1, 2, 0}), beta = from({3}, {0, 0, 0});
  const Tensor inv_std = from({4}, {1, 1, 1, 1});
  Tensor dx = Tensor::empty({4, 3}, DType::f64), none;
  CHECK_THROWS_WITH_AS(
      cpu_backend().layernorm_backward_from_output(y, dy, gamma, beta, inv_std, dx, none, none),
      doctest::Contains("layer_norm backward from its output: weight of element 2 is 0"), Error);
  const Tensor short_std = from({3}, {1, 1, 1}), ones = from({3}, {1, 2, 3});
  CHECK_THROWS_WITH_AS(
      cpu_backend().layernorm_backward_from_output(y, dy, ones, beta, short_std, dx, none, none),
      doctest::Contains("layer_norm backward from its output: a per-row tensor is [3] f64, "
                        "expected 4 values"),
      Error);
  CHECK_THROWS_WITH_AS(
      cpu_backend().layernorm_backward_from_output(y, dy, ones, none, inv_std, dx, none, none),
      doctest::Contains("layer_norm backward from its output"), Error);
}
