// bench_conv: how close the CPU conv2d kernels come to the machine's SGEMM rate. SGEMM runs
// through linear_forward (Eigen, the same OpenMP threading as the conv kernels); each conv
// kernel is timed at ResNet CIFAR sizes and one ImageNet size, in GFLOP/s and % of SGEMM.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/rng.h"

using namespace frugal;

namespace {

struct Budget {
  double min_seconds = 0.4;  // keep repeating a kernel until this much time has passed
  int min_reps = 3;
};

// Median seconds of one call of f, after one warm-up call.
double time_median(const std::function<void()>& f, const Budget& budget) {
  using clock = std::chrono::steady_clock;
  f();
  std::vector<double> times;
  const auto start = clock::now();
  while (static_cast<int>(times.size()) < budget.min_reps ||
         std::chrono::duration<double>(clock::now() - start).count() < budget.min_seconds) {
    const auto t0 = clock::now();
    f();
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Tensor random(Shape s, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(s), DType::f32);
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.normal());
  return t;
}

// y (M,N) = x (M,K) w (N,K)^T: the SGEMM inside every conv kernel.
double sgemm_gflops(int64_t M, int64_t N, int64_t K, const Budget& budget) {
  Tensor x = random({M, K}, 1), w = random({N, K}, 2), y = Tensor::empty({M, N}, DType::f32);
  Tensor none;
  double s = time_median([&] { cpu_backend().linear_forward(x, w, none, y); }, budget);
  return 2.0 * static_cast<double>(M * N * K) / s * 1e-9;
}

struct ConvCase {
  std::string name;
  int64_t N, C, H, K, R, stride, pad;
};

void bench_conv(const ConvCase& c, double sgemm, const Budget& budget) {
  Conv2dGeometry g{.N = c.N, .C = c.C, .H = c.H, .W = c.H, .K = c.K, .R = c.R, .S = c.R};
  g.stride_h = g.stride_w = c.stride;
  g.pad_h = g.pad_w = c.pad;
  g.P = g.Q = (c.H + 2 * c.pad - c.R) / c.stride + 1;
  Backend& be = cpu_backend();
  Tensor x = random({g.N, g.C, g.H, g.W}, 1), w = random({g.K, g.C, g.R, g.S}, 2);
  Tensor b = random({g.K}, 3), dy = random({g.N, g.K, g.P, g.Q}, 4);
  Tensor y = Tensor::empty(dy.shape(), DType::f32), dx = Tensor::empty(x.shape(), DType::f32);
  Tensor dw = Tensor::empty(w.shape(), DType::f32), db = Tensor::empty(b.shape(), DType::f32);
  const size_t bytes =
      std::max(be.conv2d_forward_scratch(g, DType::f32), be.conv2d_backward_scratch(g, DType::f32));
  Tensor scratch = Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::u8);
  // Every kernel does one multiply-add per (n, k, p, q, c, r, s).
  const double flops = 2.0 * static_cast<double>(g.N * g.K * g.P * g.Q * g.C * g.R * g.S);
  const double t[3] = {
      time_median([&] { be.conv2d_forward(g, x, w, b, y, scratch); }, budget),
      time_median([&] { be.conv2d_backward_data(g, dy, w, dx, scratch); }, budget),
      time_median([&] { be.conv2d_backward_filter(g, x, dy, dw, db, scratch); }, budget)};
  std::printf("%-34s %6.1f", c.name.c_str(), static_cast<double>(bytes) / (1 << 20));
  for (double s : t)
    std::printf("   %6.1f %4.0f%%", flops / s * 1e-9, 100.0 * flops / s * 1e-9 / sgemm);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_conv: CPU conv2d kernels against the machine's SGEMM rate"};
  int threads = 0;
  bool quick = false;
  app.add_option("--threads", threads, "OpenMP threads (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--quick", quick, "fewer sizes and repetitions (a smoke test)");
  CLI11_PARSE(app, argc, argv);
  set_cpu_threads(threads);
  const Budget budget = quick ? Budget{0.05, 1} : Budget{};
  std::printf("threads: %d\n\nSGEMM through linear_forward (Eigen), f32:\n",
              cpu_backend().threads());

  std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1024};
  double sgemm = 0;
  for (int64_t n : sizes) {
    const double rate = sgemm_gflops(n, n, n, budget);
    std::printf("  M=N=K=%-5ld %8.1f GFLOP/s\n", static_cast<long>(n), rate);
    sgemm = std::max(sgemm, rate);
  }
  std::printf("the machine's SGEMM rate: %.1f GFLOP/s (best of the above)\n\n", sgemm);

  std::vector<ConvCase> cases = {
      {"resnet-cifar N64 16ch 32x32 k3 p1", 64, 16, 32, 16, 3, 1, 1},
      {"resnet-cifar N64 32ch 16x16 k3 p1", 64, 32, 16, 32, 3, 1, 1},
      {"resnet-cifar N64 64ch 8x8 k3 p1", 64, 64, 8, 64, 3, 1, 1},
      {"imagenet N16 64ch 56x56 k3 p1", 16, 64, 56, 64, 3, 1, 1},
  };
  if (quick) cases.back() = {"imagenet N2 64ch 56x56 k3 p1", 2, 64, 56, 64, 3, 1, 1};
  std::printf("conv2d, f32 %-22s %6s   %-12s   %-12s   %-12s\n", "", "scratch", "forward",
              "backward data", "backward filter");
  std::printf("%-34s %6s   %6s %5s   %6s %5s   %6s %5s\n", "", "MiB", "GFLOP/s", "%SGEMM",
              "GFLOP/s", "%SGEMM", "GFLOP/s", "%SGEMM");
  for (const ConvCase& c : cases) bench_conv(c, sgemm, budget);
  return 0;
}
