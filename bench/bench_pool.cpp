// bench_pool: the CPU max pool's forward and backward at the bundled networks' geometries (a
// ResNet stem, AlexNet's overlapping windows, VGG's and U-Net's 2x2) and one dilated window, in
// ms per call at batch 32-64, float32: the median over rounds, each round one call of each.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/backend.h"
#include "core/rng.h"
#include "layers/pool_geometry.h"

using namespace frugal;

namespace {

struct Case {
  const char* name;
  int64_t N, C, H, kernel, stride, pad, dilation;
};

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void run(const Case& c, int rounds) {
  const TensorMeta xm{{c.N, c.C, c.H, c.H}, DType::f32};
  const Pool2dGeometry g = pool2d_geometry(
      "max_pool2d", {&xm, 1},
      {.kernel = c.kernel, .stride = c.stride, .pad = c.pad, .dilation = c.dilation});
  Backend& b = cpu_backend();
  Tensor x = Tensor::empty({c.N, c.C, c.H, c.H}, DType::f32);
  Tensor dx = Tensor::empty(x.shape(), DType::f32);
  Tensor y = Tensor::empty({c.N, c.C, g.P, g.Q}, DType::f32);
  Tensor dy = Tensor::empty(y.shape(), DType::f32);
  Rng rng(7);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(rng.below(1000));
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data<float>()[i] = 1.0f;
  const TensorMeta im = maxpool_index_meta(g, b.maxpool_index_bits(g));
  Tensor index = Tensor::empty(im.shape, im.dtype);
  std::vector<double> forward, backward;
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
    auto t = std::chrono::steady_clock::now();
    b.maxpool2d_forward(g, x, y, index);
    const double f = ms_since(t);
    t = std::chrono::steady_clock::now();
    b.maxpool2d_backward(g, dy, index, dx);
    if (r == 0) continue;
    forward.push_back(f);
    backward.push_back(ms_since(t));
  }
  std::printf("%-34s forward %7.2f ms  backward %7.2f ms\n", c.name, median(forward),
              median(backward));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_pool: the CPU max pool, forward and backward, ms per call"};
  int rounds = 15;
  app.add_option("--rounds", rounds, "calls of each pass; the median is printed")
      ->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  for (const Case& c : {Case{"ResNet stem 32x64x112 3x3 s2 p1", 32, 64, 112, 3, 2, 1, 1},
                        Case{"AlexNet 64x64x55 3x3 s2", 64, 64, 55, 3, 2, 0, 1},
                        Case{"VGG 32x128x112 2x2 s2", 32, 128, 112, 2, 2, 0, 1},
                        Case{"dilated 32x64x56 3x3 s1 p1 d2", 32, 64, 56, 3, 1, 1, 2}})
    run(c, rounds);
}
