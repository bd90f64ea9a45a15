// Steps of a network on any backend as host copies (tests/device/harness.h).
#include "tests/device/harness.h"

#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/batchnorm2d.h"
#include "layers/binary.h"
#include "layers/concat.h"
#include "layers/concat_batch_norm.h"
#include "layers/conv2d.h"
#include "layers/conv3d.h"
#include "layers/conv_transpose3d.h"
#include "layers/fixed_point.h"
#include "layers/flatten.h"
#include "layers/leaky_relu.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "recompute/affine_coupling.h"
#include "recompute/reversible.h"

#include <cstring>

namespace frugal::testing {

// A host copy of t, detached from t's memory.
Tensor snapshot(Backend& be, const Tensor& t) {
  return clone(to_host(be, t));
}

void check_all_bitwise(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(a[i], b[i]));
  }
}

// Every parameter, running statistic and optimizer state buffer of a store, as host copies.
std::vector<Tensor> state_of(ParamStore& store) {
  std::vector<Tensor> out;
  for (Parameter* p : store.all()) {
    out.push_back(snapshot(store.backend(), p->value));
    if (p->momentum.defined()) out.push_back(snapshot(store.backend(), p->momentum));
    if (p->second_moment.defined()) out.push_back(snapshot(store.backend(), p->second_moment));
  }
  return out;
}

std::vector<Tensor> train_on(Backend& be, const Network& net, Shape shape, int64_t classes,
                             MemoryMode memory, int steps, OptimizerKind optimizer,
                             Recompute recompute) {
  ParamStore store(7, be);
  Tape tape(store, DType::f32);
  Value x = tape.input("images", shape, DType::f32, true);
  Value labels = tape.input("labels", {shape[0]}, DType::i32);
  Value logits = net(x);
  Value loss = softmax_cross_entropy(logits, labels);
  Executor ex(tape, be,
              {.memory = memory,
               .poison = memory == MemoryMode::planned,
               .seed = 3,
               .keep = {loss, logits},
               .keep_param_grads = true,
               .optimizer = OptimizerConfig{.lr = 0.05, .momentum = 0.9},
               .recompute = recompute});
  std::vector<Tensor> out;
  for (int step = 0; step < steps; ++step) {
    if (optimizer == OptimizerKind::adamw)
      ex.set_optimizer(
          {.lr = 0.01, .weight_decay = 0.01, .kind = OptimizerKind::adamw, .step = step + 1});
    ex.set_input(x, random_tensor(shape, 10 + step, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(shape[0], classes, 20 + step));
    ex.forward();
    out.push_back(snapshot(be, ex.value(loss)));
    out.push_back(snapshot(be, ex.value(logits)));
    ex.backward(loss);
    out.push_back(snapshot(be, ex.grad(x)));
    for (size_t v = 0; v < tape.values().size(); ++v)
      if (tape.values()[v].kind == ValueKind::param && tape.values()[v].requires_grad)
        out.push_back(snapshot(be, ex.grad(Value(&tape, static_cast<int>(v)))));
  }
  for (const Tensor& t : state_of(store)) out.push_back(t);
  return out;
}

// A bundled model as train_on's network.
Network bundled(const std::string& name, const ModelConfig& config) {
  return [=](Value x) { return find_model(name).build(x, config); };
}

// The bits of each of `steps` training steps' losses.
std::vector<uint32_t> loss_bits(Trainer& t, int steps) {
  std::vector<uint32_t> bits;
  for (int i = 0; i < steps; ++i) {
    const float loss = t.step().loss;
    uint32_t u;
    std::memcpy(&u, &loss, 4);
    bits.push_back(u);
  }
  return bits;
}

namespace {
// conv 3x3 -> ReLU -> conv 3x3 from a half's channels to `out` channels.
Value half(Value h, int64_t out) {
  h = relu(conv2d(h, {.out = h.shape()[1], .kernel = 3, .pad = 1}));
  return conv2d(h, {.out = out, .kernel = 3, .pad = 1});
}

}  // namespace

// LeakyReLU, an affine coupling block, the fixed-point grid and an exact reversible block,
// then a linear head: every host loop that moved into the backend, in one network.
Value coupling_net(Value x) {
  x = leaky_relu(x, 0.1);
  x = affine_coupling_block(
      x, [](Value h) { return half(h, 2 * h.shape()[1]); },
      [](Value h) { return half(h, h.shape()[1]); });
  x = fixed_point(x);
  auto f = [](Value h) { return half(h, h.shape()[1]); };
  x = reversible_block(x, f, f, {.fixed_point = FixedPoint{}});
  return linear(flatten(x), {.out = 5});
}

Network dense_net(bool fused) {
  return [fused](Value x) {
    auto norm = [fused](std::vector<Value> maps) {
      return relu(fused ? concat_batch_norm(maps) : batch_norm(concat(maps)));
    };
    Value f1 = conv2d(relu(batch_norm(x)), {.out = 3, .kernel = 3, .pad = 1});
    Value f2 = conv2d(norm({x, f1}), {.out = 2, .kernel = 1});
    return linear(flatten(norm({x, f1, f2})), {.out = 5});
  };
}

Value volume_net(Value x) {
  Value a = relu(conv3d(x, {.out = 3, .kernel = 3, .pad = 1}));
  Value d = relu(conv3d(a, {.out = 4, .kernel = 3, .stride = 2, .pad = 1}));
  Value u = conv_transpose3d(d, {.out = 3, .kernel = 2, .stride = 2});
  Value h = relu(binary(BinaryKind::add, a, u));
  return linear(flatten(h), {.out = 5});
}

}  // namespace frugal::testing
