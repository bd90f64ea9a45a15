// The checks of the out-of-tree layer, against the installed package only: its gradients
// against finite differences, a small network planned == baseline bit for bit, the in-place run
// the planner makes of it, and its error message. Prints OK and returns 0 when all pass.
#include <cstdio>
#include <memory>
#include <string>

#include "absolute.h"
#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;
using mylayers::absolute;

namespace {

// conv2d -> abs -> conv2d, the two convolutions sharing one weight: w and b are made here and
// passed to the built-in op as its inputs {x, w, b}, as conv2d() does with the ones it makes.
Value tiny_net(Value x) {
  Tape& t = x.tape();
  const int64_t c = x.shape()[1];
  Value w = t.param("shared.weight", {c, c, 3, 3}, Init::normal(0.3));
  Value b = t.param("shared.bias", {c}, Init::zeros());
  auto conv = [&](std::vector<Value> in) {  // stride 1, pad 1
    return t.record(std::make_unique<Conv2dOp>(1, 1), std::move(in),
                    std::source_location::current())[0];
  };
  Value h = absolute(conv({x, w, b}));
  return conv({h, w});  // the same w again, no bias
}

void gradcheck_absolute() {
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{absolute(x[0])}; },
                  {kink_free({2, 3, 4, 5}, 1)});
  // Inside the network: d x, d w (summed over both uses) and d b.
  check_gradients([](std::span<const Value> x) { return std::vector<Value>{tiny_net(x[0])}; },
                  {random_tensor({2, 3, 4, 4}, 2)});
}

// Nothing reads conv2d's output after abs's forward (conv2d's backward reads its input), so
// the planner runs abs in place: h takes a's bytes.
void planned_absolute_runs_in_place() {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 6, 6}, DType::f32, true);
  Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
  Value h = absolute(a);
  Value y = conv2d(h, {.out = 2, .kernel = 3});
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {y}});
  FRUGAL_CHECK(ex.value(h).raw() == ex.value(a).raw(), "abs did not run in place");
}

void absolute_rejects_integer_input() {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {4}, DType::i32);
  try {
    absolute(labels);
  } catch (const Error& e) {
    const std::string what = e.what();
    FRUGAL_CHECK(what.find("main.cpp:") != std::string::npos &&
                     what.find("abs: input must be f32 or f64, got i32 [4]") != std::string::npos,
                 "unexpected error: ", what);
    return;
  }
  FRUGAL_CHECK(false, "abs accepted an i32 input");
}

}  // namespace

int main() {
  try {
    gradcheck_absolute();
    check_planned_equals_baseline(tiny_net);
    planned_absolute_runs_in_place();
    absolute_rejects_integer_input();
  } catch (const Error& e) {
    std::printf("FAIL: %s\n", e.what());
    return 1;
  }
  std::printf("OK: abs passes its gradient check and trains bitwise equal in both modes\n");
  return 0;
}
