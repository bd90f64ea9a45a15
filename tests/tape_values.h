// Small helpers the op tests share: an f64 tensor from values, a parameter's tape value, a norm's
// roles from its output, a batch norm's results after a step, an elementwise op's values and
// gradients at given points, and whether the planner runs it in place in training.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tape.h"
#include "check/gradcheck.h"
#include "layers/conv2d.h"
#include "run/executor.h"

namespace frugal::testing {

// An f64 tensor of shape s holding v (as many values as s has elements).
inline Tensor from(Shape s, const std::vector<double>& v) {
  Tensor t = Tensor::empty(std::move(s), DType::f64);
  REQUIRE(static_cast<size_t>(t.numel()) == v.size());
  for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = v[i];
  return t;
}

// The tape value of parameter `name` (a failed check if the tape has none).
inline Value param_value(Tape& tape, const std::string& name) {
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && tape.values()[v].name == name)
      return Value(&tape, static_cast<int>(v));
  FAIL("no parameter ", name);
  return {};
}

// The training roles of a norm {x, gamma, beta, ...} that reads its output in backward (batch
// norm's and layer norm's from_output): gamma and beta, never x; y, which may take x's bytes;
// rebuildable.
inline void check_from_output_roles(const Roles& r) {
  CHECK(r.backward_reads_inputs == std::vector<int>{1, 2});
  CHECK(r.backward_reads_outputs == std::vector<int>{0});
  REQUIRE(r.aliases.size() == 1);  // in training too
  CHECK((r.aliases[0].output == 0 && r.aliases[0].input == 0));
  CHECK(r.rebuildable);
}

// After a step of batch norm "bn" (y = bn(x)): y, d x, d weight and d bias, then its running
// mean and variance, copied.
inline std::vector<Tensor> batch_norm_results(Executor& ex, Tape& tape, ParamStore& store, Value x,
                                              Value y) {
  std::vector<Tensor> out{clone(ex.value(y)), clone(ex.grad(x))};
  for (const char* p : {"bn.weight", "bn.bias"})
    out.push_back(clone(ex.grad(param_value(tape, p))));
  for (const char* p : {"bn.running_mean", "bn.running_var"})
    out.push_back(clone(store.find(p)->value));
  return out;
}

// y = op(x) and dx for dy = 1 at the points xs (one f64 vector), run on the CPU with poisoned
// buffers.
inline std::pair<std::vector<double>, std::vector<double>> values_and_grads(
    const std::function<Value(Value)>& op, const std::vector<double>& xs) {
  ParamStore store;
  Tape tape(store, DType::f64);
  const int64_t n = static_cast<int64_t>(xs.size());
  Value x = tape.input("x", {n}, DType::f64, true);
  Value y = op(x);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {x, y}, .optimizer = std::nullopt});
  ex.set_input(x, from({n}, xs));
  ex.forward();
  std::pair<Value, Tensor> seed{y, from({n}, std::vector<double>(xs.size(), 1.0))};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  std::vector<double> out, grad;
  for (int64_t i = 0; i < n; ++i) {
    out.push_back(ex.value(y).data<double>()[i]);
    grad.push_back(ex.grad(x).data<double>()[i]);
  }
  return {out, grad};
}

// Where a training step's plan puts op's output and input gradient, op between two
// convolutions (f32): whether the output takes its input's bytes, and whether the input's
// gradient takes the output gradient's.
struct InPlace {
  bool output, gradient;
};
inline InPlace planned_in_place(const std::function<Value(Value)>& op) {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, true);
  Value h = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
  Value act = op(h);
  Value y = conv2d(act, {.out = 2, .kernel = 3});
  Executor ex(
      tape, cpu_backend(),
      {.memory = MemoryMode::planned, .keep = {y}, .optimizer = OptimizerConfig{.lr = 0.1}});
  const Liveness& live = ex.liveness();
  auto buffer = [&](int b) { return live.buffers[static_cast<size_t>(b)]; };
  return {buffer(live.value_buffer[act.id()]).alias_of == live.value_buffer[h.id()],
          buffer(live.grad_buffer[h.id()]).alias_of == live.grad_buffer[act.id()]};
}

}  // namespace frugal::testing
