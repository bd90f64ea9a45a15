// Direct f32 convolution for stride-1 layers: the filter gradient (see conv2d_direct.h).
//
// The filter gradient, where rows are whole vectors: each thread owns a range of input
// channels; for a batch of samples whose dy stays in L2 it pads one channel's planes, and a
// register block of kBlockK filters by 3 taps (r, s..s+2) sums dy vector times shifted input
// vector over every output vector of the batch, in 8 lanes, which are then added in order into
// dw. The batch size depends on the geometry only, so these bits do not depend on the thread
// count either.
#include <algorithm>
#include <vector>

#include "core/cpu/conv2d_direct.h"
#include "core/cpu/conv2d_direct_tile.h"
#include "core/cpu/parts.h"
#include "core/error.h"

namespace frugal::direct_conv {

namespace {

// Filter gradient: the samples run in batches whose dy fits kFilterBudget (it is read again for
// every channel and filter row), and each thread pads its channels of a batch one at a time.
constexpr int64_t kFilterBudget = int64_t{1} << 19;  // bytes of dy per batch of samples
struct FilterScratch {
  int64_t plane, samples;  // floats of one padded plane; samples per batch
  int64_t floats() const { return plane * samples; }
};
FilterScratch filter_scratch(const Conv2dGeometry& g) {
  const int64_t plane = (g.H + 2 * g.pad_h) * (g.W + 2 * g.pad_w) + kSlack;
  const int64_t dy = g.K * g.P * g.Q * int64_t{sizeof(float)};
  return {plane, std::clamp<int64_t>(kFilterBudget / std::max<int64_t>(dy, 1), 1,
                                     std::max<int64_t>(g.N, 1))};
}
int64_t filter_floats(const Conv2dGeometry& g, int threads) {
  return parts(g.C, threads) * filter_scratch(g).floats();
}

#if defined(__AVX__) && defined(__FMA__)

// The filter-gradient register block for one input channel and filter row r: sums
// (kBlockK, 3, 8) += d_k[vector] * x[vector + s] for the 4 or 8 filters k of a block and 3
// taps s, over ns samples (d and x step by d_step and x_step) and every output vector vs of
// each. d: dy of the block's filters; x: the channel's padded plane from row r, column s0 on.
// The sums start from, and end in, `sums`.
void filter_sums(const float* const* d, int64_t d_step, int64_t Q, const float* x, int64_t x_step,
                 int64_t Wp, int64_t ns, const std::vector<Vec>& vs, float* sums) {
  __m256 acc[kBlockK][3];
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 3
    for (int s = 0; s < 3; ++s) acc[k][s] = _mm256_loadu_ps(sums + (k * 3 + s) * kLanes);
  for (int64_t n = 0; n < ns; ++n, x += x_step)
    for (const Vec& v : vs) {
      const float* xv = x + v.p * Wp + v.q;
      __m256 in[3];
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        in[s] = _mm256_loadu_ps(xv + s);
        FRUGAL_IN_REGISTER(in[s]);
      }
      const int64_t o = n * d_step + v.p * Q + v.q;
#pragma GCC unroll 8
      for (int k = 0; k < kBlockK; ++k) {
        __m256 dk = _mm256_loadu_ps(d[k] + o);  // whole vectors: Q % 8 == 0
        FRUGAL_IN_REGISTER(dk);
#pragma GCC unroll 3
        for (int s = 0; s < 3; ++s) acc[k][s] = _mm256_fmadd_ps(dk, in[s], acc[k][s]);
      }
    }
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 3
    for (int s = 0; s < 3; ++s) _mm256_storeu_ps(sums + (k * 3 + s) * kLanes, acc[k][s]);
}

// The filter-gradient block for input channel c and filter row r: the filters of block kb by
// taps s0, s0+1, s0+2 (those past S are computed and not kept), summed over every output vector
// of ns samples and added to dw. planes: the samples' channel c, padded, (Hp, Wp) each,
// plane_step apart; dy: the first sample's.
void filter_block(const Conv2dGeometry& g, const float* planes, int64_t plane_step, int64_t ns,
                  const float* dy, int64_t c, int64_t kb, int64_t r, int64_t s0,
                  const std::vector<Vec>& vs, float* dw) {
  const int64_t Wp = g.W + 2 * g.pad_w, PQ = g.P * g.Q;
  const int64_t K = std::min(kBlockK, g.K - kb * kBlockK);
  const float* d[kBlockK];
  for (int64_t k = 0; k < kBlockK; ++k) d[k] = dy + (kb * kBlockK + std::min(k, K - 1)) * PQ;
  alignas(32) float sums[kBlockK * 3 * kLanes] = {};
  filter_sums(d, g.K * PQ, g.Q, planes + r * Wp + s0, plane_step, Wp, ns, vs, sums);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t s = 0; s < std::min<int64_t>(3, g.S - s0); ++s) {
      const float* lanes = sums + (k * 3 + s) * kLanes;
      float total = 0.0f;
      for (int64_t l = 0; l < kLanes; ++l) total += lanes[l];
      dw[(((kb * kBlockK + k) * g.C + c) * g.R + r) * g.S + s0 + s] += total;
    }
}

// The filter gradient (see backward_filter).
void filter(const Conv2dGeometry& g, int threads, const float* x, const float* dy, float* dw,
            float* scratch) {
  const int64_t blocks = (g.K + kBlockK - 1) / kBlockK, Hp = g.H + 2 * g.pad_h;
  const FilterScratch fs = filter_scratch(g);
  const Conv cv = forward_conv(g);  // pad_rows reads its input geometry
  const std::vector<Vec> vs = vectors(0, g.P, g.Q);
  const int64_t RS = g.R * g.S;
  for_parts(parts(g.C, threads), g.C, [&](int part, int64_t c0, int64_t c1) {
    float* planes = scratch + part * fs.floats();
    for (int64_t k = 0; k < g.K; ++k)
      std::fill(dw + (k * g.C + c0) * RS, dw + (k * g.C + c1) * RS, 0.0f);
    for (int64_t n0 = 0; n0 < g.N; n0 += fs.samples) {
      const int64_t ns = std::min(fs.samples, g.N - n0);
      const float* dyn = dy + n0 * g.K * g.P * g.Q;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t n = 0; n < ns; ++n)
          pad_rows(cv, x + (n0 + n) * g.C * g.H * g.W, c, c + 1, 0, Hp, planes + n * fs.plane);
        for (int64_t r = 0; r < g.R; ++r)
          for (int64_t kb = 0; kb < blocks; ++kb)
            for (int64_t s0 = 0; s0 < g.S; s0 += 3)
              filter_block(g, planes, fs.plane, ns, dyn, c, kb, r, s0, vs, dw);
      }
    }
  });
}

#else

void filter(const Conv2dGeometry&, int, const float*, const float*, float*, float*) {
  FRUGAL_CHECK(false, "direct conv2d: built for a CPU without AVX and FMA");
}

#endif

}  // namespace

size_t filter_scratch_bytes(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(filter_floats(g, threads)) * sizeof(float);
}

bool filter_applies(const Conv2dGeometry& g) {
  return g.Q % kLanes == 0 && g.K * g.P * g.Q * int64_t{sizeof(float)} <= int64_t{1} << 20;
}

void backward_filter(const Conv2dGeometry& g, int threads, const float* x, const float* dy,
                     float* dw, float* scratch) {
  FRUGAL_CHECK(filter_applies(g), "direct conv2d filter gradient: output rows of ", g.Q,
               " are not whole vectors of ", kLanes);
  filter(g, threads, x, dy, dw, scratch);
}

}  // namespace frugal::direct_conv
