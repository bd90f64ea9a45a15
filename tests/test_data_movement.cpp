// The ops that only move data (transpose, reshape, slice, split, pad, concat on any axis) and
// softmax with the per-pixel cross-entropy: finite-difference gradients in f64, cases by hand,
// planned == baseline bitwise (rebuilds included), the simulated device against the CPU, and
// errors that name what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "core/copy_box.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/pad.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/slice.h"
#include "layers/softmax.h"
#include "layers/softmax_cross_entropy.h"
#include "layers/split.h"
#include "layers/transpose.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {
Tensor iota(const Shape& s, DType t = DType::f64) {
  Tensor x = Tensor::empty(s, t);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (t == DType::f64)
      x.data<double>()[i] = static_cast<double>(i);
    else
      x.data<float>()[i] = static_cast<float>(i);
  }
  return x;
}
std::vector<Value> one(Value v) {
  return {v};
}
}  // namespace

TEST_CASE("copy boxes: permutations, shifts and their simplification") {
  // (2,3,4) -> (4,2,3): y[k][i][j] = x[i][j][k]
  const CopyBox p = permute_box(Shape{2, 3, 4}, std::vector<int64_t>{2, 0, 1});
  CHECK(permuted_shape(Shape{2, 3, 4}, std::vector<int64_t>{2, 0, 1}) == Shape{4, 2, 3});
  Tensor x = iota({2, 3, 4}), y = Tensor::empty({4, 2, 3}, DType::f64);
  cpu_backend().strided_copy(p, x, y);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) CHECK(y.data<double>()[k * 6 + i * 3 + j] == i * 12 + j * 4 + k);
  // The identity permutation is one contiguous row.
  const CopyBox id = permute_box(Shape{2, 3, 4}, std::vector<int64_t>{0, 1, 2}).simplified();
  CHECK(id.rank == 1);
  CHECK(id.size[0] == 24);
  // A slice of the middle axis: rows of 4 contiguous elements.
  const CopyBox s =
      shifted_box(Shape{2, 3, 4}, Shape{2, 1, 4}, std::vector<int64_t>{0, 1, 0}).simplified();
  CHECK(s.rank == 2);
  CHECK(s.size[1] == 4);
  CHECK(s.x_offset == 4);
  // A pad by one on every side of the last axis: y's origin is x's -1.
  const CopyBox q = shifted_box(Shape{1, 2}, Shape{1, 4}, std::vector<int64_t>{0, -1});
  CHECK(q.size[1] == 2);
  CHECK(q.y_offset == 1);
  CHECK(q.x_offset == 0);
  // Out of bounds and overlapping copies are refused.
  CopyBox bad = p;
  bad.size[0] = 5;
  CHECK_THROWS_WITH_AS(cpu_backend().strided_copy(bad, x, y), doctest::Contains("does not fit x"),
                       Error);
  CHECK_THROWS_WITH_AS(cpu_backend().strided_copy(id, x, x), doctest::Contains("y overlaps x"),
                       Error);
  CHECK_THROWS_WITH_AS(permute_box(Shape{2, 3}, std::vector<int64_t>{0, 0}),
                       doctest::Contains("perm (0,0) is not a permutation of the 2 axes of [2,3]"),
                       Error);
}

TEST_CASE("data movement: finite-difference gradients in f64") {
  check_gradients(
      [](auto x) {
        return one(transpose(x[0], {0, 2, 3, 1}));
      },
      {random_tensor({2, 3, 4, 5}, 1)});
  check_gradients(
      [](auto x) {
        // ShuffleNet's channel shuffle: (N, g, C/g, H, W), swap g and C/g, back to 4-D.
        Value v = reshape(x[0], Shape{2, 2, 3, 2, 2});
        return one(reshape(transpose(v, {0, 2, 1, 3, 4}), Shape{2, 6, 2, 2}));
      },
      {random_tensor({2, 6, 2, 2}, 2)});
  check_gradients([](auto x) { return one(slice(x[0], 2, 1, 3)); },
                  {random_tensor({2, 3, 4, 2}, 3)});
  // Steps: YOLOv5's focus, x[..., ::2, ::2] beside x[..., 1::2, ::2], and a step past the end.
  check_gradients(
      [](auto x) {
        Value a = slice(slice(x[0], 2, 0, 4, 2), 3, 0, 4, 2);
        Value b = slice(slice(x[0], 2, 1, 5, 2), 3, 0, 4, 2);
        Value c = slice(slice(slice(x[0], 1, 0, 3, 3), 2, 0, 5, 3), 3, 1, 4, 2);
        return one(concat({a, b, c}, 1));
      },
      {random_tensor({2, 3, 5, 4}, 15)});
  // Negative steps: torch.flip (begin the last element, end -1), and x[4:0:-2] on another axis.
  check_gradients(
      [](auto x) {
        Value f = slice(x[0], 3, 3, -1, -1);
        Value g = slice(x[0], 2, 4, 0, -2);
        return one(concat({f, slice(g, 3, 0, 4)}, 2));
      },
      {random_tensor({2, 3, 5, 4}, 18)});
  check_gradients([](auto x) { return split(x[0], 1, {1, 3, 2}); }, {random_tensor({2, 6, 3}, 4)});
  // Along axis 0 (attention's q, k, v unbound where a transpose moved the batch off it).
  check_gradients(
      [](auto x) {
        return split(transpose(x[0], {1, 0, 2}), 0, {2, 1, 3});
      },
      {random_tensor({2, 6, 3}, 6)});
  check_gradients(
      [](auto x) {
        return one(pad(x[0], {.before = {0, 1, 2, 0}, .after = {0, 0, 1, 3}, .value = 0.5}));
      },
      {random_tensor({2, 2, 3, 3}, 5)});
  check_gradients(
      [](auto x) {
        return one(pad(x[0], {.before = {0, 0, -1, 1}, .after = {0, 0, 2, -2}}));
      },
      {random_tensor({1, 2, 4, 4}, 6)});
  // Reflect and edge borders (slices and a concat per axis), with a crop before them.
  check_gradients(
      [](auto x) {
        return one(
            pad(x[0], {.before = {0, 0, 2, 1}, .after = {0, 0, 1, 3}, .mode = PadMode::reflect}));
      },
      {random_tensor({2, 2, 3, 4}, 16)});
  check_gradients(
      [](auto x) {
        return one(
            pad(x[0], {.before = {0, 1, 2, -1}, .after = {0, 0, 3, 2}, .mode = PadMode::edge}));
      },
      {random_tensor({2, 2, 3, 4}, 17)});
  check_gradients(
      [](auto x) {
        return one(concat({x[0], x[1], x[0]}, 3));
      },
      {random_tensor({2, 3, 2, 2}, 7), random_tensor({2, 3, 2, 1}, 8)});
  check_gradients(
      [](auto x) {
        return one(concat({x[0], x[1]}, 1));
      },
      {random_tensor({2, 1, 4}, 9), random_tensor({2, 2, 4}, 10)});
  check_gradients([](auto x) { return one(softmax(x[0], 1)); }, {random_tensor({2, 4, 3, 2}, 11)});
  check_gradients([](auto x) { return one(softmax(x[0], -1)); }, {random_tensor({3, 5}, 12)});
  Tensor labels = random_labels(2 * 3 * 2, 4, 13).reshape(Shape{2, 3, 2});
  check_gradients([](auto x) { return one(pixel_cross_entropy(x[0], x[1])); },
                  {random_tensor({2, 4, 3, 2}, 14, -3, 3), labels});
  // A label per position of a signal (N, K, L) and of a volume (N, K, D, H, W).
  check_gradients(
      [](auto x) { return one(pixel_cross_entropy(x[0], x[1])); },
      {random_tensor({2, 4, 5}, 15, -3, 3), random_labels(2 * 5, 4, 16).reshape(Shape{2, 5})});
  check_gradients([](auto x) { return one(pixel_cross_entropy(x[0], x[1])); },
                  {random_tensor({2, 3, 2, 2, 3}, 17, -3, 3),
                   random_labels(2 * 2 * 2 * 3, 3, 18).reshape(Shape{2, 2, 2, 3})});
}

TEST_CASE("data movement: by hand") {
  ParamStore store;
  Tape tape(store);
  // slice / pad / split through the kernels they record, on (1,1,2,3) = [0 1 2; 3 4 5].
  Tensor x = iota({1, 1, 2, 3});
  Tensor y = Tensor::empty({1, 1, 4, 4}, DType::f64);
  cpu_backend().fill(y, 9);
  cpu_backend().strided_copy(
      shifted_box(Shape{1, 1, 2, 3}, Shape{1, 1, 4, 4}, std::vector<int64_t>{0, 0, -1, 0}), x, y);
  const double want[] = {9, 9, 9, 9, 0, 1, 2, 9, 3, 4, 5, 9, 9, 9, 9, 9};
  for (int i = 0; i < 16; ++i) CHECK(y.data<double>()[i] == want[i]);
  {  // x[..., 1::2] of (1,1,2,5) = [0..4; 5..9] is [1 3; 6 8]; backward puts dy back there.
    Value v = tape.input("v", {1, 1, 2, 5}, DType::f64, true);
    Value w = slice(v, 3, 1, 5, 2);
    CHECK(w.shape() == Shape{1, 1, 2, 2});
    Executor ex(tape, cpu_backend(), {.keep = {w}});
    ex.set_input(v, iota({1, 1, 2, 5}));
    ex.forward();
    const double got[] = {1, 3, 6, 8};
    for (int i = 0; i < 4; ++i) CHECK(element_as_double(ex.value(w), i) == got[i]);
    const std::pair<Value, Tensor> seed{w, iota({1, 1, 2, 2})};
    ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
    const double dx[] = {0, 0, 0, 1, 0, 0, 2, 0, 3, 0};
    for (int i = 0; i < 10; ++i) CHECK(element_as_double(ex.grad(v), i) == dx[i]);
  }
  {  // x flipped along its width, and x[..., 4:0:-3] of (1,1,2,5) = [0..4; 5..9]: [4 3 2 1 0;
     // 9 8 7 6 5] and [4 1; 9 6]; backward puts dy back where each element came from.
    Value v = tape.input("f", {1, 1, 2, 5}, DType::f64, true);
    Value f = slice(v, 3, 4, -1, -1);
    Value g = slice(v, 3, 4, 0, -3);
    CHECK(f.shape() == Shape{1, 1, 2, 5});
    CHECK(g.shape() == Shape{1, 1, 2, 2});
    Executor ex(tape, cpu_backend(), {.keep = {f, g}});
    ex.set_input(v, iota({1, 1, 2, 5}));
    ex.forward();
    const double fw[] = {4, 3, 2, 1, 0, 9, 8, 7, 6, 5}, gw[] = {4, 1, 9, 6};
    for (int i = 0; i < 10; ++i) CHECK(element_as_double(ex.value(f), i) == fw[i]);
    for (int i = 0; i < 4; ++i) CHECK(element_as_double(ex.value(g), i) == gw[i]);
    const std::pair<Value, Tensor> seeds[] = {{f, iota({1, 1, 2, 5})}, {g, iota({1, 1, 2, 2})}};
    ex.backward(seeds);
    // f's dy reversed, plus g's 0, 1 at x's 4, 1 and 2, 3 at 9, 6.
    const double dx[] = {4, 3 + 1, 2, 1, 0 + 0, 9, 8 + 3, 7, 6, 5 + 2};
    for (int i = 0; i < 10; ++i) CHECK(element_as_double(ex.grad(v), i) == dx[i]);
  }
  {  // reflect and edge borders of [0 1 2; 3 4 5], as torch's ReflectionPad2d and
     // ReplicationPad2d give them; x's gradient sums the copies of each element.
    Value v = tape.input("p", {1, 1, 2, 3}, DType::f64, true);
    Value r = pad(v, {.before = {0, 0, 1, 2}, .after = {0, 0, 1, 1}, .mode = PadMode::reflect});
    Value e = pad(v, {.before = {0, 0, 0, 2}, .after = {0, 0, 1, 0}, .mode = PadMode::edge});
    CHECK(r.shape() == Shape{1, 1, 4, 6});
    CHECK(e.shape() == Shape{1, 1, 3, 5});
    Executor ex(tape, cpu_backend(), {.keep = {r, e}});
    ex.set_input(v, iota({1, 1, 2, 3}));
    ex.forward();
    const double rw[] = {5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1};
    for (int i = 0; i < 24; ++i) CHECK(element_as_double(ex.value(r), i) == rw[i]);
    const double ew[] = {0, 0, 0, 1, 2, 3, 3, 3, 4, 5, 3, 3, 3, 4, 5};
    for (int i = 0; i < 15; ++i) CHECK(element_as_double(ex.value(e), i) == ew[i]);
    Tensor ones = Tensor::empty({1, 1, 3, 5}, DType::f64);
    cpu_backend().fill(ones, 1.0);
    const std::pair<Value, Tensor> seeds[] = {{r, Tensor::zeros({1, 1, 4, 6}, DType::f64)},
                                              {e, ones}};
    ex.backward(seeds);
    const double de[] = {3, 1, 1, 6, 2, 2};  // how many times each element is in e
    for (int i = 0; i < 6; ++i) CHECK(element_as_double(ex.grad(v), i) == de[i]);
  }
  // softmax of (0, ln 3) is (1/4, 3/4); of (1000, 1000) is (1/2, 1/2), no overflow.
  Tensor s = Tensor::empty({2, 2}, DType::f64);
  const double sv[] = {0, std::log(3.0), 1000, 1000};
  std::memcpy(s.raw(), sv, sizeof sv);
  Tensor p = Tensor::empty({2, 2}, DType::f64);
  cpu_backend().softmax_forward(s, 1, p);
  CHECK(p.data<double>()[0] == doctest::Approx(0.25).epsilon(1e-15));
  CHECK(p.data<double>()[1] == doctest::Approx(0.75).epsilon(1e-15));
  CHECK(p.data<double>()[2] == 0.5);
  CHECK(p.data<double>()[3] == 0.5);
  // in place, along axis 0 of (2, 2): columns (0, 1000) and (ln 3, 1000)
  cpu_backend().softmax_forward(s, 0, s);
  CHECK(s.data<double>()[2] == 1.0);
  CHECK(s.data<double>()[0] == 0.0);
}

TEST_CASE("data movement: pixel cross-entropy equals the mean of per-pixel losses") {
  // Logits (1, 3, 1, 2): pixel 0 = (0, 0, 0) labelled 2, pixel 1 = (ln 2, 0, 0) labelled 0:
  // losses ln 3 and ln 4 - ln 2, mean ln 6 / 2.
  ParamStore store;
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {1, 3, 1, 2}, DType::f64);
  Value l = tape.input("l", {1, 1, 2}, DType::i32);
  Value loss = pixel_cross_entropy(x, l);
  REQUIRE(loss.shape() == Shape{1});
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {loss}});
  Tensor xt = Tensor::empty({1, 3, 1, 2}, DType::f64), lt = Tensor::empty({1, 1, 2}, DType::i32);
  const double xs[] = {0, std::log(2.0), 0, 0, 0, 0};
  const int32_t ls[] = {2, 0};
  std::memcpy(xt.raw(), xs, sizeof xs);
  std::memcpy(lt.raw(), ls, sizeof ls);
  ex.set_input(x, xt);
  ex.set_input(l, lt);
  ex.forward();
  CHECK(ex.value(loss).data<double>()[0] == doctest::Approx(std::log(6.0) / 2).epsilon(1e-14));
  Value bad = tape.input("b", {1, 2, 2}, DType::i32);
  CHECK_THROWS_WITH_AS(pixel_cross_entropy(x, bad),
                       doctest::Contains("logits [1,3,1,2] and labels [1,2,2], expected"), Error);
  // The same logits as a signal (1, 3, 2) with labels (1, 2): the same loss, bit for bit.
  Value x1 = tape.input("x1", {1, 3, 2}, DType::f64);
  Value l1 = tape.input("l1", {1, 2}, DType::i32);
  Value loss1 = pixel_cross_entropy(x1, l1);
  Executor ex1(tape, cpu_backend(), {.mode = Mode::inference, .keep = {loss, loss1}});
  ex1.set_input(x, xt);
  ex1.set_input(l, lt);
  ex1.set_input(x1, xt.reshape(Shape{1, 3, 2}));
  ex1.set_input(l1, lt.reshape(Shape{1, 2}));
  ex1.forward();
  CHECK(ex1.value(loss1).data<double>()[0] == ex1.value(loss).data<double>()[0]);
  CHECK_THROWS_WITH_AS(pixel_cross_entropy(x1, l),
                       doctest::Contains("logits [1,3,2] and labels [1,1,2], expected"), Error);
}

TEST_CASE("data movement: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    Value a = relu(conv2d(x, {.out = 6, .kernel = 3, .pad = 1}));
    auto parts = split(a, 1, {2, 4});
    Value shuffled = reshape(transpose(reshape(parts[1], Shape{4, 2, 2, 6, 6}), {0, 2, 1, 3, 4}),
                             Shape{4, 4, 6, 6});
    Value p = pad(slice(shuffled, 2, 1, 5), {.before = {0, 0, 1, 0}, .after = {0, 0, 1, 0}});
    Value j = concat({p, relu(parts[0]), slice(a, 1, 0, 4)}, 1);
    j = concat({slice(j, 2, 0, 6, 2), slice(j, 2, 1, 6, 2)}, 2);       // rows regrouped by parity
    Value w = concat({slice(j, 1, 2, 8), slice(a, 3, 5, -1, -1)}, 3);  // a flipped
    return softmax(conv2d(w, {.out = 4, .kernel = 3, .stride = 2}), 1);
  });
}

TEST_CASE("data movement: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(transpose(x, {0, 1, 2}),
                       doctest::Contains("perm (0,1,2) is not a permutation"), Error);
  CHECK_THROWS_WITH_AS(
      reshape(x, Shape{2, 5}),
      doctest::Contains("reshape: [2,3,4,4] (96 elements) cannot be viewed as [2,5]"), Error);
  CHECK_THROWS_WITH_AS(slice(x, 1, 2, 4), doctest::Contains("slice: [2, 4) is not inside axis 1"),
                       Error);
  CHECK_THROWS_WITH_AS(slice(x, 0, 0, 1), doctest::Contains("the batch axis is not sliced"), Error);
  CHECK_THROWS_WITH_AS(slice(x, 1, 0, 1, 0), doctest::Contains("slice: step 0 on axis 1"), Error);
  CHECK_THROWS_WITH_AS(slice(x, 3, 4, -1, -1),
                       doctest::Contains("slice: [4, -1) with step -1 is not inside axis 3"),
                       Error);
  CHECK_THROWS_WITH_AS(slice(x, 3, 2, -2, -1), doctest::Contains("end >= -1"), Error);
  // Steps beyond the axis take one element (no overflow, found by fuzz_onnx).
  CHECK(slice(x, 3, 1, 4, INT64_MAX).shape() == Shape{2, 3, 4, 1});
  CHECK(slice(x, 3, 3, -1, INT64_MIN).shape() == Shape{2, 3, 4, 1});
  CHECK(slice(x, 3, 3, -1, -2).shape() == Shape{2, 3, 4, 2});
  CHECK_THROWS_WITH_AS(split(x, 1, {1, 1}),
                       doctest::Contains("split: sizes of 2 parts do not cut axis 1 of x "
                                         "[2,3,4,4] (3) into parts of at least 1"),
                       Error);
  // Sizes whose sum overflows are refused before they are added (found by fuzz_onnx).
  CHECK_THROWS_WITH_AS(split(x, 1, {INT64_MAX, INT64_MAX}),
                       doctest::Contains("split: sizes of 2 parts do not cut axis 1"), Error);
  CHECK_THROWS_WITH_AS(split(x, 1, {2, 0, 1}), doctest::Contains("at least 1"), Error);
  CHECK_THROWS_WITH_AS(
      pad(x, {.before = {0, 0, 0, 4}, .after = {0, 0, 0, 0}, .mode = PadMode::reflect}),
      "pad (reflect): axis 3 of x [2,3,4,4] padded by 4 and 0; reflection needs each amount "
      "below the axis' extent, 4",
      Error);
  CHECK_THROWS_WITH_AS(
      pad(x, {.before = {1, 0, 0, 0}, .after = {0, 0, 0, 0}, .mode = PadMode::edge}),
      "pad (edge): the batch axis of x [2,3,4,4] is not padded", Error);
  CHECK_THROWS_WITH_AS(
      pad(x, {.before = {0, 0, int64_t{1} << 62, 0}, .after = {0, 0, int64_t{1} << 62, 0}}),
      doctest::Contains("pad: axis 2 of x [2,3,4,4] padded by 4611686018427387904 and "
                        "4611686018427387904 (at most 2^30 either way)"),
      Error);
  CHECK_THROWS_WITH_AS(pad(x, {.before = {0, 0, -4, 0}, .after = {0, 0, 0, 0}}),
                       doctest::Contains("pad: axis 2 of x [2,3,4,4] padded by -4 and 0 leaves 0"),
                       Error);
  CHECK_THROWS_WITH_AS(pad(x, {.before = {0, 0}, .after = {0, 0}}),
                       doctest::Contains("2 and 2 amounts for x [2,3,4,4]"), Error);
  CHECK_THROWS_WITH_AS(softmax(x, 4), doctest::Contains("softmax: axis 4 is not an axis of x"),
                       Error);
  CHECK(resolve_reshape(Shape{2, 3, 4}, {0, -1}) == Shape{2, 12});
  CHECK_THROWS_WITH_AS(resolve_reshape(Shape{2, 3, 4}, {-1, -1}),
                       doctest::Contains("cannot be reshaped to (-1,-1)"), Error);
  CHECK_THROWS_WITH_AS(resolve_reshape(Shape{2, 3, 4}, {5, -1}),
                       doctest::Contains("[2,3,4] (24 elements) cannot be reshaped to (5,-1)"),
                       Error);
}
