// bench_pack: the CPU packing kernels (Backend::pack_counts + pack, and unpack) on a ReLU-like
// f32 tensor of ResNet-50's layer1 size at batch 32 (32 x 256 x 56 x 56, 98 MiB), a fraction
// of it zero and the rest positive, in ms per call: the median over rounds, and what the
// packed form takes of the dense bytes. `--normal` packs values of a normal distribution
// instead, signed and without zeros (a BatchNorm's output: no mask, 28 bits a value).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/backend.h"
#include "core/rng.h"

using namespace frugal;

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_pack: the CPU packing kernels on a ReLU-like tensor"};
  int rounds = 7;
  double zeros = 0.4;
  bool normal = false;
  app.add_option("--rounds", rounds, "rounds (each packs and unpacks once)")
      ->check(CLI::PositiveNumber);
  app.add_option("--zeros", zeros, "fraction of zero elements")->check(CLI::Range(0.0, 1.0));
  app.add_flag("--normal", normal, "signed normal values, no zeros (--zeros is ignored)");
  CLI11_PARSE(app, argc, argv);

  const int64_t n = int64_t{32} * 256 * 56 * 56;
  Tensor x = Tensor::empty({n}, DType::f32);
  Rng rng(7);
  float* xv = x.data<float>();
  for (int64_t i = 0; i < n; ++i)
    xv[i] = normal                  ? static_cast<float>(rng.normal())
            : rng.uniform() < zeros ? 0.0f
                                    : std::fabs(static_cast<float>(rng.normal()));
  Backend& b = cpu_backend();
  std::vector<int64_t> counts;
  Tensor packed, back = Tensor::empty({n}, DType::f32);
  std::vector<double> pack_ms, unpack_ms;
  for (int r = 0; r < rounds; ++r) {
    auto t = std::chrono::steady_clock::now();
    const int64_t words = b.pack_counts(x, counts);
    if (!packed.defined() || packed.numel() != packed_bytes(n, words, DType::f32))
      packed = Tensor::empty({packed_bytes(n, words, DType::f32)}, DType::u8);
    b.pack(x, counts, packed);
    pack_ms.push_back(ms_since(t));
    t = std::chrono::steady_clock::now();
    b.unpack(packed, back);
    unpack_ms.push_back(ms_since(t));
  }
  char label[64] = "normal values";
  if (!normal) std::snprintf(label, sizeof label, "%.0f%% zeros", 100 * zeros);
  const bool same = std::memcmp(back.raw(), x.raw(), x.bytes()) == 0;
  std::printf(
      "n %lld, %s: pack %.2f ms, unpack %.2f ms (median of %d); packed %.1f%% "
      "of the dense bytes; round trip %s\n",
      static_cast<long long>(n), label, median(pack_ms), median(unpack_ms), rounds,
      100.0 * static_cast<double>(packed.numel()) / static_cast<double>(x.bytes()),
      same ? "exact" : "NOT EXACT");
  return same ? 0 : 1;
}
