// Parameters used more than once: a siamese tower (one conv2d name recorded twice in one scope)
// and one linear layer applied three times. Each parameter is one value on the tape, so its
// gradient sums every use (checked against finite differences), it gets exactly one optimizer
// update per step, and planned steps are bitwise equal to baseline steps.
#include <doctest/doctest.h>

#include <cmath>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// Two images through one tower ("tower.weight", "tower.bias" recorded twice), then a head.
Value siamese(Value a, Value b) {
  auto tower = [](Value x) {
    return relu(conv2d(x, {.out = 3, .kernel = 3, .pad = 1, .name = "tower"}));
  };
  Value joined = add(tower(a), tower(b));
  return linear(flatten(joined), {.out = 4, .name = "head"});
}

// One linear layer ("shared") applied three times.
Value three_uses(Value x) {
  Value h = x;
  for (int i = 0; i < 3; ++i) h = relu(linear(h, {.out = 5, .name = "shared"}));
  return h;
}

int param_values(const Tape& tape) {
  int n = 0;
  for (const ValueNode& v : tape.values()) n += v.kind == ValueKind::param;
  return n;
}

struct Trained {
  std::vector<Tensor> weights, momenta;
  Tensor loss;
};

// Two SGD steps with momentum of the siamese net (or the three-use net) in one memory mode.
Trained train(MemoryMode memory, bool three, bool keep_param_grads) {
  ParamStore store(7);
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {2, 2, 5, 5}, DType::f32);
  Value b = tape.input("b", {2, 2, 5, 5}, DType::f32);
  Value x = tape.input("x", {2, 5}, DType::f32);
  Value labels = tape.input("labels", {2}, DType::i32);
  Value logits = three ? three_uses(x) : siamese(a, b);
  Value loss = softmax_cross_entropy(logits, labels);
  Executor ex(tape, cpu_backend(),
              {.memory = memory,
               .poison = memory == MemoryMode::planned,
               .seed = 3,
               .keep = {loss},
               .keep_param_grads = keep_param_grads,
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3}});
  Trained t;
  for (int s = 0; s < 2; ++s) {
    ex.set_input(a, random_tensor({2, 2, 5, 5}, 10 + s, -1, 1, DType::f32));
    ex.set_input(b, random_tensor({2, 2, 5, 5}, 20 + s, -1, 1, DType::f32));
    ex.set_input(x, random_tensor({2, 5}, 30 + s, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(2, three ? 5 : 4, 40 + s));
    ex.forward();
    t.loss = clone(ex.value(loss));
    ex.backward(loss);
  }
  for (Parameter* p : store.all()) {
    t.weights.push_back(clone(p->value));
    t.momenta.push_back(clone(p->momentum));
  }
  return t;
}

void check_same(const Trained& x, const Trained& y) {
  CHECK(bitwise_equal(x.loss, y.loss));
  REQUIRE(x.weights.size() == y.weights.size());
  for (size_t i = 0; i < x.weights.size(); ++i) {
    CHECK(bitwise_equal(x.weights[i], y.weights[i]));
    CHECK(bitwise_equal(x.momenta[i], y.momenta[i]));
  }
}

}  // namespace

TEST_CASE("a parameter recorded twice is one value on the tape") {
  ParamStore store(1);
  Tape tape(store, DType::f64);
  Value a = tape.input("a", {1, 2, 4, 4}, DType::f64);
  Value b = tape.input("b", {1, 2, 4, 4}, DType::f64);
  siamese(a, b);
  CHECK(store.size() == 4);        // tower.weight, tower.bias, head.weight, head.bias
  CHECK(param_values(tape) == 4);  // not 6: the tower's two uses share their values
  Parameter* w = store.find("tower.weight");
  REQUIRE(w != nullptr);
  CHECK(tape.param(*w).id() == tape.param(*w).id());
}

TEST_CASE("gradcheck siamese tower: one gradient summed over both branches") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{siamese(x[0], x[1])}; },
                  {random_tensor({2, 2, 4, 4}, 1), random_tensor({2, 2, 4, 4}, 2)});
}

TEST_CASE("gradcheck one linear layer used three times") {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{three_uses(x[0])}; },
                  {random_tensor({3, 5}, 3)});
}

TEST_CASE("a shared parameter gets exactly one update per step") {
  // SGD without momentum or decay: after one step w = w0 - lr * dw, where dw sums all uses.
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    ParamStore store(5);
    Tape tape(store, DType::f64);
    Value x = tape.input("x", {3, 5}, DType::f64);
    Value labels = tape.input("labels", {3}, DType::i32);
    Value loss = softmax_cross_entropy(three_uses(x), labels);
    Parameter* w = store.find("shared.weight");
    REQUIRE(w != nullptr);
    const Tensor w0 = clone(w->value);
    const double lr = 0.5;
    Executor ex(tape, cpu_backend(),
                {.memory = memory,
                 .keep = {loss},
                 .keep_param_grads = true,
                 .optimizer = OptimizerConfig{.lr = lr}});
    ex.set_input(x, random_tensor({3, 5}, 8));
    ex.set_input(labels, random_labels(3, 5, 9));
    ex.forward();
    ex.backward(loss);
    const Tensor& dw = ex.grad(tape.param(*w));
    double moved = 0;
    for (int64_t i = 0; i < w0.numel(); ++i) {
      const double expected = w0.data<double>()[i] - lr * dw.data<double>()[i];
      CHECK(std::abs(w->value.data<double>()[i] - expected) < 1e-12);
      moved += std::abs(w->value.data<double>()[i] - w0.data<double>()[i]);
    }
    CHECK(moved > 0);
  }
}

TEST_CASE("shared parameters train bitwise equal in baseline and planned memory") {
  for (bool three : {false, true}) {
    CAPTURE(three);
    const Trained base = train(MemoryMode::baseline, three, false);
    check_same(base, train(MemoryMode::planned, three, false));
    check_same(base, train(MemoryMode::planned, three, true));
  }
}
