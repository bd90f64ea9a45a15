// BatchNorm's backward from its output (BatchNormOptions::from_output, InPlace-ABN's trick):
// the gradient check in f64, gradients beside the default's (from the input), the forward
// unchanged bit for bit, its roles and which batch norms read_batch_norm_outputs switches,
// planned == baseline bitwise, the memory it frees, and its errors (a zero weight, statistics
// synchronized over ranks; a device without the kernel: tests/test_optional_kernels.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "dist/communicators.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/tape_values.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// conv -> batch norm -> SiLU -> conv -> batch norm (+ x) -> ReLU -> conv -> batch norm -> conv:
// the first batch norm's output is read by SiLU's backward, the second's only by an addition,
// the third's by a convolution (whose input gradient may take its input's bytes).
Value block(Value x, bool from_output) {
  Value a = conv2d(x, {.out = 6, .kernel = 3, .pad = 1, .name = "c1"});
  a = silu(batch_norm(a, {.name = "bn1", .from_output = from_output}));
  Value b = conv2d(a, {.out = 4, .kernel = 3, .pad = 1, .name = "c2"});
  b = batch_norm(b, {.name = "bn2", .from_output = from_output});
  Value c = conv2d(relu(add(b, x)), {.out = 4, .kernel = 1, .name = "c3"});
  c = batch_norm(c, {.name = "bn3", .from_output = from_output});
  return conv2d(c, {.out = 4, .kernel = 3, .pad = 1, .name = "c4"});
}

// One training forward and backward of sum(R * batch_norm(x)) with R fixed: y, then the
// gradients of x, gamma and beta, then the running statistics.
std::vector<Tensor> bn_step(DType t, bool from_output, const Tensor& input) {
  ParamStore store;
  Tape tape(store, t);
  Value x = tape.input("x", input.shape(), t, true);
  Value y = batch_norm(x, {.momentum = 0.3, .name = "bn", .from_output = from_output});
  randomize_param(tape, "bn.weight", 3, -1.5, 1.5);  // both signs
  randomize_param(tape, "bn.bias", 4, -1, 1);
  Executor ex(tape, cpu_backend(), {.keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, input);
  ex.forward();
  Tensor r = random_tensor(input.shape(), 11, -1, 1, t);
  std::pair<Value, Tensor> seed{y, r};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  return batch_norm_results(ex, tape, store, x, y);
}

}  // namespace

TEST_CASE("gradcheck batch_norm from its output") {
  for (Shape shape : {Shape{4, 3, 3, 2}, Shape{6, 4}, Shape{3, 2, 5}, Shape{2, 2, 2, 3, 2}}) {
    INFO("x ", shape);
    check_gradients(
        [](std::span<const Value> x) {
          Value y = batch_norm(x[0], {.eps = 1e-3, .name = "bn", .from_output = true});
          randomize_param(x[0].tape(), "bn.weight", 3, -1.5, 1.5);
          randomize_param(x[0].tape(), "bn.bias", 4, -1, 1);
          return std::vector<Value>{y};
        },
        {random_tensor(shape, 7, -2, 2)});
  }
  // After a SiLU and before one: its dy comes through the next op's backward.
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{
            silu(batch_norm(silu(x[0]), {.momentum = 0.5, .from_output = true}))};
      },
      {random_tensor({3, 2, 2, 3}, 9, -2, 2)});
}

TEST_CASE("batch_norm from its output: the default's forward bits, its gradients within rounding") {
  for (DType t : {DType::f64, DType::f32}) {
    CAPTURE(std::string(dtype_name(t)));
    const Tensor input = random_tensor({8, 5, 3, 4}, 21, -3, 5, t);
    const std::vector<Tensor> plain = bn_step(t, false, input);
    const std::vector<Tensor> out = bn_step(t, true, input);
    REQUIRE(plain.size() == out.size());
    // y and the running statistics: the same forward, bit for bit.
    for (size_t k : {size_t{0}, size_t{4}, size_t{5}}) {
      CAPTURE(k);
      CHECK(std::memcmp(plain[k].raw(), out[k].raw(), plain[k].bytes()) == 0);
    }
    // dx, dgamma, dbeta: x^ = (y - beta) / gamma in double differs from (x - mean) / std by the
    // rounding of y (f32: about 6e-8 of |y| / |gamma|).
    const double tolerance = t == DType::f64 ? 1e-12 : 1e-5;
    for (size_t k = 1; k <= 3; ++k) {
      CAPTURE(k);
      double worst = 0, scale = 0;
      for (int64_t i = 0; i < plain[k].numel(); ++i) {
        const double want = element_as_double(plain[k], i);
        worst = worse(worst, std::abs(element_as_double(out[k], i) - want));
        scale = std::max(scale, std::abs(want));
      }
      CHECK(scale > 0.1);
      CHECK(worst <= tolerance * scale);
    }
  }
}

TEST_CASE("batch_norm from its output: roles, and which batch norms read_batch_norm_outputs sets") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 4, 5, 5}, DType::f32, true);
  block(x, false);
  std::vector<const BatchNormOp*> bns;
  for (const OpNode& n : tape.ops())
    if (auto* bn = dynamic_cast<const BatchNormOp*>(n.op.get())) bns.push_back(bn);
  REQUIRE(bns.size() == 3);
  CHECK(bns[0]->roles(Mode::training, cpu_backend()).backward_reads_inputs ==
        std::vector<int>{0, 1});
  // SiLU reads bn1's output in backward and c4 bn3's: they switch; bn2's goes to an addition.
  CHECK(read_batch_norm_outputs(tape, cpu_backend()) == 2);
  CHECK(bns[0]->from_output());
  CHECK_FALSE(bns[1]->from_output());
  CHECK(bns[2]->from_output());
  CHECK(read_batch_norm_outputs(tape, cpu_backend()) == 0);  // already set
  check_from_output_roles(bns[0]->roles(Mode::training, cpu_backend()));
  // A convolution reads its input for its weight gradient: a batch norm before one switches,
  // where its own input would die.
  ParamStore store2;
  Tape tape2(store2);
  Value x2 = tape2.input("x", {2, 3, 4, 4}, DType::f32, true);
  conv2d(batch_norm(conv2d(x2, {.out = 3, .kernel = 1}), {.name = "switches"}),
         {.out = 2, .kernel = 1});
  relu(batch_norm(conv2d(x2, {.out = 3, .kernel = 1}), {.name = "before_relu"}));  // output/mask
  conv2d(batch_norm(x2, {.name = "on_input"}), {.out = 2, .kernel = 1});  // x2 lives on anyway
  Value g = conv2d(x2, {.out = 3, .kernel = 1});
  conv2d(batch_norm(g, {.name = "input_read"}), {.out = 2, .kernel = 1});
  conv2d(g, {.out = 2, .kernel = 1});  // ... and so does g: this convolution's backward reads it
  Value s = sigmoid(x2);               // sigmoid's backward reads its own output
  conv2d(batch_norm(s, {.name = "after_sigmoid"}), {.out = 2, .kernel = 1});
  CHECK(read_batch_norm_outputs(tape2, cpu_backend()) == 1);
  for (const OpNode& n : tape2.ops())
    if (auto* bn = dynamic_cast<const BatchNormOp*>(n.op.get()))
      CHECK(bn->from_output() == (tape2.value(n.inputs[1]).name == "switches.weight"));
}

TEST_CASE("batch_norm from its output: planned == baseline bitwise, rebuilt and packed too") {
  check_planned_equals_baseline([](Value x) { return block(x, true); });
  check_planned_equals_baseline(
      [](Value x) { return silu(batch_norm(silu(batch_norm(x, {.from_output = true})))); });
}

TEST_CASE("batch_norm from its output: the planned arena no longer holds the input") {
  auto arena = [](bool from_output) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store);
    Value x = tape.input("x", {8, 16, 32, 32}, DType::f32);
    Value v = x;
    for (int k = 0; k < 4; ++k)
      v = silu(
          batch_norm(conv2d(v, {.out = 16, .kernel = 3, .pad = 1}), {.from_output = from_output}));
    const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                   {.keep = {v.id()}, .alignment = 64});
    return l.plan.arena_bytes;
  };
  const size_t plain = arena(false), out = arena(true);
  MESSAGE("four conv -> batch norm -> SiLU layers: ", plain, " bytes, from outputs ", out);
  // Each layer kept x (the batch norm's input), y (SiLU's) and SiLU's output (the next
  // convolution's), 0.5 MiB each; from outputs, each x dies after forward (here 4 x 0.5 MiB
  // less 128 bytes of alignment).
  const size_t tensor = size_t{8} * 16 * 32 * 32 * 4;
  CHECK(out + 3 * tensor <= plain);
}

TEST_CASE("batch_norm from its output: a zero or non-finite weight is an error in forward") {
  for (DType t : {DType::f32, DType::f64}) {
    for (double bad : {0.0, std::nan("")}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(bad);
      ParamStore store;
      Tape tape(store, t);
      Value x = tape.input("x", {4, 3, 2, 2}, t, true);
      Value y = batch_norm(x, {.name = "bn", .from_output = true});
      Tensor& gamma = store.find("bn.weight")->value;
      if (t == DType::f64)
        gamma.data<double>()[1] = bad;
      else
        gamma.data<float>()[1] = static_cast<float>(bad);
      Executor ex(tape, cpu_backend(), {.keep = {y}, .optimizer = std::nullopt});
      ex.set_input(x, random_tensor({4, 3, 2, 2}, 5, -1, 1, t));
      CHECK_THROWS_WITH_AS(ex.forward(),
                           doctest::Contains(bad == 0 ? "batch_norm bn: weight of channel 1 is 0, "
                                                        "so its normalized input cannot be "
                                                        "recovered"
                                                      : "batch_norm bn: weight of channel 1 is "
                                                        "nan: the weights diverged"),
                           Error);
    }
  }
}

TEST_CASE("batch_norm from its output: the CPU kernel refuses a zero weight itself") {
  const Tensor y = random_tensor({4, 3, 2, 2}, 5, -1, 1, DType::f64);
  const Tensor dy = random_tensor({4, 3, 2, 2}, 6, -1, 1, DType::f64);
  const Tensor gamma = from({3}, {1, 2, 0}), beta = from({3}, {0, 0, 0});
  const Tensor inv_std = from({3}, {1, 1, 1});
  Tensor dx = Tensor::empty({4, 3, 2, 2}, DType::f64), none;
  CHECK_THROWS_WITH_AS(
      cpu_backend().batchnorm_backward_from_output(y, dy, gamma, beta, inv_std, dx, none, none),
      doctest::Contains("batch_norm backward from its output: weight of channel 2 is 0"), Error);
}

TEST_CASE("batch_norm from its output: statistics synchronized over ranks are refused by name") {
  std::unique_ptr<Communicator> self = self_communicator();
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {4, 3, 2, 2}, DType::f32, true);
  Value y = batch_norm(x, {.from_output = true});
  Executor ex(tape, cpu_backend(),
              {.keep = {y}, .optimizer = std::nullopt, .sync_bn_comm = self.get()});
  ex.set_input(x, random_tensor({4, 3, 2, 2}, 5, -1, 1, DType::f32));
  CHECK_THROWS_WITH_AS(
      ex.forward(),
      doctest::Contains("batch_norm batch_norm0: from its output (--bn-from-output) "
                        "does not run with statistics synchronized over ranks "
                        "(--sync-bn)"),
      Error);
}
