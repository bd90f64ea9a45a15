// Batched matrix products of two values: finite-difference gradients in f64 at ranks 2 to 4, a
// case by hand, every transpose combination of the kernel against plain loops, one batch's bits
// whatever the batch count and threads, planned == baseline bitwise, and errors.
#include <doctest/doctest.h>

#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/matmul.h"
#include "layers/reshape.h"
#include "layers/softmax.h"
#include "layers/transpose.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("matmul: finite-difference gradients in f64") {
  check_gradients([](auto x) { return std::vector<Value>{matmul(x[0], x[1])}; },
                  {random_tensor({3, 4}, 1), random_tensor({4, 2}, 2)});
  check_gradients([](auto x) { return std::vector<Value>{matmul(x[0], x[1])}; },
                  {random_tensor({2, 3, 5}, 3), random_tensor({2, 5, 4}, 4)});
  // attention over 3 tokens of 4 features: softmax(q k^T) v, q = k = v = x
  check_gradients(
      [](auto x) {
        Value s = softmax(matmul(x[0], transpose(x[0], {0, 1, 3, 2})), -1);
        return std::vector<Value>{matmul(s, x[0])};
      },
      {random_tensor({2, 2, 3, 4}, 5)});
}

TEST_CASE("matmul: every transpose combination against loops, and the same bits per batch") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const MatmulGeometry g{.batch = 3, .M = 4, .N = 5, .K = 6, .trans_a = ta, .trans_b = tb};
      Tensor a = random_tensor({3, 4 * 6}, 7), b = random_tensor({3, 6 * 5}, 8);
      Tensor c = Tensor::empty({3, 4, 5}, DType::f64);
      cpu_backend().batched_matmul(g, a, b, c);
      for (int i = 0; i < 3; ++i)
        for (int m = 0; m < 4; ++m)
          for (int n = 0; n < 5; ++n) {
            double want = 0;
            for (int k = 0; k < 6; ++k)
              want += a.data<double>()[i * 24 + (ta ? k * 4 + m : m * 6 + k)] *
                      b.data<double>()[i * 30 + (tb ? n * 6 + k : k * 5 + n)];
            CHECK(c.data<double>()[(i * 4 + m) * 5 + n] == doctest::Approx(want).epsilon(1e-13));
          }
    }
  // The second batch alone, on one thread, gives the bits it had among three on two threads.
  const MatmulGeometry g3{.batch = 3, .M = 33, .N = 17, .K = 40};
  Tensor a = random_tensor({3, 33 * 40}, 9, -1, 1, DType::f32);
  Tensor b = random_tensor({3, 40 * 17}, 10, -1, 1, DType::f32);
  Tensor c3 = Tensor::empty({3, 33, 17}, DType::f32);
  set_cpu_threads(2);
  cpu_backend().batched_matmul(g3, a, b, c3);
  set_cpu_threads(1);
  Tensor a1 = Tensor(a.storage(), a.offset() + 33 * 40 * 4, {33, 40}, DType::f32);
  Tensor b1 = Tensor(b.storage(), b.offset() + 40 * 17 * 4, {40, 17}, DType::f32);
  Tensor c1 = Tensor::empty({33, 17}, DType::f32);
  cpu_backend().batched_matmul({.batch = 1, .M = 33, .N = 17, .K = 40}, a1, b1, c1);
  set_cpu_threads(0);
  CHECK(std::memcmp(c1.raw(), c3.data<float>() + 33 * 17, c1.bytes()) == 0);
}

TEST_CASE("matmul: planned equals baseline bitwise") {
  check_planned_equals_baseline([](Value x) {
    // tokens (N, 36, 4) from a convolution, self-attention over them, back to a feature map
    Value f = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});
    Value t = transpose(reshape(f, Shape{4, 4, 36}), {0, 2, 1});
    Value att = softmax(matmul(t, transpose(t, {0, 2, 1})), -1);
    return reshape(transpose(matmul(att, t), {0, 2, 1}), Shape{4, 4, 6, 6});
  });
}

TEST_CASE("matmul: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value a = tape.input("a", {2, 3, 4}, DType::f32);
  Value b = tape.input("b", {2, 5, 6}, DType::f32);
  Value c = tape.input("c", {3, 4, 6}, DType::f32);
  Value d = tape.input("d", {2, 4, 6}, DType::f64);
  CHECK_THROWS_WITH_AS(matmul(a, b),
                       doctest::Contains("matmul: a [2,3,4] and b [2,5,6] must be (..., M, K) "
                                         "and (..., K, N) with the same leading axes"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(a, c), doctest::Contains("b [3,4,6]"), Error);
  CHECK_THROWS_WITH_AS(matmul(a, d), doctest::Contains("matmul: a is f32, b f64"), Error);
  Tensor x = Tensor::empty({2, 12}, DType::f32), y = Tensor::empty({2, 12}, DType::f32);
  Tensor z = Tensor::empty({2, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().batched_matmul({.batch = 2, .M = 3, .N = 3, .K = 4}, x, y, z),
                       doctest::Contains("do not hold 2 products of (3,4) x (4,3)"), Error);
}
