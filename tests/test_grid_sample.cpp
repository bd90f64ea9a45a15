// Sampling at a grid's points (F.grid_sample): values by hand for every padding and both corner
// conventions; finite-difference gradients in f64 to the image and to the grid, every mode,
// padding and convention; planned == baseline bitwise (rebuilds included); the same bits on 1
// and 2 threads; points far outside or not finite; errors that name what is wrong. PyTorch's own
// outputs are grid_sample_net's (tests/test_onnx.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/activation.h"
#include "layers/conv2d.h"
#include "layers/grid_sample.h"
#include "layers/relu.h"
#include "layers/transpose.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// x (1, 1, 2, 3) = [0 1 2; 3 4 5] sampled at the given (x, y) points as a (1, 1, k, 2) grid.
std::vector<double> sample(const std::vector<double>& points, GridSampleOptions o) {
  const auto k = static_cast<int64_t>(points.size() / 2);
  Tensor x = Tensor::empty({1, 1, 2, 3}, DType::f64),
         grid = Tensor::empty({1, 1, k, 2}, DType::f64);
  for (int i = 0; i < 6; ++i) x.data<double>()[i] = i;
  for (size_t i = 0; i < points.size(); ++i) grid.data<double>()[i] = points[i];
  Tensor y = Tensor::empty({1, 1, 1, k}, DType::f64);
  const GridSampleGeometry g{.N = 1,
                             .C = 1,
                             .H = 2,
                             .W = 3,
                             .P = 1,
                             .Q = k,
                             .mode = o.mode,
                             .padding = o.padding,
                             .align_corners = o.align_corners};
  cpu_backend().grid_sample_forward(g, x, grid, y);
  return {y.data<double>(), y.data<double>() + k};
}

}  // namespace

TEST_CASE("grid_sample: by hand") {
  using M = GridSampleMode;
  using P = GridSamplePadding;
  // align_corners: -1 and 1 are the corner pixels' centres (x: columns 0 and 2, y: rows 0 and
  // 1); (0, 0) lies between rows at column 1: (1 + 4) / 2.
  CHECK(sample({-1, -1, 1, 1, 0, 0}, {.align_corners = true}) == std::vector<double>{0, 5, 2.5});
  // Without: -1 and 1 are the image's edges, pixel centres at ((i + 0.5) / W) * 2 - 1; (-1, -1)
  // reads (-0.5, -0.5), a quarter of pixel (0, 0) with zeros padding, all of it with border.
  CHECK(sample({-1, -1}, {}) == std::vector<double>{0});
  CHECK(sample({-1, 1}, {}) == std::vector<double>{0.75});  // (-0.5, 1.5): a quarter of 3
  CHECK(sample({-1, 1}, {.padding = P::border}) == std::vector<double>{3});
  // Reflection about the edges (-0.5 and 2.5 across, -0.5 and 1.5 down): x = 1.5 (pixel 3.25)
  // reflects to 1.75, y = 0 (0.5) stays: between 1.75 and 4.75.
  CHECK(sample({1.5, 0}, {.padding = P::reflection})[0] == doctest::Approx(3.25));
  // About the corner centres: x = 1.5 (pixel 2.5) reflects to 1.5, y = -1.5 (-0.25) to 0.25.
  CHECK(sample({1.5, -1.5}, {.padding = P::reflection, .align_corners = true})[0] ==
        doctest::Approx(0.75 * 1.5 + 0.25 * 4.5));
  // Nearest: pixel (0.75, 0) rounds to (1, 0); halves go to even: pixels 0.5 -> 0, 1.5 -> 2.
  CHECK(sample({-1.0 / 6, -0.5}, {.mode = M::nearest}) == std::vector<double>{1});
  CHECK(sample({-0.5, -1, 0.5, -1}, {.mode = M::nearest, .align_corners = true}) ==
        std::vector<double>{0, 2});
  // Far outside or not finite: zeros with zeros padding, the border otherwise.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  CHECK(sample({1e30, 0, -inf, 0, nan, 0}, {}) == std::vector<double>{0, 0, 0});
  CHECK(sample({1e30, -1e30}, {.padding = P::border, .align_corners = true}) ==
        std::vector<double>{2});
}

TEST_CASE("grid_sample: finite-difference gradients in f64, to the image and to the grid") {
  for (GridSampleMode mode : {GridSampleMode::bilinear, GridSampleMode::nearest})
    for (GridSamplePadding padding :
         {GridSamplePadding::zeros, GridSamplePadding::border, GridSamplePadding::reflection})
      for (bool align : {false, true}) {
        CAPTURE(static_cast<int>(mode));
        CAPTURE(static_cast<int>(padding));
        CAPTURE(align);
        const GridSampleOptions o{.mode = mode, .padding = padding, .align_corners = align};
        // Points in [-1.4, 1.4]: inside, past the edges, and reflected back.
        check_gradients(
            [&](auto in) { return std::vector<Value>{grid_sample(in[0], in[1], o)}; },
            {random_tensor({2, 3, 4, 5}, 5), random_tensor({2, 3, 6, 2}, 6, -1.4, 1.4)});
      }
}

TEST_CASE("grid_sample: planned equals baseline bitwise, and one thread equals two") {
  for (GridSamplePadding padding :
       {GridSamplePadding::zeros, GridSamplePadding::border, GridSamplePadding::reflection})
    check_planned_equals_baseline([&](Value x) {
      Value f = relu(conv2d(x, {.out = 4, .kernel = 3, .pad = 1}));
      Value grid = transpose(tanh(conv2d(x, {.out = 2, .kernel = 3, .pad = 1})), {0, 2, 3, 1});
      Value y = grid_sample(f, grid, {.padding = padding});
      return relu(conv2d(y, {.out = 3, .kernel = 3, .pad = 1}));
    });
  const GridSampleGeometry g{
      .N = 3, .C = 5, .H = 9, .W = 7, .P = 11, .Q = 6, .padding = GridSamplePadding::reflection};
  Tensor x = random_tensor({3, 5, 9, 7}, 7, -1, 1, DType::f32);
  Tensor grid = random_tensor({3, 11, 6, 2}, 8, -1.3, 1.3, DType::f32);
  Tensor dy = random_tensor({3, 5, 11, 6}, 9, -1, 1, DType::f32);
  auto run = [&](int threads) {
    set_cpu_threads(threads);
    std::vector<Tensor> out = {Tensor::empty({3, 5, 11, 6}, DType::f32),
                               Tensor::empty({3, 5, 9, 7}, DType::f32),
                               Tensor::empty({3, 11, 6, 2}, DType::f32)};
    cpu_backend().grid_sample_forward(g, x, grid, out[0]);
    cpu_backend().grid_sample_backward(g, x, grid, dy, out[1], out[2]);
    set_cpu_threads(0);
    return out;
  };
  const std::vector<Tensor> one = run(1), two = run(2);
  for (size_t i = 0; i < one.size(); ++i)
    CHECK(std::memcmp(one[i].raw(), two[i].raw(), one[i].bytes()) == 0);
}

TEST_CASE("grid_sample: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 4, 4}, DType::f32);
  Value grid = tape.input("grid", {2, 5, 5, 3}, DType::f32);
  CHECK_THROWS_WITH_AS(grid_sample(x, grid),
                       doctest::Contains("grid_sample: expects x (N,C,H,W) and grid (N,P,Q,2), "
                                         "got x [2,3,4,4] and grid [2,5,5,3]"),
                       Error);
  Value other = tape.input("other", {3, 5, 5, 2}, DType::f32);
  CHECK_THROWS_WITH_AS(grid_sample(x, other), doctest::Contains("grid [3,5,5,2]"), Error);
  Value wide = tape.input("wide", {2, 5, 5, 2}, DType::f64);
  CHECK_THROWS_WITH_AS(grid_sample(x, wide),
                       doctest::Contains("x and grid must be both f32 or both f64, got f32 and "
                                         "f64"),
                       Error);
  const GridSampleGeometry g{.N = 2, .C = 3, .H = 4, .W = 4, .P = 5, .Q = 5};
  Tensor a = Tensor::empty({2, 3, 4, 4}, DType::f32), b = Tensor::empty({2, 5, 5, 2}, DType::f32);
  Tensor wrong = Tensor::empty({2, 3, 5, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().grid_sample_forward(g, a, b, wrong),
                       doctest::Contains("grid_sample: y [2,3,5,4] f32, expected [2,3,5,5] f32"),
                       Error);
}
