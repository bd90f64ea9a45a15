// MaxPool2d and AvgPool2d: output sizes against PyTorch's, hand-computed cases, gradient
// checks (floor, ceil, padding, stride != kernel, non-square), the kernels against a naive
// reference (non-square kernels too), roles, determinism and error messages, and the CPU's
// 4-bit indexes and pool-then-ReLU against ReLU-then-pool, and the max pool's outputs run many
// at once against the rule of one window (one file per op's tests: past 400 lines).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <utility>

#include "check/gradcheck.h"
#include "core/rng.h"
#include "layers/avgpool2d.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "memory/liveness.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/tape_values.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// Distinct values 0.01 apart in shuffled order: no ties, and a finite-difference step
// cannot change which element is a window's maximum.
// The CPU's argmax index for g (4 bits per output for windows of up to 16 positions).
Tensor index_for(const Pool2dGeometry& g) {
  return Tensor::empty(maxpool_index_meta(g, cpu_backend().maxpool_index_bits(g)).shape, DType::u8);
}

// Output o's window position in the CPU's index.
int position(const Pool2dGeometry& g, const Tensor& index, int64_t o) {
  const uint8_t* b = index.data<uint8_t>();
  if (cpu_backend().maxpool_index_bits(g) == 8) return b[o];
  const int64_t plane = g.P * g.Q, nc = o / plane, j = o % plane;
  return (b[nc * ((plane + 1) / 2) + j / 2] >> (4 * (j % 2))) & 0xF;
}

Tensor distinct(Shape s, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(s), DType::f64);
  double* p = t.data<double>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) p[i] = 0.01 * static_cast<double>(i - n / 2);
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(p[i], p[static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
  return t;
}

// One f64 forward and backward of a single pool through the executor.
struct PoolRun {
  Shape y_shape;
  std::vector<double> y, dx;
};

PoolRun run_pool(bool max, Shape xs, const std::vector<double>& x, Pool2dOptions o,
                 const std::vector<double>& dy) {
  ParamStore store;
  Tape tape(store, DType::f64);
  Value xv = tape.input("x", xs, DType::f64, true);
  Value yv = max ? max_pool2d(xv, o) : avg_pool2d(xv, o);
  Executor ex(tape, cpu_backend(), {.poison = true, .keep = {xv, yv}, .optimizer = std::nullopt});
  ex.set_input(xv, from(xs, x));
  ex.forward();
  PoolRun r{yv.shape(), {}, {}};
  const Tensor& y = ex.value(yv);
  r.y.assign(y.data<double>(), y.data<double>() + y.numel());
  std::pair<Value, Tensor> seed{yv, from(yv.shape(), dy)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  const Tensor& dx = ex.grad(xv);
  r.dx.assign(dx.data<double>(), dx.data<double>() + dx.numel());
  return r;
}

void check_near(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-14));
  }
}

// The configurations the gradient checks cover: (input shape, options).
const std::vector<std::pair<Shape, Pool2dOptions>> kConfigs = {
    {{2, 3, 6, 6}, {.kernel = 2}},                                       // floor, disjoint
    {{2, 2, 7, 9}, {.kernel = 3, .stride = 2, .pad = 1, .ceil = true}},  // pad + ceil
    {{1, 2, 6, 5}, {.kernel = 3, .stride = 2, .ceil = true}},            // partial last window
    {{1, 2, 5, 4}, {.kernel = 3, .stride = 1, .pad = 1}},                // overlapping windows
    {{1, 1, 5, 3}, {.kernel = 2, .stride = 2, .pad = 1, .ceil = true}},  // ceil drops a window
    {{1, 2, 7, 8}, {.kernel = 2, .stride = 3}},                          // stride > kernel
    // A stride and a padding per axis (ONNX's rectangular pools), and a 1-D pool's window over
    // a height of 1.
    {{1, 2, 7, 8},
     {.kernel = 3, .kernel_w = 2, .stride = 2, .pad = 1, .stride_w = 1, .pad_w = 0, .ceil = true}},
    {{2, 1, 1, 9}, {.kernel = 1, .kernel_w = 3, .stride = 1, .pad = 0, .stride_w = 2, .pad_w = 1}},
};

}  // namespace

TEST_CASE("pool output sizes match PyTorch") {
  // GoogLeNet's stem and inception pools, its auxiliary head, AlexNet, ResNet's stem.
  CHECK(pool_output_size(112, 3, 2, 0, true) == 56);
  CHECK(pool_output_size(112, 3, 2, 0, false) == 55);
  CHECK(pool_output_size(56, 3, 2, 0, true) == 28);
  CHECK(pool_output_size(28, 3, 1, 1, true) == 28);
  CHECK(pool_output_size(14, 5, 3, 0, true) == 4);
  CHECK(pool_output_size(55, 3, 2, 0, false) == 27);
  CHECK(pool_output_size(112, 3, 2, 1, false) == 56);
  // Ceil mode adds a partial window, but never one that starts in the right padding.
  CHECK(pool_output_size(6, 3, 2, 0, true) == 3);
  CHECK(pool_output_size(6, 3, 2, 0, false) == 2);
  CHECK(pool_output_size(5, 2, 2, 1, true) == 3);  // a 4th window would start at 6 >= 5 + 1
  CHECK(pool_output_size(3, 2, 2, 1, true) == 2);
  CHECK(pool_output_size(7, 3, 2, 1, true) == 4);

  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 64, 112, 112}, DType::f32);
  CHECK(max_pool2d(x, {.kernel = 3, .stride = 2, .ceil = true}).shape() == Shape{2, 64, 56, 56});
  Value a = tape.input("a", {1, 576, 14, 14}, DType::f32);
  CHECK(avg_pool2d(a, {.kernel = 5, .stride = 3, .ceil = true}).shape() == Shape{1, 576, 4, 4});
  Value b = tape.input("b", {1, 8, 28, 20}, DType::f32);
  CHECK(max_pool2d(b, {.kernel = 3, .stride = 1, .pad = 1, .ceil = true}).shape() ==
        Shape{1, 8, 28, 20});
}

TEST_CASE("max_pool2d hand-computed") {
  // 3x3 input, k2 s2 p1: windows rows {0}, {1,2} x cols {0}, {1,2}; padding never wins,
  // even over negative values.
  PoolRun r = run_pool(true, {1, 1, 3, 3}, {-9, 2, 3, 4, 5, 6, 7, 8, -1},
                       {.kernel = 2, .stride = 2, .pad = 1}, {1, 2, 3, 4});
  CHECK(r.y_shape == Shape{1, 1, 2, 2});
  check_near(r.y, {-9, 3, 7, 8});
  check_near(r.dx, {1, 0, 2, 0, 0, 0, 3, 4, 0});
  // Overlapping windows: a maximum shared by all four collects all four gradients.
  r = run_pool(true, {1, 1, 3, 3}, {1, 2, 3, 4, 9, 6, 7, 8, 5}, {.kernel = 2, .stride = 1},
               {1, 10, 100, 1000});
  check_near(r.y, {9, 9, 9, 9});
  check_near(r.dx, {0, 0, 0, 0, 1111, 0, 0, 0, 0});
}

TEST_CASE("max_pool2d lets a NaN in the window win as PyTorch does and avg_pool2d propagates it") {
  // 4x4, k2 s2: window (0,0) has NaN second, (1,0) NaN first before a larger 9, (1,1) NaN last;
  // (0,1) is finite. The NaN's position is the argmax, so backward routes dy to it.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x = {1,   nan, 5, 6,  //
                                 2,   3,   7, 8,  //
                                 nan, 9,   1, 2,  //
                                 4,   5,   3, nan};
  PoolRun r = run_pool(true, {1, 1, 4, 4}, x, {.kernel = 2}, {1, 2, 3, 4});
  CHECK(std::isnan(r.y[0]));
  CHECK(r.y[1] == 8);
  CHECK(std::isnan(r.y[2]));
  CHECK(std::isnan(r.y[3]));
  check_near(r.dx, {0, 1, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 4});
  r = run_pool(false, {1, 1, 4, 4}, x, {.kernel = 2}, {1, 2, 3, 4});
  CHECK(std::isnan(r.y[0]));
  CHECK(r.y[1] == 6.5);
  CHECK(std::isnan(r.y[2]));
  CHECK(std::isnan(r.y[3]));
}

TEST_CASE("avg_pool2d hand-computed") {
  // Padding counts as zeros: k2 s2 p1 on 2x2 gives every element its own window of area 4.
  PoolRun r = run_pool(false, {1, 1, 2, 2}, {1, 2, 3, 4}, {.kernel = 2, .stride = 2, .pad = 1},
                       {1, 1, 1, 1});
  check_near(r.y, {0.25, 0.5, 0.75, 1});
  check_near(r.dx, {0.25, 0.25, 0.25, 0.25});
  // Ceil mode: the last window is cut at the input's edge (no padding there), so its divisor
  // is 3x2, as PyTorch's AvgPool2d(3, 2, ceil_mode=True) on a 3x6 input.
  std::vector<double> x;
  for (int h = 0; h < 3; ++h)
    for (int w = 0; w < 6; ++w) x.push_back(w + 1 + 10 * h);
  r = run_pool(false, {1, 1, 3, 6}, x, {.kernel = 3, .stride = 2, .ceil = true}, {9, 9, 6});
  CHECK(r.y_shape == Shape{1, 1, 1, 3});
  check_near(r.y, {12, 14, 15.5});
  check_near(r.dx, {1, 1, 2, 1, 2, 1, 1, 1, 2, 1, 2, 1, 1, 1, 2, 1, 2, 1});
  // Ceil mode with padding: the divisor counts the padding up to the padded border (W + pad):
  // k3 s2 p1 on 1x4 has windows [-1,2) [1,4) [3,5) of widths 3 3 2, rows [-1,2) of height 3.
  r = run_pool(false, {1, 1, 1, 4}, {1, 2, 3, 4},
               {.kernel = 3, .stride = 2, .pad = 1, .ceil = true}, {1, 1, 1});
  CHECK(r.y_shape == Shape{1, 1, 1, 3});
  check_near(r.y, {3.0 / 9, 9.0 / 9, 4.0 / 6});
  check_near(r.dx, {1.0 / 9, 2.0 / 9, 1.0 / 9, 1.0 / 9 + 1.0 / 6});
  // count_include_pad false (PyTorch's AvgPool2d(3, 2, 1, True, count_include_pad=False)):
  // the divisors are the windows' elements inside the input, 2, 3 and 1.
  r = run_pool(false, {1, 1, 1, 4}, {1, 2, 3, 4},
               {.kernel = 3, .stride = 2, .pad = 1, .ceil = true, .count_include_pad = false},
               {1, 1, 1});
  check_near(r.y, {1.5, 3, 4});
  check_near(r.dx, {0.5, 0.5 + 1.0 / 3, 1.0 / 3, 1.0 / 3 + 1});
}

TEST_CASE("gradcheck max_pool2d") {
  uint64_t seed = 1;
  for (const auto& [shape, o] : kConfigs) {
    INFO("x ", shape, " kernel ", o.kernel, "x", o.kernel_w, " stride ", o.stride, "x", o.stride_w,
         " pad ", o.pad, "x", o.pad_w, " ceil ", o.ceil);
    check_gradients(
        [o](std::span<const Value> x) { return std::vector<Value>{max_pool2d(x[0], o)}; },
        {distinct(shape, seed++)});
  }
}

TEST_CASE("gradcheck avg_pool2d") {
  uint64_t seed = 1;
  for (auto [shape, o] : kConfigs)
    for (bool include : {true, false}) {
      o.count_include_pad = include;
      INFO("x ", shape, " kernel ", o.kernel, " stride ", o.stride, " pad ", o.pad, " ceil ",
           o.ceil, " count_include_pad ", include);
      check_gradients(
          [o](std::span<const Value> x) { return std::vector<Value>{avg_pool2d(x[0], o)}; },
          {random_tensor(shape, seed++)});
    }
}

TEST_CASE(
    "avg_pool2d over a whole non-square map (ONNX's GlobalAveragePool): the mean, and its "
    "gradient") {
  ParamStore store;
  Tape tape(store);
  Value v = tape.input("x", {2, 3, 3, 5}, DType::f64, true);
  Value y = avg_pool2d(v, {.kernel = 3, .kernel_w = 5});
  CHECK(y.shape() == Shape{2, 3, 1, 1});
  Executor ex(tape, cpu_backend(), {.keep = {y}});
  const Tensor x = random_tensor({2, 3, 3, 5}, 21);
  ex.set_input(v, x);
  ex.forward();
  for (int64_t c = 0; c < 6; ++c) {
    double sum = 0;
    for (int64_t i = 0; i < 15; ++i) sum += element_as_double(x, c * 15 + i);
    CHECK(element_as_double(ex.value(y), c) == doctest::Approx(sum / 15).epsilon(1e-14));
  }
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{avg_pool2d(x[0], {.kernel = 3, .kernel_w = 5})};
      },
      {random_tensor({2, 3, 3, 5}, 22)});
  // A window wider than tall, strided as wide as it is: max and average.
  check_gradients(
      [](std::span<const Value> x) {
        return std::vector<Value>{max_pool2d(x[0], {.kernel = 2, .kernel_w = 3}),
                                  avg_pool2d(x[0], {.kernel = 2, .kernel_w = 3})};
      },
      {random_tensor({1, 2, 4, 6}, 23)});
  CHECK_THROWS_WITH_AS(
      avg_pool2d(v, {.kernel = 3, .kernel_w = 6}),
      doctest::Contains(
          "avg_pool2d: kernel 3x6 is larger than the padded input (x [2,3,3,5], pad 0)"),
      Error);
}

namespace {

// Naive pooling over the padded window, written from the definition, for the kernels to match.
// x (H,W) one plane; returns y (P,Q) and, for max, the argmax position inside each window.
struct Reference {
  std::vector<double> y, dx;
  std::vector<int> index;
};

Reference reference(const Pool2dGeometry& g, bool max, const std::vector<double>& x,
                    const std::vector<double>& dy) {
  Reference r{std::vector<double>(g.P * g.Q), std::vector<double>(g.H * g.W, 0.0),
              std::vector<int>(g.P * g.Q)};
  for (int64_t p = 0; p < g.P; ++p)
    for (int64_t q = 0; q < g.Q; ++q) {
      const int64_t hs = p * g.stride_h - g.pad_h, ws = q * g.stride_w - g.pad_w;
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t pad_rows = 0, pad_cols = 0;  // padded extent of the window (count_include_pad)
      for (int64_t i = 0; i < g.kernel_h; ++i)
        pad_rows += g.count_include_pad ? hs + i < g.H + g.pad_h_end : hs + i >= 0 && hs + i < g.H;
      for (int64_t j = 0; j < g.kernel_w; ++j)
        pad_cols += g.count_include_pad ? ws + j < g.W + g.pad_w_end : ws + j >= 0 && ws + j < g.W;
      for (int64_t i = 0; i < g.kernel_h; ++i)
        for (int64_t j = 0; j < g.kernel_w; ++j) {
          const int64_t h = hs + i * g.dilation_h, w = ws + j * g.dilation_w;
          if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
          sum += x[h * g.W + w];
          if (x[h * g.W + w] > best) {
            best = x[h * g.W + w];
            r.index[p * g.Q + q] = static_cast<int>(i * g.kernel_w + j);
          }
        }
      const double area = static_cast<double>(pad_rows * pad_cols);
      r.y[p * g.Q + q] = max ? best : sum / area;
      for (int64_t i = 0; i < g.kernel_h; ++i)
        for (int64_t j = 0; j < g.kernel_w; ++j) {
          const int64_t h = hs + i * g.dilation_h, w = ws + j * g.dilation_w;
          if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
          if (!max)
            r.dx[h * g.W + w] += dy[p * g.Q + q] / area;
          else if (r.index[p * g.Q + q] == i * g.kernel_w + j)
            r.dx[h * g.W + w] += dy[p * g.Q + q];
        }
    }
  return r;
}

// Pads at the end (bottom, right) as at the start unless given; dilation (max pools) 1.
Pool2dGeometry geometry(int64_t H, int64_t W, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                        int64_t ph, int64_t pw, bool ceil, int64_t ph_end = -1, int64_t pw_end = -1,
                        int64_t dh = 1, int64_t dw = 1) {
  ph_end = ph_end < 0 ? ph : ph_end, pw_end = pw_end < 0 ? pw : pw_end;
  Pool2dGeometry g{.N = 1,
                   .C = 1,
                   .H = H,
                   .W = W,
                   .P = pool_output_size(H, kh, sh, ph, ceil, ph_end, dh),
                   .Q = pool_output_size(W, kw, sw, pw, ceil, pw_end, dw),
                   .kernel_h = kh,
                   .kernel_w = kw,
                   .stride_h = sh,
                   .stride_w = sw,
                   .pad_h = ph,
                   .pad_w = pw,
                   .pad_h_end = ph_end,
                   .pad_w_end = pw_end,
                   .dilation_h = dh,
                   .dilation_w = dw};
  return g;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(element_as_double(t, i));
  return v;
}

}  // namespace

TEST_CASE("pool kernels match a naive reference with non-square kernels") {
  const Pool2dGeometry cases[] = {
      geometry(7, 9, 2, 3, 2, 2, 1, 1, true),   // non-square kernel, pad, ceil
      geometry(8, 5, 3, 1, 1, 2, 1, 0, false),  // non-square kernel and stride
      geometry(6, 7, 3, 2, 3, 1, 0, 1, true),   // ceil with a partial last window
      geometry(5, 5, 4, 4, 2, 2, 2, 2, true),   // pad = kernel / 2
      geometry(9, 8, 5, 4, 2, 3, 2, 1, false),  // 20 positions: one byte per index
      // Asymmetric padding (TensorFlow's SAME: the odd pad at the end; ONNX's any way round).
      geometry(8, 9, 3, 3, 2, 2, 0, 0, false, 1, 1),
      geometry(7, 6, 2, 3, 2, 1, 1, 1, true, 0, 0),
      geometry(6, 7, 4, 3, 3, 2, 2, 0, false, 1, 1),
      // Dilated windows (max pools only): taps 2 and 3 apart, padded, ceil mode.
      geometry(9, 11, 3, 3, 2, 2, 1, 1, false, -1, -1, 2, 2),
      geometry(10, 9, 3, 2, 1, 3, 1, 0, true, 0, 1, 3, 2),
      geometry(8, 8, 2, 2, 1, 1, 0, 0, false, 1, 0, 2, 3),
  };
  for (Pool2dGeometry g : cases)
    for (bool include : {true, false}) {
      g.count_include_pad = include;  // average pooling's divisor: with padding or without
      INFO("H ", g.H, " W ", g.W, " kernel ", g.kernel_h, "x", g.kernel_w, " stride ", g.stride_h,
           "x", g.stride_w, " pad ", g.pad_h, ",", g.pad_w, ",", g.pad_h_end, ",", g.pad_w_end,
           " dilation ", g.dilation_h, "x", g.dilation_w, " -> ", g.P, "x", g.Q,
           " count_include_pad ", include);
      for (DType t : {DType::f64, DType::f32}) {
        const Tensor x64 = distinct({1, 1, g.H, g.W}, 5), dy64 = random_tensor({1, 1, g.P, g.Q}, 6);
        Tensor x = Tensor::empty(x64.shape(), t), dy = Tensor::empty(dy64.shape(), t);
        Tensor y = Tensor::empty(dy.shape(), t), dx = Tensor::empty(x.shape(), t);
        Tensor index = index_for(g);
        for (int64_t i = 0; i < x.numel(); ++i) {
          if (t == DType::f32)
            x.data<float>()[i] = static_cast<float>(x64.data<double>()[i]);
          else
            x.data<double>()[i] = x64.data<double>()[i];
        }
        for (int64_t i = 0; i < dy.numel(); ++i) {
          if (t == DType::f32)
            dy.data<float>()[i] = static_cast<float>(dy64.data<double>()[i]);
          else
            dy.data<double>()[i] = dy64.data<double>()[i];
        }
        const double tol = t == DType::f32 ? 1e-6 : 1e-14;
        for (bool max : {true, false}) {
          if (!max && (g.dilation_h > 1 || g.dilation_w > 1)) continue;  // average: none
          const Reference ref = reference(g, max, values(x), values(dy));
          if (max) {
            cpu_backend().maxpool2d_forward(g, x, y, index);
            cpu_backend().maxpool2d_backward(g, dy, index, dx);
            for (int64_t i = 0; i < y.numel(); ++i)
              CHECK(position(g, index, i) == ref.index[static_cast<size_t>(i)]);
          } else {
            cpu_backend().avgpool2d_forward(g, x, y);
            cpu_backend().avgpool2d_backward(g, dy, dx);
          }
          for (int64_t i = 0; i < y.numel(); ++i)
            CHECK(element_as_double(y, i) == doctest::Approx(ref.y[i]).epsilon(tol));
          for (int64_t i = 0; i < dx.numel(); ++i)
            CHECK(element_as_double(dx, i) == doctest::Approx(ref.dx[i]).epsilon(tol));
        }
      }
    }
}

TEST_CASE("max_pool2d: windows inside the row, many at once, as the window-by-window rule") {
  // The CPU runs outputs whose window lies inside the row a tap at a time over up to 64 of them;
  // each must keep the rule of one window: row-major taps, a larger value or a NaN takes over,
  // ties keep the first. Small integers (many ties), NaNs and infinities; rows of more than 64
  // such outputs, the stem's 3x3/2 with padding, ceil mode, strides wider than the kernel.
  const Pool2dGeometry cases[] = {
      geometry(9, 150, 3, 3, 2, 2, 1, 1, false),                // ResNet's stem: 75 outputs a row
      geometry(6, 140, 2, 2, 2, 2, 0, 0, false),                // 70 outputs, no padding
      geometry(5, 70, 3, 3, 1, 1, 1, 1, false),                 // overlapping, 70 outputs
      geometry(7, 131, 3, 3, 2, 2, 0, 0, true),                 // ceil: the last window partial
      geometry(4, 100, 2, 1, 3, 4, 0, 0, false),                // stride wider than the kernel
      geometry(8, 141, 3, 3, 2, 2, 0, 0, false, 1, 1),          // TensorFlow's SAME
      geometry(9, 150, 3, 3, 2, 2, 1, 1, false, -1, -1, 2, 2),  // dilated, padded
      geometry(6, 133, 2, 3, 1, 1, 0, 1, true, 1, 0, 1, 3),     // dilated along the row
  };
  for (const Pool2dGeometry& g0 : cases) {
    Pool2dGeometry g = g0;
    g.N = 2;
    g.C = 3;
    INFO("H ", g.H, " W ", g.W, " kernel ", g.kernel_h, "x", g.kernel_w, " stride ", g.stride_h,
         "x", g.stride_w, " pad ", g.pad_h, ",", g.pad_w, ",", g.pad_h_end, ",", g.pad_w_end,
         " dilation ", g.dilation_h, "x", g.dilation_w);
    for (DType t : {DType::f32, DType::f64}) {
      Tensor x = Tensor::empty({g.N, g.C, g.H, g.W}, t);
      Rng rng(11);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const uint64_t r = rng.below(40);
        const double v = r == 0   ? std::nan("")
                         : r == 1 ? -std::numeric_limits<double>::infinity()
                         : r == 2 ? std::numeric_limits<double>::infinity()
                                  : static_cast<double>(r % 7) - 3;
        if (t == DType::f32)
          x.data<float>()[i] = static_cast<float>(v);
        else
          x.data<double>()[i] = v;
      }
      Tensor y = Tensor::empty({g.N, g.C, g.P, g.Q}, t), index = index_for(g);
      cpu_backend().maxpool2d_forward(g, x, y, index);
      for (int64_t nc = 0; nc < g.N * g.C; ++nc)
        for (int64_t p = 0; p < g.P; ++p)
          for (int64_t q = 0; q < g.Q; ++q) {
            const int64_t hs = p * g.stride_h - g.pad_h, ws = q * g.stride_w - g.pad_w;
            double m = 0;
            int k = -1;
            for (int64_t i = 0; i < g.kernel_h; ++i)
              for (int64_t j = 0; j < g.kernel_w; ++j) {
                const int64_t h = hs + i * g.dilation_h, w = ws + j * g.dilation_w;
                if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                const double v = element_as_double(x, (nc * g.H + h) * g.W + w);
                if (k < 0 || v > m || std::isnan(v)) {
                  m = v;
                  k = static_cast<int>(i * g.kernel_w + j);
                }
              }
            const int64_t o = (nc * g.P + p) * g.Q + q;
            const double got = element_as_double(y, o);
            CHECK((got == m || (std::isnan(got) && std::isnan(m))));
            CHECK(position(g, index, o) == k);
          }
    }
  }
}

TEST_CASE("max_pool2d inference writes no index and padding never wins over -inf") {
  const Pool2dGeometry g = geometry(2, 2, 2, 2, 2, 2, 1, 1, false);
  Tensor x = Tensor::empty({1, 1, 2, 2}, DType::f32), y = Tensor::empty({1, 1, 2, 2}, DType::f32);
  const float inf = std::numeric_limits<float>::infinity();
  float in[4] = {-inf, 1, -inf, -2};
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = in[i];
  Tensor none;
  cpu_backend().maxpool2d_forward(g, x, y, none);
  CHECK(y.data<float>()[0] == -inf);
  CHECK(y.data<float>()[1] == 1);
  CHECK(y.data<float>()[2] == -inf);
  CHECK(y.data<float>()[3] == -2);
}

TEST_CASE("pool roles: max-pool saves only its argmax index and avg-pool keeps nothing") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 9, 9}, DType::f32, true);
  Value h = relu(x);
  Value m = max_pool2d(h, {.kernel = 3, .stride = 2, .ceil = true});
  Value a = avg_pool2d(relu(m), {.kernel = 2});
  (void)a;
  const Op& max_op = *tape.ops()[1].op;
  Roles train = max_op.roles(Mode::training, cpu_backend());
  REQUIRE(train.saved.size() == 1);
  // 3x3 windows: two 4-bit positions per byte on the CPU, each plane of 4x4 in 8 bytes.
  CHECK(train.saved[0] == TensorMeta{Shape{6, 8}, DType::u8});
  CHECK(train.backward_reads_inputs.empty());
  CHECK(train.backward_reads_outputs.empty());
  Roles infer = max_op.roles(Mode::inference, cpu_backend());
  CHECK(infer.saved.empty());
  const Op& avg_op = *tape.ops()[3].op;
  for (Mode mode : {Mode::training, Mode::inference}) {
    Roles r = avg_op.roles(mode, cpu_backend());
    CHECK(r.saved.empty());
    CHECK(r.backward_reads_inputs.empty());
    CHECK(r.backward_reads_outputs.empty());
  }
  // So the pool's input dies at the end of the pool's forward, even in training.
  Liveness live = analyze(lower_step(tape, Mode::training, cpu_backend()), {});
  CHECK(live.buffers[static_cast<size_t>(live.value_buffer[static_cast<size_t>(h.id())])].last ==
        1);
}

TEST_CASE("pool kernels give the same bits with one thread and with all") {
  const Pool2dGeometry g{.N = 3,
                         .C = 5,
                         .H = 9,
                         .W = 7,
                         .P = 5,
                         .Q = 4,
                         .kernel_h = 3,
                         .kernel_w = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_h = 1,
                         .pad_w = 1,
                         .pad_h_end = 1,
                         .pad_w_end = 1};
  const Tensor x = random_tensor({3, 5, 9, 7}, 11, -1, 1, DType::f32);
  const Tensor dy = random_tensor({3, 5, 5, 4}, 12, -1, 1, DType::f32);
  auto run = [&](int threads) {
    const int before = cpu_backend().threads();
    set_cpu_threads(threads);
    std::vector<Tensor> out;
    for (int i = 0; i < 4; ++i)
      out.push_back(Tensor::empty(i % 2 ? x.shape() : dy.shape(), DType::f32));
    Tensor index = index_for(g);
    cpu_backend().maxpool2d_forward(g, x, out[0], index);
    cpu_backend().maxpool2d_backward(g, dy, index, out[1]);
    cpu_backend().avgpool2d_forward(g, x, out[2]);
    cpu_backend().avgpool2d_backward(g, dy, out[3]);
    set_cpu_threads(before);
    return out;
  };
  std::vector<Tensor> one = run(1), all = run(cpu_backend().threads());
  for (size_t i = 0; i < one.size(); ++i) CHECK(bitwise_equal(one[i], all[i]));
}

TEST_CASE("max_pool2d: 4-bit indexes of odd-sized planes, each plane as if alone") {
  // 3x3 planes of outputs: nine nibbles, so each plane starts a byte of its own and planes
  // written by different threads never share one.
  Pool2dGeometry g = geometry(6, 6, 2, 2, 2, 2, 0, 0, false);
  REQUIRE(cpu_backend().maxpool_index_bits(g) == 4);
  g.N = 3, g.C = 5;
  const Tensor x = random_tensor({3, 5, 6, 6}, 21, -1, 1, DType::f32);
  const Tensor dy = random_tensor({3, 5, 3, 3}, 22, -1, 1, DType::f32);
  Tensor y = Tensor::empty(dy.shape(), DType::f32), dx = Tensor::empty(x.shape(), DType::f32);
  Tensor index = index_for(g);
  CHECK(index.shape() == Shape{15, 5});
  cpu_backend().maxpool2d_forward(g, x, y, index);
  cpu_backend().maxpool2d_backward(g, dy, index, dx);
  Pool2dGeometry one = g;
  one.N = one.C = 1;
  for (int64_t nc = 0; nc < 15; ++nc) {
    CAPTURE(nc);
    Tensor xp = x.elements(nc * 36, 36).reshape({1, 1, 6, 6});
    Tensor dyp = dy.elements(nc * 9, 9).reshape({1, 1, 3, 3});
    Tensor yp = Tensor::empty(dyp.shape(), DType::f32), dxp = Tensor::empty(xp.shape(), DType::f32);
    Tensor ip = index_for(one);
    cpu_backend().maxpool2d_forward(one, xp, yp, ip);
    cpu_backend().maxpool2d_backward(one, dyp, ip, dxp);
    CHECK(bitwise_equal(yp, y.elements(nc * 9, 9).reshape({1, 1, 3, 3})));
    CHECK(bitwise_equal(dxp, dx.elements(nc * 36, 36).reshape({1, 1, 6, 6})));
    for (int64_t j = 0; j < 9; ++j) CHECK(position(one, ip, j) == position(g, index, nc * 9 + j));
  }
  // An index of the wrong packing is refused, naming the layout expected.
  Tensor bytes = Tensor::empty(dy.shape(), DType::u8);
  CHECK_THROWS_WITH_AS(
      cpu_backend().maxpool2d_forward(g, x, y, bytes),
      doctest::Contains("index [3,5,3,3] u8, expected u8 [15,5] (4-bit positions)"), Error);
}

TEST_CASE("max_pool2d then relu gives the bits of relu then max_pool2d, forward and backward") {
  // 3x3 windows of stride 2 overlap, so some inputs are the argmax of two windows; the values
  // hold ties (positive and negative), both zeros, windows with no positive value and NaN.
  Pool2dGeometry g = geometry(7, 7, 3, 3, 2, 2, 1, 1, false);
  g.N = 2, g.C = 3;
  for (DType t : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(t));
    Tensor x = random_tensor({2, 3, 7, 7}, 31, -1, 1, t),
           dy = random_tensor({2, 3, 4, 4}, 32, -1, 1, t);
    const double special[] = {0.0, -0.0, -0.5, -0.5, 0.25, 0.25, std::nan("")};
    for (int64_t i = 0; i < x.numel(); i += 3) {
      const double v = special[(i / 3) % 7];
      if (t == DType::f32)
        x.data<float>()[i] = static_cast<float>(v);
      else
        x.data<double>()[i] = v;
    }
    for (int64_t i = 49; i < 98; ++i) {  // one plane below zero everywhere
      if (t == DType::f32)
        x.data<float>()[i] = -std::abs(x.data<float>()[i]) - 0.01f;
      else
        x.data<double>()[i] = -std::abs(x.data<double>()[i]) - 0.01;
    }
    Backend& b = cpu_backend();
    const Shape ys{2, 3, 4, 4};
    // ReLU (1-bit mask), then the pool.
    Tensor r = Tensor::empty(x.shape(), t),
           mask = Tensor::empty({mask_bytes(x.numel())}, DType::u8);
    Tensor y1 = Tensor::empty(ys, t), i1 = index_for(g), d1 = Tensor::empty(x.shape(), t);
    b.relu_forward(x, r, mask);
    b.maxpool2d_forward(g, r, y1, i1);
    b.maxpool2d_backward(g, dy, i1, d1);
    b.relu_backward_mask(d1, mask, d1);
    // The pool, then ReLU in place reading its own output in backward.
    Tensor y2 = Tensor::empty(ys, t), i2 = index_for(g), d2 = Tensor::empty(x.shape(), t);
    Tensor dr = Tensor::empty(ys, t), none;
    b.maxpool2d_forward(g, x, y2, i2);
    b.relu_forward(y2, y2, none);
    b.relu_backward_output(dy, y2, dr);
    b.maxpool2d_backward(g, dr, i2, d2);
    CHECK(bitwise_equal(y1, y2));
    CHECK(bitwise_equal(d1, d2));
  }
}

TEST_CASE("pool errors name the op and the shapes") {
  ParamStore store;
  Tape tape(store);
  Value v3 = tape.input("v3", {3, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(max_pool2d(v3, {.kernel = 2}),
                       doctest::Contains("max_pool2d: input must be (N,C,H,W), got [3,8,8]"),
                       Error);
  Value x = tape.input("x", {1, 2, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {.kernel = 3, .pad = 2}),
                       doctest::Contains("max_pool2d: pad 2 must be at most half of kernel 3 (x "
                                         "[1,2,8,8])"),
                       Error);
  CHECK_THROWS_WITH_AS(max_pool2d(x, {.kernel = 3, .kernel_w = 2, .pad = 1, .pad_w = 2}),
                       doctest::Contains("max_pool2d: pad 1x2 must be at most half of kernel 3x2 "
                                         "(x [1,2,8,8])"),
                       Error);
  CHECK(
      max_pool2d(x, {.kernel = 3, .kernel_w = 2, .stride = 2, .stride_w = 1, .pad_w = 1}).shape() ==
      Shape{1, 2, 3, 9});
  CHECK_THROWS_WITH_AS(avg_pool2d(x, {.kernel = 11}),
                       doctest::Contains("avg_pool2d: kernel 11 is larger than the padded input "
                                         "(x [1,2,8,8], pad 0)"),
                       Error);
  Value big = tape.input("big", {1, 1, 20, 20}, DType::f32);
  CHECK_THROWS_WITH_AS(max_pool2d(big, {.kernel = 17}),
                       doctest::Contains("max_pool2d: kernel 17x17 has more than 256 positions"),
                       Error);
  CHECK(max_pool2d(big, {.kernel = 16}).shape() == Shape{1, 1, 1, 1});  // 256 positions fit
  Value labels = tape.input("labels", {1, 1, 4, 4}, DType::i32);
  CHECK_THROWS_WITH_AS(avg_pool2d(labels, {.kernel = 2}),
                       doctest::Contains("avg_pool2d: input must be f32 or f64, got i32"), Error);
  // The kernels check their tensors against the geometry.
  const Pool2dGeometry g = geometry(8, 8, 2, 2, 2, 2, 0, 0, false);
  Tensor xt = Tensor::empty({1, 1, 8, 8}, DType::f32), yt = Tensor::empty({1, 1, 3, 4}, DType::f32);
  CHECK_THROWS_WITH_AS(cpu_backend().avgpool2d_forward(g, xt, yt),
                       doctest::Contains("avg_pool2d: input side [1,1,8,8] f32, output side "
                                         "[1,1,3,4] f32; expected [1,1,8,8] and [1,1,4,4]"),
                       Error);
}
