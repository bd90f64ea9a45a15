// Session: one plan per input-shape signature; other batch sizes replan and give the same
// per-sample results; switching memory modes mid-run changes nothing.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "run/session.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
Value net(Tape&, std::span<const Value> in) {
  Value h = relu(conv2d(in[0], {.out = 4, .kernel = 3, .pad = 1}));
  return softmax_cross_entropy(linear(flatten(h), {.out = 3}), in[1]);
}
Value logits(Tape&, std::span<const Value> in) {
  return linear(flatten(relu(conv2d(in[0], {.out = 4, .kernel = 3, .pad = 1}))), {.out = 3});
}
}  // namespace

TEST_CASE("session plans once per input shape and replans for another batch size") {
  ParamStore store(1);
  Session s(store, cpu_backend(), {"x"}, logits, {.mode = Mode::inference});
  Tensor big = random_tensor({4, 2, 5, 5}, 1, -1, 1, DType::f32);
  Tensor y4 = Tensor::empty({4, 3}, DType::f32);
  copy_bytes(s.step(std::vector<Tensor>{big}), y4);
  CHECK(s.plans() == 1);
  s.step(std::vector<Tensor>{big});
  CHECK(s.plans() == 1);
  // The first sample alone, through a new plan, gives what it gave inside the batch. Not
  // bitwise: a convolution cuts a lone sample into row tiles so both threads work, and the
  // GEMMs of the smaller tiles round differently (bits are fixed per batch and thread count).
  Tensor one = Tensor(big.storage(), 0, {1, 2, 5, 5}, DType::f32);
  const Tensor& y1 = s.step(std::vector<Tensor>{one});
  CHECK(s.plans() == 2);
  for (int j = 0; j < 3; ++j)
    CHECK(y1.data<float>()[j] == doctest::Approx(y4.data<float>()[j]).epsilon(1e-5));
}

TEST_CASE("session training switches memory mode between steps without changing results") {
  auto run = [](bool switch_modes) {
    ParamStore store(2);
    Session s(store, cpu_backend(), {"x", "labels"}, net,
              {.memory = MemoryMode::baseline,
               .seed = 4,
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
    std::vector<float> losses;
    for (int i = 0; i < 4; ++i) {
      if (switch_modes) s.set_memory(i % 2 ? MemoryMode::planned : MemoryMode::baseline);
      std::vector<Tensor> in{random_tensor({3, 2, 5, 5}, 10 + i, -1, 1, DType::f32),
                             random_labels(3, 3, 20 + i)};
      losses.push_back(s.step(in).data<float>()[0]);
    }
    return losses;
  };
  auto a = run(false), b = run(true);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == b[i]);
}
