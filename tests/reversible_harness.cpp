// Steps shared by the tests of blocks that rebuild their input (reversible, affine coupling,
// invertible): one seeded step with every gradient kept (two SGD steps with a loss are
// check/modecheck.h's train_two_steps).
#include "tests/reversible_harness.h"

#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_slice.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/relu.h"

namespace frugal::testing {

Value revnet_half(Value h, bool with_dropout) {
  const int64_t c = h.shape()[1];
  h = conv2d(relu(batch_norm(h)), {.out = c, .kernel = 3, .pad = 1, .bias = false});
  if (with_dropout) h = dropout(h, 0.2);
  return conv2d(relu(batch_norm(h)), {.out = c, .kernel = 3, .pad = 1, .bias = false});
}

Value stored_twin(Value x, int index, bool with_dropout, const std::optional<FixedPoint>& grid) {
  Tape& t = x.tape();
  const int64_t c = x.shape()[1];
  auto half = [&](const char* which, Value h) {
    Tape::Scope s(t, "reversible" + std::to_string(index) + "/" + which);
    Value f = revnet_half(h, with_dropout);
    return grid ? fixed_point(f, *grid) : f;
  };
  Value x1 = channel_slice(x, 0, c / 2), x2 = channel_slice(x, c / 2, c);
  Value y1 = add(x1, half("F", x2));
  Value y2 = add(x2, half("G", y1));
  return concat({y1, y2});
}

StepResult run_step(const Net& net, DType dtype, MemoryMode memory) {
  ParamStore store(11);
  Tape tape(store, dtype);
  const Shape shape{2, 4, 6, 6};
  Value x = tape.input("x", shape, dtype, true);
  Value y = net(x);
  Executor ex(tape, cpu_backend(),
              {.memory = memory, .poison = true, .seed = 5, .keep = {y}, .keep_param_grads = true});
  ex.set_input(x, random_tensor(shape, 3, -1, 1, dtype));
  ex.forward();
  StepResult r;
  r.y = clone(ex.value(y));
  std::pair<Value, Tensor> seed{y, random_tensor(y.shape(), 4, -1, 1, dtype)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  r.dx = clone(ex.grad(x));
  for (Parameter* p : store.all()) {
    if (!p->trainable) {
      r.stats.push_back(clone(p->value));
      continue;
    }
    for (size_t v = 0; v < tape.values().size(); ++v)
      if (tape.values()[v].param == p) {
        r.grads.push_back(clone(ex.grad(Value(&tape, static_cast<int>(v)))));
        break;
      }
  }
  return r;
}

void check_equal_to_twin(const StepResult& rebuilt, const StepResult& twin) {
  CHECK(max_rel(rebuilt.y, twin.y) < 1e-12);
  CHECK(max_rel(rebuilt.dx, twin.dx) < 1e-10);
  REQUIRE(rebuilt.grads.size() == twin.grads.size());
  for (size_t i = 0; i < rebuilt.grads.size(); ++i)
    CHECK(max_rel(rebuilt.grads[i], twin.grads[i]) < 1e-10);
  REQUIRE(rebuilt.stats.size() == twin.stats.size());  // BatchNorm updated once per step
  for (size_t i = 0; i < rebuilt.stats.size(); ++i)
    CHECK(max_rel(rebuilt.stats[i], twin.stats[i]) < 1e-12);
}

void check_round_trips(const std::vector<ProbeRecord>& probes) {
  for (size_t i = 0; i < probes.size(); ++i) {
    CAPTURE(i);
    CHECK(round_trip_error(probes[i].backward, probes[i].forward) < 1e-12);
  }
}

}  // namespace frugal::testing
