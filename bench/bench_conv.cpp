// bench_conv: how close the CPU conv2d kernels come to the machine's SGEMM rate, at each thread
// count side by side. SGEMM runs through linear_forward (Eigen's own threaded GEMM); each conv
// kernel is timed at ResNet CIFAR sizes and a few ImageNet sizes, in GFLOP/s and % of the SGEMM
// rate at the same thread count. Every figure is the median over rounds, and the thread counts
// take turns inside a round, so a noisy neighbour hurts them alike.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/rng.h"

using namespace frugal;

namespace {

struct Budget {
  double min_seconds = 0.3;  // keep repeating a kernel until this much time has passed
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median seconds of one call of f and of one of g, taking turns (f, g, f, g, ...) after a warm-up
// call of each, so that a drift in the machine's speed moves both alike.
std::pair<double, double> time_pair(const std::function<void()>& f, const std::function<void()>& g,
                                    const Budget& budget) {
  using clock = std::chrono::steady_clock;
  f();
  g();
  std::vector<double> tf, tg;
  const auto start = clock::now();
  while (static_cast<int>(tf.size()) < budget.min_reps ||
         std::chrono::duration<double>(clock::now() - start).count() < 2 * budget.min_seconds) {
    const auto t0 = clock::now();
    f();
    const auto t1 = clock::now();
    g();
    tf.push_back(std::chrono::duration<double>(t1 - t0).count());
    tg.push_back(std::chrono::duration<double>(clock::now() - t1).count());
  }
  return {median(tf), median(tg)};
}

Tensor random(Shape s, uint64_t seed) {
  Tensor t = Tensor::empty(std::move(s), DType::f32);
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.normal());
  return t;
}

// GFLOP/s of y (M,N) = x (M,K) w (N,K)^T: the SGEMM inside every conv kernel.
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

struct ConvResult {
  double scratch_mib;
  double gflops[3];  // forward, backward data, backward filter
};

Conv2dGeometry geometry(const ConvCase& c) {
  Conv2dGeometry g{.N = c.N, .C = c.C, .H = c.H, .W = c.H, .K = c.K, .R = c.R, .S = c.R};
  g.stride_h = g.stride_w = c.stride;
  g.pad_h = g.pad_w = g.pad_h_end = g.pad_w_end = c.pad;
  g.P = g.Q = (c.H + 2 * c.pad - c.R) / c.stride + 1;
  return g;
}

// The kernels of c with the algorithm set_cpu_direct_conv chose.
ConvResult bench_conv(const ConvCase& c, const Budget& budget) {
  const Conv2dGeometry g = geometry(c);
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
  return {static_cast<double>(bytes) / (1 << 20),
          {flops / t[0] * 1e-9, flops / t[1] * 1e-9, flops / t[2] * 1e-9}};
}

// Depthwise convolution is bound by memory, not arithmetic: each pass's time against the time
// the machine needs to read its input and write its output once, at the rate the backend's
// copy reaches over a buffer of the same size (read + write), the copy and the pass taking turns
// (time_pair).
struct DepthwiseCase {
  std::string name;
  int64_t N, C, H, R, stride;
};

// Seconds of each pass, and of the bandwidth bound of reading its input and writing its output.
std::array<double, 6> bench_depthwise(const DepthwiseCase& c, const Budget& budget) {
  Conv2dGeometry g{.N = c.N, .C = c.C, .H = c.H, .W = c.H, .K = c.C, .R = c.R, .S = c.R};
  g.stride_h = g.stride_w = c.stride;
  g.pad_h = g.pad_w = g.pad_h_end = g.pad_w_end = c.R / 2;
  g.groups = c.C;
  g.P = g.Q = conv_output_size(c.H, c.R, c.stride, c.R / 2, c.R / 2, 1);
  Backend& be = cpu_backend();
  Tensor x = random({g.N, g.C, g.H, g.W}, 1), w = random({g.K, 1, g.R, g.S}, 2);
  Tensor b = random({g.K}, 3), dy = random({g.N, g.K, g.P, g.Q}, 4);
  Tensor y = Tensor::empty(dy.shape(), DType::f32), dx = Tensor::empty(x.shape(), DType::f32);
  Tensor dw = Tensor::empty(w.shape(), DType::f32), none;
  const size_t bytes =
      std::max(be.conv2d_forward_scratch(g, DType::f32), be.conv2d_backward_scratch(g, DType::f32));
  Tensor scratch = Tensor::empty({static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DType::u8);
  Tensor big = random({x.numel() + y.numel()}, 5), copy = Tensor::empty(big.shape(), DType::f32);
  // The copy reads and writes x + y bytes: twice what one pass must move. Each pass takes turns
  // with it, so that both are timed at the same speed of the machine.
  const std::function<void()> passes[3] = {
      [&] { be.conv2d_forward(g, x, w, b, y, scratch); },
      [&] { be.conv2d_backward_data(g, dy, w, dx, scratch); },
      [&] { be.conv2d_backward_filter(g, x, dy, dw, none, scratch); }};
  std::array<double, 6> out{};
  for (int k = 0; k < 3; ++k) {
    const auto [pass, copied] = time_pair(
        passes[k], [&] { be.copy(big, copy); }, budget);
    out[static_cast<size_t>(k)] = pass;
    out[static_cast<size_t>(k) + 3] = copied / 2;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_conv: CPU conv2d kernels against the machine's SGEMM rate"};
  std::vector<int> threads = {1, 2};
  int rounds = 3;
  bool quick = false;
  app.add_option("--threads", threads, "OpenMP thread counts to compare, side by side")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rounds", rounds, "rounds; each figure is the median over them")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--quick", quick, "fewer sizes, one short round (a smoke test)");
  bool depthwise_only = false;
  app.add_flag("--depthwise-only", depthwise_only, "only the depthwise table (no SGEMM rate)");
  std::string layer;
  app.add_option("--layer", layer,
                 "only the depthwise layers whose name contains this text, e.g. efficientnet");
  CLI11_PARSE(app, argc, argv);
  const Budget budget = quick ? Budget{0.05, 1} : Budget{};
  if (quick) rounds = 1;
  const size_t nt = threads.size();

  if (!depthwise_only) {
    // SGEMM: the best over sizes of the median over rounds, per thread count.
    std::vector<int64_t> sizes =
        quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1024};
    std::vector<double> sgemm(nt, 0);
    std::printf("SGEMM through linear_forward (Eigen), f32, GFLOP/s, median of %d rounds:\n",
                rounds);
    std::printf("  %-14s", "threads");
    for (int t : threads) std::printf(" %8d", t);
    std::printf("\n");
    for (int64_t n : sizes) {
      std::vector<std::vector<double>> runs(nt);
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < nt; ++i) {
          set_cpu_threads(threads[i]);
          runs[i].push_back(sgemm_gflops(n, n, n, budget));
        }
      std::printf("  M=N=K=%-7ld", static_cast<long>(n));
      for (size_t i = 0; i < nt; ++i) {
        const double rate = median(runs[i]);
        sgemm[i] = std::max(sgemm[i], rate);
        std::printf(" %8.1f", rate);
      }
      std::printf("\n");
    }
    std::printf("  %-14s", "SGEMM rate");
    for (double s : sgemm) std::printf(" %8.1f", s);
    std::printf("   (best of the above)\n\n");

    std::vector<ConvCase> cases = {
        {"resnet-cifar N64 16ch 32x32 k3 p1", 64, 16, 32, 16, 3, 1, 1},
        {"resnet-cifar N64 32ch 16x16 k3 p1", 64, 32, 16, 32, 3, 1, 1},
        {"resnet-cifar N64 64ch 8x8 k3 p1", 64, 64, 8, 64, 3, 1, 1},
        {"resnet-cifar N64 16>32ch 32x32 k1 s2", 64, 16, 32, 32, 1, 2, 0},
        {"imagenet N16 64ch 56x56 k3 p1", 16, 64, 56, 64, 3, 1, 1},
        {"imagenet N16 256>64ch 56x56 k1", 16, 256, 56, 64, 1, 1, 0},
        {"imagenet N1 3>64ch 224x224 k7 s2", 1, 3, 224, 64, 7, 2, 3},
        {"alexnet N64 48>128ch 27x27 k5 p2", 64, 48, 27, 128, 5, 1, 2},
        {"alexnet N64 192ch 13x13 k3 p1", 64, 192, 13, 192, 3, 1, 1},
        {"vgg N16 256ch 28x28 k3 p1", 16, 256, 28, 256, 3, 1, 1},
        {"resnet18 N32 128ch 28x28 k3 p1", 32, 128, 28, 128, 3, 1, 1},
        {"resnet18 N32 256ch 14x14 k3 p1", 32, 256, 14, 256, 3, 1, 1},
        {"resnet18 N32 512ch 7x7 k3 p1", 32, 512, 7, 512, 3, 1, 1},
    };
    if (quick) cases = {cases[0], {"imagenet N2 64ch 56x56 k3 p1", 2, 64, 56, 64, 3, 1, 1}};
    std::printf(
        "conv2d, f32, GFLOP/s and %% of SGEMM at the same thread count, median of %d rounds\n",
        rounds);
    std::printf("%-38s %-6s %3s %7s   %-14s %-14s %-14s\n", "", "", "", "scratch", "forward",
                "backward data", "backward filter");
    std::printf("%-38s %-6s %3s %7s", "", "kernel", "thr", "MiB");
    for (int k = 0; k < 3; ++k) std::printf("   %6s %5s", "GF/s", "%SG");
    std::printf("\n");
    for (const ConvCase& c : cases) {
      // The direct kernels where they take the case (stride 1, built with AVX and FMA), then
      // im2col + GEMM, which takes every case.
      std::vector<bool> algorithms = {false};
      if (cpu_conv2d_direct_applies(geometry(c), DType::f32))
        algorithms.insert(algorithms.begin(), true);
      bool first_row = true;
      for (bool direct : algorithms) {
        set_cpu_direct_conv(direct);
        std::vector<std::vector<ConvResult>> runs(nt);
        for (int r = 0; r < rounds; ++r)
          for (size_t i = 0; i < nt; ++i) {
            set_cpu_threads(threads[i]);
            runs[i].push_back(bench_conv(c, budget));
          }
        for (size_t i = 0; i < nt; ++i) {
          std::printf("%-38s %-6s %3d %7.2f", first_row ? c.name.c_str() : "",
                      i == 0 ? (direct ? "direct" : "im2col") : "", threads[i],
                      runs[i][0].scratch_mib);
          first_row = false;
          for (int k = 0; k < 3; ++k) {
            std::vector<double> v;
            for (const ConvResult& res : runs[i]) v.push_back(res.gflops[k]);
            const double rate = median(v);
            std::printf("   %6.1f %4.0f%%", rate, 100.0 * rate / sgemm[i]);
          }
          std::printf("\n");
        }
      }
    }
    set_cpu_direct_conv(true);
  }
  std::vector<DepthwiseCase> depthwise = {
      {"mobilenetv2 N32 144ch 56x56 k3", 32, 144, 56, 3, 1},
      {"mobilenetv2 N32 144ch 56x56 k3 s2", 32, 144, 56, 3, 2},
      {"mobilenetv2 N32 576ch 14x14 k3", 32, 576, 14, 3, 1},
      {"efficientnet N32 240ch 28x28 k5", 32, 240, 28, 5, 1},
  };
  if (quick) depthwise = {{"mobilenetv2 N2 144ch 56x56 k3", 2, 144, 56, 3, 1}};
  std::erase_if(depthwise,
                [&](const DepthwiseCase& c) { return c.name.find(layer) == std::string::npos; });
  if (depthwise.empty()) {
    std::fprintf(stderr, "bench_conv: no depthwise layer's name contains '%s'\n", layer.c_str());
    return 2;
  }
  std::printf(
      "\ndepthwise conv2d, f32: milliseconds per pass and its multiple of the time to read its "
      "input and write its output once (at the rate of a copy of as many bytes, timed in turns "
      "with the pass), median of %d "
      "rounds\n",
      rounds);
  std::printf("%-38s %3s   %-16s %-16s %-16s\n", "", "thr", "forward", "backward data",
              "backward filter");
  for (const DepthwiseCase& c : depthwise) {
    std::vector<std::vector<std::array<double, 6>>> runs(nt);
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < nt; ++i) {
        set_cpu_threads(threads[i]);
        runs[i].push_back(bench_depthwise(c, budget));
      }
    for (size_t i = 0; i < nt; ++i) {
      std::printf("%-38s %3d", i == 0 ? c.name.c_str() : "", threads[i]);
      for (int k = 0; k < 3; ++k) {
        std::vector<double> t, bound;
        for (const auto& res : runs[i]) t.push_back(res[k]), bound.push_back(res[k + 3]);
        std::printf("   %7.2f %5.2fx", median(t) * 1e3, median(t) / median(bound));
      }
      std::printf("\n");
    }
  }
  return 0;
}
