// concat_batch_norm: finite-difference gradients in f64, the bits of concat then batch_norm
// (outputs, input gradients, updated weights, running statistics; planned, baseline and with
// rebuilds; synchronized batch norm), roles (what backward keeps), the ONNX import's fusion,
// and errors.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "dist/communicators.h"
#include "layers/batchnorm2d.h"
#include "layers/concat.h"
#include "layers/concat_batch_norm.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// batch_norm(concat(xs)) either as one op or as the two.
Value joined_norm(bool fused, std::vector<Value> xs, const BatchNormOptions& o = {}) {
  return fused ? concat_batch_norm(std::move(xs), o) : batch_norm(concat(std::move(xs)), o);
}

// Two dense layers and a transition, as in a DenseNet: every layer's BatchNorm reads the
// concatenation of the block input and the features before it; one piece (a frozen, non
// trainable tensor) gets no gradient, so its dy slice goes through scratch.
Net dense_block(bool fused) {
  return [fused](Value x) {
    Value f1 = relu(conv2d(relu(joined_norm(fused, {x, x})), {.out = 3, .kernel = 3, .pad = 1}));
    Value frozen = x.tape().param("frozen", x.shape(), Init::uniform(1.0), false);
    Value f2 = conv2d(relu(joined_norm(fused, {x, f1, frozen}, {.momentum = 0.3, .name = "bn1"})),
                      {.out = 2, .kernel = 1});
    return relu(joined_norm(fused, {x, f1, f2}, {.eps = 1e-3}));
  };
}

// A few training steps with synchronized batch norm over a group of one: loss and dx per step,
// then every parameter and running statistic.
std::vector<Tensor> synced_steps(bool fused, Communicator* comm) {
  ParamStore store(5);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 5, 5}, DType::f32, true);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value h = dense_block(fused)(x);
  Value loss = softmax_cross_entropy(linear(flatten(h), {.out = 5}), labels);
  const OptimizerConfig opt{.lr = 0.1, .momentum = 0.9};
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::training,
               .memory = MemoryMode::planned,
               .keep = {loss},
               .optimizer = opt,
               .sync_bn_comm = comm});
  ex.set_input(x, random_tensor({4, 3, 5, 5}, 21, -1, 1, DType::f32));
  Tensor l = Tensor::empty({4}, DType::i32);
  for (int i = 0; i < 4; ++i) l.data<int32_t>()[i] = i;
  ex.set_input(labels, l);
  std::vector<Tensor> out;
  for (int s = 0; s < 3; ++s) {
    ex.forward();
    ex.backward(loss);
    out.push_back(clone(ex.value(loss)));
    out.push_back(clone(ex.grad(x)));
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("concat_batch_norm: finite-difference gradients in f64") {
  check_gradients(
      [](std::span<const Value> x) {
        Value y = concat_batch_norm({x[0], x[1], x[0]}, {.eps = 1e-3, .name = "bn"});
        randomize_param(x[0].tape(), "bn.weight", 3, 0.5, 1.5);
        randomize_param(x[0].tape(), "bn.bias", 4, -1, 1);
        return std::vector<Value>{y};
      },
      {random_tensor({3, 2, 3, 2}, 7, -2, 2), random_tensor({3, 1, 3, 2}, 8, -2, 2)});
  // (N, C) pieces, and one that carries no gradient (its channels still train gamma and beta).
  check_gradients(
      [](std::span<const Value> x) {
        Value c = x[0].tape().param("c", x[0].shape(), Init::uniform(2.0), false);
        return std::vector<Value>{concat_batch_norm({c, x[0], x[1]}, {.momentum = 0.5})};
      },
      {random_tensor({5, 3}, 9, -2, 2), random_tensor({5, 2}, 10, -2, 2)});
}

TEST_CASE("concat_batch_norm: the bits of concat then batch_norm, planned and baseline") {
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    const std::vector<Tensor> two = train_two_steps(dense_block(false), memory, {4, 3, 6, 6});
    const std::vector<Tensor> one = train_two_steps(dense_block(true), memory, {4, 3, 6, 6});
    CHECK(same_bits(one, two));
  }
  // Rebuilt in backward (Recompute::all and cheap) too.
  check_planned_equals_baseline(dense_block(true), {4, 3, 6, 6});
}

TEST_CASE("concat_batch_norm: synchronized batch norm gives the two ops' bits") {
  std::unique_ptr<Communicator> self = self_communicator();
  const std::vector<Tensor> two = synced_steps(false, self.get());
  CHECK(same_bits(synced_steps(true, self.get()), two));
  CHECK(!same_bits(synced_steps(true, nullptr), two));  // f32: the synced kernels did run
}

TEST_CASE("concat_batch_norm: backward keeps the pieces, not their concatenation") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {8, 16, 10, 10}, DType::f32, true);
  Value f = relu(conv2d(x, {.out = 16, .kernel = 3, .pad = 1}));
  Value g = relu(conv2d(f, {.out = 16, .kernel = 3, .pad = 1}));
  const Roles r =
      op_of<ConcatBatchNormOp>(concat_batch_norm({x, f, g})).roles(Mode::training, cpu_backend());
  CHECK(r.backward_reads_inputs == std::vector<int>{0, 1, 2, 3});
  CHECK(r.backward_scratch == 0);  // every piece needs its gradient
  CHECK(r.rebuildable);
  CHECK(r.saved.size() == 2);
  CHECK(r.saved[0].shape == Shape{48});
}

TEST_CASE("concat_batch_norm: errors name what is wrong") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {2, 3, 4, 4}, DType::f32, true);
  Value b = tape.input("b", {2, 3, 5, 4}, DType::f32, true);
  Value c = tape.input("c", {2, 3}, DType::f32, true);
  CHECK_THROWS_WITH_AS(concat_batch_norm({a, b}),
                       doctest::Contains("piece 1 [2,3,5,4] does not match piece 0 [2,3,4,4]"),
                       Error);
  CHECK_THROWS_WITH_AS(concat_batch_norm({a, c}),
                       doctest::Contains("piece 1 [2,3] does not match piece 0 [2,3,4,4]"), Error);
  CHECK_THROWS_WITH_AS(concat_batch_norm({a}), doctest::Contains("at least 2 pieces, got 1"),
                       Error);
  Value g = tape.param("g", Shape{5}, Init::ones(), true);
  CHECK_THROWS_WITH_AS(concat_batch_norm({a, a}, g, g, g, g),
                       doctest::Contains("weight [5] f32, expected [6] f32"), Error);
}
