// The CPU kernels' per-channel double sums (batch norm's statistics and gradients, layer
// norm's rows as one channel of one sample): a fixed order, so the same bits every run.
#pragma once

#include <array>
#include <cstdint>

#include "core/kernel_checks.h"

namespace frugal::cpu {

// Double sums over channel c's values i = (n*C + c)*S + s, of each of the K terms f(i)[k],
// in kLanes lanes by s % kLanes (tails by s too), then lanes in pairs: a fixed order.
inline constexpr int kLanes = 8;
template <int K, typename F>
std::array<double, K> channel_sums(const ChannelDims& d, int64_t c, const F& f) {
  double acc[K][kLanes] = {};
  for (int64_t n = 0; n < d.N; ++n) {
    const int64_t base = (n * d.C + c) * d.S;
    int64_t s = 0;
    for (; s + kLanes <= d.S; s += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        const std::array<double, K> t = f(base + s + j);
        for (int k = 0; k < K; ++k) acc[k][j] += t[k];
      }
    for (; s < d.S; ++s) {
      const std::array<double, K> t = f(base + s);
      for (int k = 0; k < K; ++k) acc[k][s % kLanes] += t[k];
    }
  }
  std::array<double, K> out;
  for (int k = 0; k < K; ++k) {
    const double* a = acc[k];
    out[static_cast<size_t>(k)] = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  }
  return out;
}

// Double sums of the K terms f(j)[k] over the n values j of one contiguous run (a layer norm's
// row, a group norm's group), in the same fixed order: the run as one channel of one sample.
template <int K, typename F>
std::array<double, K> row_sums(int64_t n, const F& f) {
  return channel_sums<K>(ChannelDims{1, 1, n}, 0, f);
}

}  // namespace frugal::cpu
