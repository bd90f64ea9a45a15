// The memory report: the bytes it claims are the bytes the allocator hands out, and the
// planned figures respect lower bound <= arena <= baseline.
#include <doctest/doctest.h>

#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "report/report.h"
#include "run/executor.h"

using namespace frugal;

namespace {
Value small_resnet(Value x) {
  Value h = relu(batch_norm(conv2d(x, {.out = 8, .kernel = 3, .pad = 1, .bias = false})));
  for (int i = 0; i < 3; ++i) {
    Value b = relu(batch_norm(conv2d(h, {.out = 8, .kernel = 3, .pad = 1, .bias = false})));
    b = batch_norm(conv2d(b, {.out = 8, .kernel = 3, .pad = 1, .bias = false}));
    h = relu(add(b, h));
  }
  return linear(flatten(max_pool2d(h, {.kernel = 4})), {.out = 10});
}
}  // namespace

TEST_CASE("report bytes equal the bytes the executor allocates") {
  for (Mode mode : {Mode::training, Mode::inference}) {
    CAPTURE(mode_name(mode));
    ParamStore store(1);
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {8, 3, 16, 16}, DType::f32);
    Value labels = tape.input("labels", {8}, DType::i32);
    Value logits = small_resnet(x);
    Value out = mode == Mode::training ? softmax_cross_entropy(logits, labels) : logits;
    ReportOptions ro{.keep = {out.id()}};
    MemoryReport r = memory_report(tape, mode, cpu_backend(), ro);
    CHECK(r.planned.lower_bound <= r.planned.arena);
    CHECK(r.planned.total < r.baseline.total);
    CHECK(r.planned.bytes.outputs < r.baseline.bytes.outputs);

    const size_t input_bytes = 8 * 3 * 16 * 16 * 4 + 8 * 4;
    for (MemoryMode m : {MemoryMode::planned, MemoryMode::baseline}) {
      const size_t before = cpu_allocator().current_bytes();
      std::optional<OptimizerConfig> sgd;
      if (mode == Mode::training) sgd = OptimizerConfig{.lr = 0.1, .momentum = 0.9};
      Executor ex(tape, cpu_backend(),
                  {.mode = mode, .memory = m, .keep = {out}, .optimizer = sgd});
      const size_t held = cpu_allocator().current_bytes() - before;
      CHECK(held == ex.memory_bytes());
      if (m == MemoryMode::planned) {
        CHECK(ex.arena_bytes() == r.planned.arena);
        CHECK(held == r.planned.arena + input_bytes);
      } else {
        // Baseline holds every buffer (weight gradients included in training).
        const CategoryBytes& b = r.baseline.bytes;
        size_t weights = 0;
        for (Parameter* p : store.all()) weights += p->value.bytes();
        size_t param_grads = mode == Mode::training ? b.params - weights : 0;
        CHECK(held == b.outputs + b.grad_inputs + b.buffers + param_grads + input_bytes);
      }
    }
  }
}

TEST_CASE("report: the optimizer state it claims is what a step allocates, SGD and AdamW") {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adamw}) {
    CAPTURE(optimizer_name(kind));
    ParamStore store(1);
    Tape tape(store, DType::f32);
    Value x = tape.input("x", {4, 3, 16, 16}, DType::f32);
    Value labels = tape.input("labels", {4}, DType::i32);
    Value loss = softmax_cross_entropy(small_resnet(x), labels);
    const MemoryReport r = memory_report(tape, Mode::training, cpu_backend(),
                                         {.optimizer_kind = kind, .keep = {loss.id()}});
    size_t trainable = 0;
    for (Parameter* p : store.all())
      if (p->trainable) trainable += p->value.bytes();
    CHECK(r.planned.bytes.optimizer_state == trainable * (kind == OptimizerKind::adamw ? 2 : 1));
    CHECK(r.baseline.bytes.optimizer_state == r.planned.bytes.optimizer_state);
    const size_t before = cpu_allocator().stats(Role::optimizer_state).current;
    {
      Executor ex(tape, cpu_backend(),
                  {.keep = {loss}, .optimizer = OptimizerConfig{.lr = 0.01, .kind = kind}});
      ex.set_input(x, Tensor::zeros({4, 3, 16, 16}, DType::f32));
      ex.set_input(labels, Tensor::zeros({4}, DType::i32));
      ex.forward();
      ex.backward(loss);
    }
    CHECK(cpu_allocator().stats(Role::optimizer_state).current - before ==
          r.planned.bytes.optimizer_state);
  }
}
