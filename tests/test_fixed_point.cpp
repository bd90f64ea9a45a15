// Fixed-point coupling: the grid's rounding and exact addition, the fixed_point op (gradient
// check, in place), and reversible chains on the grid whose rebuilt inputs and gradients are
// bitwise those of the stored twin at every depth up to 64, in f32 as in f64.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "check/gradcheck.h"
#include "layers/conv2d.h"
#include "layers/fixed_point.h"
#include "layers/relu.h"
#include "recompute/reversible.h"
#include "run/executor.h"
#include "tests/reversible_harness.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Tensor f32_tensor(std::vector<float> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::f32);
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

// A chain of `depth` exact units on the grid, reversible or their stored twins, after one
// fixed_point() that puts x on the grid. A probe records each unit's input.
Value exact_chain(Value x, int depth, bool reversible, bool with_dropout,
                  std::vector<ProbeRecord>* probes = nullptr) {
  const FixedPoint grid;
  x = fixed_point(x, grid);
  auto half = [=](Value h) { return revnet_half(h, with_dropout); };
  for (int i = 0; i < depth; ++i) {
    if (probes) x = probe(x, (*probes)[static_cast<size_t>(i)]);
    x = reversible ? reversible_block(x, half, half, {.fixed_point = grid})
                   : stored_twin(x, i, with_dropout, grid);
  }
  return x;
}

void check_bitwise(const StepResult& a, const StepResult& b) {
  CHECK(bitwise_equal(a.y, b.y));
  CHECK(bitwise_equal(a.dx, b.dx));
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(a.grads[i], b.grads[i]));
  }
  REQUIRE(a.stats.size() == b.stats.size());
  for (size_t i = 0; i < a.stats.size(); ++i) CHECK(bitwise_equal(a.stats[i], b.stats[i]));
}

}  // namespace

TEST_CASE("fixed_point rounds to the grid, ties to even, and rejects values out of range") {
  const float g = std::ldexp(1.0f, -12);  // f32, range 12: grid 2^-12
  Tensor x = f32_tensor({0.1f, 2.5f * g, 3.5f * g, -2.5f * g, 4095.9f, -7.0f, 1e-9f});
  Tensor y = Tensor::empty(x.shape(), DType::f32);
  fixed_point_round(cpu_backend(), x, {}, y, "test");
  const float* v = y.data<float>();
  CHECK(v[0] == 410 * g);  // 0.1 * 4096 = 409.6
  CHECK(v[1] == 2 * g);
  CHECK(v[2] == 4 * g);
  CHECK(v[3] == -2 * g);
  CHECK(v[4] == 4095.9f);  // already a multiple of 2^-12 in f32
  CHECK(v[5] == -7.0f);
  CHECK(v[6] == 0.0f);
  fixed_point_round(cpu_backend(), x, {}, x, "test");  // in place
  CHECK(bitwise_equal(x, y));

  Tensor big = f32_tensor({1.0f, -4096.0f});
  CHECK_THROWS_WITH_AS(fixed_point_round(cpu_backend(), big, {}, big, "test"),
                       doctest::Contains("value -4096 at element 1 is outside the fixed-point "
                                         "range (-2^12, 2^12)"),
                       Error);
  Tensor nan = f32_tensor({std::numeric_limits<float>::quiet_NaN()});
  CHECK_THROWS_WITH_AS(fixed_point_round(cpu_backend(), nan, {}, nan, "test"),
                       doctest::Contains("outside the fixed-point range"), Error);
  CHECK_THROWS_WITH_AS(fixed_point_round(cpu_backend(), x, {.range_bits = 24}, y, "test"),
                       doctest::Contains("range_bits 24 must be in [1, 23] for f32"), Error);
}

TEST_CASE("fixed_point_add is exactly undone by subtracting the same addend") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Shape s{4, 3, 40, 40};  // above the parallel threshold
    Tensor a = Tensor::empty(s, dtype), f = Tensor::empty(s, dtype);
    copy_bytes(random_tensor(s, 1, -200, 200, dtype), a);
    copy_bytes(random_tensor(s, 2, -3, 3, dtype), f);
    fixed_point_round(cpu_backend(), a, {}, a, "test");
    Tensor y = Tensor::empty(s, dtype), back = Tensor::empty(s, dtype);
    fixed_point_add(cpu_backend(), a, f, {}, false, y, "test");
    fixed_point_add(cpu_backend(), y, f, {}, true, back, "test");
    CHECK(bitwise_equal(back, a));
    CHECK(!bitwise_equal(y, a));
    // Off the grid: an error naming the caller, never an inexact result.
    Tensor off = Tensor::empty(s, dtype);
    copy_bytes(random_tensor(s, 3, -1, 1, dtype), off);
    CHECK_THROWS_WITH_AS(fixed_point_add(cpu_backend(), off, f, {}, false, y, "reversible 'r0'"),
                         doctest::Contains("reversible 'r0': element 0 of the input"), Error);
  }
}

TEST_CASE("gradcheck fixed_point") {
  // f64 on range 12: a grid of 2^-41, far below the difference step, so the straight-through
  // gradient is the derivative finite differences see.
  check_gradients([](std::span<const Value> in) { return std::vector<Value>{fixed_point(in[0])}; },
                  {random_tensor({2, 3, 4, 4}, 4)});
}

TEST_CASE("fixed_point runs in place") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 4, 5, 5}, DType::f32, true);
  Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
  Value q = fixed_point(a);
  Value y = relu(q);
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .poison = true, .keep = {y}});
  ex.set_input(x, random_tensor(x.shape(), 1, -1, 1, DType::f32));
  ex.forward();
  const Liveness& live = ex.liveness();
  CHECK(live.buffers[static_cast<size_t>(live.value_buffer[q.id()])].alias_of ==
        live.value_buffer[a.id()]);
  CHECK(ex.value(q).raw() == ex.value(a).raw());
}

// The float coupling drifts in f32 (docs/BENCHMARKS.md, reversible (d)); on the grid the rebuilt
// inputs, the gradients and the BatchNorm statistics are the stored twin's bits at any depth.
void check_exact_depths(DType dtype) {
  for (int depth : {1, 4, 16, 64}) {
    CAPTURE(depth);
    std::vector<ProbeRecord> probes(static_cast<size_t>(depth));
    const StepResult rev =
        run_step([&](Value x) { return exact_chain(x, depth, true, false, &probes); }, dtype,
                 MemoryMode::planned);
    const StepResult twin = run_step([&](Value x) { return exact_chain(x, depth, false, false); },
                                     dtype, MemoryMode::baseline);
    check_bitwise(rev, twin);
    for (size_t i = 0; i < probes.size(); ++i) {
      CAPTURE(i);
      CHECK(bitwise_equal(probes[i].backward, probes[i].forward));
    }
  }
}

TEST_CASE("exact reversible chains in f32 are bitwise their stored twin at depth 1 to 64") {
  check_exact_depths(DType::f32);
}

TEST_CASE("exact reversible chains in f64 are bitwise their stored twin at depth 1 to 64") {
  check_exact_depths(DType::f64);
}

TEST_CASE("exact reversible chain with dropout is bitwise its stored twin") {
  const StepResult rev = run_step([](Value x) { return exact_chain(x, 4, true, true); }, DType::f32,
                                  MemoryMode::planned);
  const StepResult twin = run_step([](Value x) { return exact_chain(x, 4, false, true); },
                                   DType::f32, MemoryMode::baseline);
  check_bitwise(rev, twin);
}

TEST_CASE("exact reversible block rejects an input off the grid and a bad range") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 4, 6, 6}, DType::f32, true);
  auto half = [](Value h) { return revnet_half(h, false); };
  Value y = reversible_block(x, half, half, {.fixed_point = FixedPoint{}});  // no fixed_point(x)
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {y}});
  ex.set_input(x, random_tensor(x.shape(), 1, -1, 1, DType::f32));
  CHECK_THROWS_WITH_AS(ex.forward(), doctest::Contains("is not on the fixed-point grid 2^-12"),
                       Error);
  CHECK_THROWS_WITH_AS(reversible_block(x, half, half, {.fixed_point = FixedPoint{0}}),
                       doctest::Contains("range_bits 0 must be in [1, 23] for f32"), Error);
}
