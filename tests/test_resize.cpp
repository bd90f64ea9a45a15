// Bilinear and bicubic resizing: finite-difference gradients in f64 for every coordinate mode,
// up, down and by fractional factors; values by hand; planned == baseline bitwise (rebuilds
// included); the same bits on 1 and 2 threads; errors that name what is wrong.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "layers/resize.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("resize_bilinear: finite-difference gradients in f64") {
  for (ResizeCoordinates m : {ResizeCoordinates::half_pixel, ResizeCoordinates::pytorch_half_pixel,
                              ResizeCoordinates::align_corners, ResizeCoordinates::asymmetric})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{6, 8}, {3, 2}, {7, 5}, {1, 1}}) {
      CAPTURE(static_cast<int>(m));
      CAPTURE(h);
      check_gradients(
          [&](auto x) {
            return std::vector<Value>{resize_bilinear(x[0], {.height = h, .width = w, .mode = m})};
          },
          {random_tensor({2, 2, 4, 3}, 1)});
    }
  // A scale given apart from the sizes (ONNX's scales 1.5 on 7 pixels: floor 10 outputs).
  check_gradients(
      [](auto x) {
        return std::vector<Value>{
            resize_bilinear(x[0], {.height = 10, .width = 10, .scale_h = 1.5, .scale_w = 1.5})};
      },
      {random_tensor({1, 1, 7, 7}, 2)});
}

TEST_CASE("resize_bilinear: by hand") {
  // [0 1; 2 3] to 4x4 with half-pixel centres: rows read (0, 0, 0.25, 0.75, 1, 1) of the input.
  const ResizeGeometry g{
      .N = 1, .C = 1, .H = 2, .W = 2, .P = 4, .Q = 4, .scale_h = 2, .scale_w = 2};
  Tensor x = Tensor::empty({1, 1, 2, 2}, DType::f64), y = Tensor::empty({1, 1, 4, 4}, DType::f64);
  const double xs[] = {0, 1, 2, 3};
  std::memcpy(x.raw(), xs, sizeof xs);
  cpu_backend().resize_forward(g, x, y);
  // output (p, q) at source (max(0, p/2 - 0.25), max(0, q/2 - 0.25)): 2 * row + column
  const double t[] = {0, 0.25, 0.75, 1};
  for (int p = 0; p < 4; ++p)
    for (int q = 0; q < 4; ++q)
      CHECK(y.data<double>()[p * 4 + q] == doctest::Approx(2 * t[p] + t[q]));
  // align_corners: the corners are the input's corners, 2x2 -> 3x3 puts the mean in the middle.
  ResizeGeometry a = g;
  a.P = a.Q = 3;
  a.mode = ResizeCoordinates::align_corners;
  Tensor y3 = Tensor::empty({1, 1, 3, 3}, DType::f64);
  cpu_backend().resize_forward(a, x, y3);
  CHECK(y3.data<double>()[0] == 0);
  CHECK(y3.data<double>()[4] == 1.5);
  CHECK(y3.data<double>()[8] == 3);
  // Backward of all-ones: each input receives the sum of its weights (16 outputs, 4 inputs).
  Tensor dy = Tensor::empty({1, 1, 4, 4}, DType::f64), dx = Tensor::empty({1, 1, 2, 2}, DType::f64);
  cpu_backend().fill(dy, 1.0);
  cpu_backend().resize_backward(g, dy, dx);
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += dx.data<double>()[i];
  CHECK(sum == doctest::Approx(16));
  CHECK(dx.data<double>()[0] == doctest::Approx(4));
}

TEST_CASE("resize: planned equals baseline bitwise, and one thread equals two, both methods") {
  for (ResizeMethod method : {ResizeMethod::linear, ResizeMethod::cubic}) {
    CAPTURE(static_cast<int>(method));
    const auto resize = method == ResizeMethod::cubic ? resize_bicubic : resize_bilinear;
    check_planned_equals_baseline([&](Value x) {
      Value d = relu(conv2d(x, {.out = 5, .kernel = 3, .stride = 2, .pad = 1}));
      Value u = resize(d, {.height = 7, .width = 5}, std::source_location::current());
      return relu(conv2d(u, {.out = 3, .kernel = 3, .pad = 1}));
    });
    const ResizeGeometry g{.N = 3,
                           .C = 5,
                           .H = 9,
                           .W = 7,
                           .P = 20,
                           .Q = 13,
                           .scale_h = 20.0 / 9,
                           .scale_w = 13.0 / 7,
                           .method = method};
    Tensor x = random_tensor({3, 5, 9, 7}, 3, -1, 1, DType::f32);
    Tensor dy = random_tensor({3, 5, 20, 13}, 4, -1, 1, DType::f32);
    Tensor y1 = Tensor::empty({3, 5, 20, 13}, DType::f32),
           y2 = Tensor::empty({3, 5, 20, 13}, DType::f32);
    Tensor d1 = Tensor::empty({3, 5, 9, 7}, DType::f32),
           d2 = Tensor::empty({3, 5, 9, 7}, DType::f32);
    set_cpu_threads(1);
    cpu_backend().resize_forward(g, x, y1);
    cpu_backend().resize_backward(g, dy, d1);
    set_cpu_threads(2);
    cpu_backend().resize_forward(g, x, y2);
    cpu_backend().resize_backward(g, dy, d2);
    set_cpu_threads(0);
    CHECK(std::memcmp(y1.raw(), y2.raw(), y1.bytes()) == 0);
    CHECK(std::memcmp(d1.raw(), d2.raw(), d1.bytes()) == 0);
  }
}

TEST_CASE("resize_bilinear: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(
      resize_bilinear(x, {.height = 0, .width = 4}),
      doctest::Contains("resize_bilinear: [2,3,4,4] to 0x4 (sizes must be 1 to 2^20)"), Error);
  Value flat = tape.input("f", {2, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(resize_bilinear(flat, {.height = 2, .width = 2}),
                       doctest::Contains("resize_bilinear: expects x (N,C,H,W), got [2,3]"), Error);
  const ResizeGeometry g{
      .N = 2, .C = 3, .H = 4, .W = 4, .P = 8, .Q = 8, .scale_h = 2, .scale_w = 2};
  Tensor a = Tensor::empty({2, 3, 4, 4}, DType::f32), b = Tensor::empty({2, 3, 8, 7}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().resize_forward(g, a, b),
                       doctest::Contains("do not fit 4x4 -> 8x8"), Error);
}

TEST_CASE("resize_bicubic: finite-difference gradients in f64") {
  for (ResizeCoordinates m : {ResizeCoordinates::half_pixel, ResizeCoordinates::pytorch_half_pixel,
                              ResizeCoordinates::align_corners, ResizeCoordinates::asymmetric})
    for (auto [h, w] : {std::pair<int64_t, int64_t>{9, 8}, {3, 2}, {7, 5}, {1, 1}}) {
      CAPTURE(static_cast<int>(m));
      CAPTURE(h);
      check_gradients(
          [&](auto x) {
            return std::vector<Value>{resize_bicubic(x[0], {.height = h, .width = w, .mode = m})};
          },
          {random_tensor({2, 2, 4, 3}, 5)});
    }
  // TensorFlow's coefficient -0.5, and a scale given apart from the sizes (1.5 on 7 pixels).
  check_gradients(
      [](auto x) {
        return std::vector<Value>{resize_bicubic(
            x[0], {.height = 10, .width = 10, .scale_h = 1.5, .scale_w = 1.5, .cubic_a = -0.5})};
      },
      {random_tensor({1, 2, 7, 7}, 6)});
}

TEST_CASE("resize_bicubic: by hand") {
  // [0 1 4 9] to 7 wide with align_corners: outputs at 0, 0.5, 1, ..., 3. At a whole
  // coordinate the pixel itself; at t = 0.5 Keys' weights (a = -0.75) are -0.09375, 0.59375,
  // 0.59375, -0.09375, the edge repeated: at 0.5, 0.59375 - 4 * 0.09375 = 0.21875; at 1.5,
  // 0.59375 * 5 - 0.09375 * 9 = 2.125 (torch.nn.functional.interpolate(x, size=(1, 7),
  // mode="bicubic", align_corners=True) gives the same).
  const ResizeGeometry g{.N = 1,
                         .C = 1,
                         .H = 1,
                         .W = 4,
                         .P = 1,
                         .Q = 7,
                         .mode = ResizeCoordinates::align_corners,
                         .scale_h = 1,
                         .scale_w = 7.0 / 4,
                         .method = ResizeMethod::cubic};
  Tensor x = Tensor::empty({1, 1, 1, 4}, DType::f64), y = Tensor::empty({1, 1, 1, 7}, DType::f64);
  const double xs[] = {0, 1, 4, 9};
  std::memcpy(x.raw(), xs, sizeof xs);
  cpu_backend().resize_forward(g, x, y);
  const double want[] = {0, 0.21875, 1, 2.125, 4, 6.78125, 9};
  for (int q = 0; q < 7; ++q) CHECK(y.data<double>()[q] == doctest::Approx(want[q]).epsilon(1e-15));
  // Backward of all-ones: the weights of each output sum to 1, so dx sums to the 7 outputs.
  Tensor dy = Tensor::empty({1, 1, 1, 7}, DType::f64), dx = Tensor::empty({1, 1, 1, 4}, DType::f64);
  cpu_backend().fill(dy, 1.0);
  cpu_backend().resize_backward(g, dy, dx);
  double sum = 0;
  for (int i = 0; i < 4; ++i) sum += dx.data<double>()[i];
  CHECK(sum == doctest::Approx(7));
}

TEST_CASE("resize_bicubic: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(
      resize_bicubic(x, {.height = 4, .width = 0}),
      doctest::Contains("resize_bicubic: [2,3,4,4] to 4x0 (sizes must be 1 to 2^20)"), Error);
  CHECK_THROWS_WITH_AS(resize_bicubic(x, {.height = 4, .width = 4, .cubic_a = INFINITY}),
                       doctest::Contains("resize_bicubic: cubic coefficient inf is not finite"),
                       Error);
}
