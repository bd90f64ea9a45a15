// Direct f32 convolution for stride-1 layers (see conv2d_direct.h).
//
// Forward, for one sample and a tile of output rows [p0, p1): the input rows the tile reads are
// copied, zero-padded, into a buffer of (C, rows + R - 1, Wp) with Wp = W + 2 pad_w. An output
// "vector" is 8 neighbouring outputs of one row (the last of a row may hold fewer), and output
// (p, q) reads buffer row p - p0 + r at column q + s, so for every tap (c, r, s) a vector's
// inputs are 8 neighbouring floats at a fixed offset from its own start. The register block
// holds kBlockK output channels (8 with AVX-512's 32 registers, else 4) by 3 vectors (or 2,
// where 3 would leave over 1/16 of the last block idle and 2 divides the vectors evenly): per
// tap it loads the input vectors and broadcasts kBlockK weights, from filters packed as
// [channel block][c][r][s][kBlockK].
//
// Channels run in chunks, so that the tile's rows of one chunk stay in cache and its packed
// filters fit a small buffer of each thread's; a later chunk starts its sums from the partial
// sums the earlier one stored in y. A float round-trips through memory exactly, so the chunks
// change no bits: every output is one chain of fused multiply-adds over (c, r, s) in order,
// with the bias added last, whatever the tiling and thread count.
//
// The filter gradient, where rows are whole vectors: each thread owns a range of input
// channels; for a batch of samples whose dy stays in L2 it pads one channel's planes, and a
// register block of kBlockK filters by 3 taps (r, s..s+2) sums dy vector times shifted input
// vector over every output vector of the batch, in 8 lanes, which are then added in order into
// dw. The batch size depends on the geometry only, so these bits do not depend on the thread
// count either.
#include "core/cpu/conv2d_direct.h"

#if defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

#include "core/cpu/parts.h"
#include "core/error.h"

namespace frugal::direct_conv {

namespace {

bool stride_one(const Conv2dGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && (g.R > 1 || g.S > 1) && g.pad_h < g.R &&
         g.pad_w < g.S;
}

constexpr int64_t kLanes = 8;  // floats in one AVX vector
#if defined(__AVX512VL__)
constexpr int64_t kBlockK = 8;  // output channels in the register block: 32 vector registers
#else
constexpr int64_t kBlockK = 4;  // 16 vector registers
#endif
constexpr int64_t kTileBudget = int64_t{3} << 18;  // bytes of padded input per thread
constexpr int64_t kPackBudget = int64_t{1} << 18;  // bytes of packed filters per thread
constexpr int64_t kSlack = 2 * kLanes;  // floats past a tile: a short vector's lanes read past it
constexpr int64_t kChunk = 64;          // at most this many input channels per chunk

// One stride-1 convolution as the kernel runs it: in (N, C, H, W), zero-padded by (ph, pw),
// gives out (N, K, P, Q) with P = H + 2 ph - R + 1 and Q = W + 2 pw - S + 1.
struct Conv {
  int64_t N, C, H, W, K, R, S, ph, pw, P, Q;
  int64_t Wp() const { return W + 2 * pw; }
  int64_t blocks() const { return (K + kBlockK - 1) / kBlockK; }  // of output channels
  // Input channels per chunk, and the floats of one chunk's packed filters.
  int64_t chunk() const {
    const int64_t channel = blocks() * kBlockK * R * S * int64_t{sizeof(float)};
    return std::clamp<int64_t>(kPackBudget / channel, 1, std::clamp<int64_t>(C, 1, kChunk));
  }
  int64_t packed() const { return blocks() * kBlockK * chunk() * R * S; }
};

Conv forward_conv(const Conv2dGeometry& g) {
  return {g.N, g.C, g.H, g.W, g.K, g.R, g.S, g.pad_h, g.pad_w, g.P, g.Q};
}
// The data gradient: dy (N, K, P, Q) padded by (R-1-pad_h, S-1-pad_w) gives dx (N, C, H, W).
Conv data_conv(const Conv2dGeometry& g) {
  return {g.N, g.K, g.P, g.Q, g.C, g.R, g.S, g.R - 1 - g.pad_h, g.S - 1 - g.pad_w, g.H, g.W};
}

// Output rows per tile, so that a tile's padded input fits the budget unless a single row does
// not; with fewer samples than threads, each sample is cut into enough tiles to go round.
struct Tiling {
  int64_t rows, tiles;
  int64_t floats;  // of one tile's padded input, slack included
};
Tiling tiling(const Conv& cv, int threads) {
  const int64_t row = cv.C * cv.Wp() * int64_t{sizeof(float)};
  const int64_t budget = kTileBudget - kSlack * int64_t{sizeof(float)};
  int64_t rows = std::clamp<int64_t>(budget / row - (cv.R - 1), 1, cv.P);
  if (cv.N > 0 && cv.N < threads) {
    const int64_t min_tiles = (threads + cv.N - 1) / cv.N;
    rows = std::max<int64_t>(1, std::min(rows, (cv.P + min_tiles - 1) / min_tiles));
  }
  return {rows, (cv.P + rows - 1) / rows, cv.C * (rows + cv.R - 1) * cv.Wp() + kSlack};
}
int64_t forward_floats(const Conv& cv, int threads) {
  const Tiling tl = tiling(cv, threads);
  return parts(cv.N * tl.tiles, threads) * (tl.floats + cv.packed());
}
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

// Packs the filters f(o, i, r, s) of inputs [i0, i1) of cv (O = cv.K outputs) as
// [o / kBlockK][i - i0][r][s][o % kBlockK], zero past O.
template <typename F>
void pack(const Conv& cv, int64_t i0, int64_t i1, const F& f, float* out) {
  const int64_t O = cv.K, R = cv.R, S = cv.S;
  for (int64_t ob = 0; ob < cv.blocks(); ++ob)
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s)
          for (int64_t k = 0; k < kBlockK; ++k) {
            const int64_t o = ob * kBlockK + k;
            *out++ = o < O ? f(o, i, r, s) : 0.0f;
          }
}

#if defined(__AVX__) && defined(__FMA__)

constexpr bool kBuilt = true;

// An output vector: `lanes` outputs of row p from column q on.
struct Vec {
  int64_t p, q, lanes;
};
std::vector<Vec> vectors(int64_t p0, int64_t p1, int64_t Q) {
  std::vector<Vec> v;
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t q = 0; q < Q; q += kLanes) v.push_back({p, q, std::min(kLanes, Q - q)});
  return v;
}

// Loads and stores of the first `lanes` floats of a vector (lanes <= 8): AVX-512's mask
// registers where there are some (AVX's vmaskmovps stores are slow on AMD's cores).
#if defined(__AVX512VL__)
__m256 load_first(const float* p, int64_t lanes) {
  return _mm256_maskz_loadu_ps(static_cast<__mmask8>((1u << lanes) - 1), p);
}
void store_first(float* p, int64_t lanes, __m256 v) {
  _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << lanes) - 1), v);
}
#else
const int32_t kMaskTable[2 * kLanes] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
__m256i mask(int64_t lanes) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMaskTable + kLanes - lanes));
}
__m256 load_first(const float* p, int64_t lanes) {
  return _mm256_maskload_ps(p, mask(lanes));
}
void store_first(float* p, int64_t lanes, __m256 v) {
  _mm256_maskstore_ps(p, mask(lanes), v);
}
#endif
__m256 load(const float* p, int64_t lanes) {
  return lanes == kLanes ? _mm256_loadu_ps(p) : load_first(p, lanes);
}
void store(float* p, int64_t lanes, __m256 v) {
  if (lanes == kLanes)
    _mm256_storeu_ps(p, v);
  else
    store_first(p, lanes, v);
}

// Writes one padded row dst [0, Wp) = pw zeros, src [0, W), zeros, in whole vectors: the rows
// are short (8 to 34 floats on CIFAR nets), where calls to memcpy and memset, or masked
// stores, cost more than the copying. The stores run up to 8 floats past the row; the caller
// writes the rows in order, each over what the one before spilled, and keeps kSlack floats
// after the last. src is read only inside [0, W).
void pad_row(const float* src, int64_t W, int64_t pw, int64_t Wp, float* dst) {
  if (pw > kLanes) {  // wider padding than one vector: no such layer in the model zoo
    std::fill(dst, dst + Wp, 0.0f);
    std::copy(src, src + W, dst + pw);
    return;
  }
  const __m256 zero = _mm256_setzero_ps();
  if (pw > 0) _mm256_storeu_ps(dst, zero);
  int64_t i = 0;
  for (; i + kLanes <= W; i += kLanes) _mm256_storeu_ps(dst + pw + i, _mm256_loadu_ps(src + i));
  if (i < W) _mm256_storeu_ps(dst + pw + i, load_first(src + i, W - i));  // zeros past W
  if (Wp > pw + W) _mm256_storeu_ps(dst + pw + W, zero);
}
void zero_row(int64_t Wp, float* dst) {
  for (int64_t i = 0; i < Wp; i += kLanes) _mm256_storeu_ps(dst + i, _mm256_setzero_ps());
}

// Copies rows [h0, h0 + rows) of channels [c0, c1) of one sample's planes (C, H, W),
// zero-padded, into t (c1 - c0, rows, Wp); row h0 + i is input row h0 + i - ph (zero outside
// [0, H)); kSlack zeros follow.
void pad_rows(const Conv& cv, const float* in, int64_t c0, int64_t c1, int64_t h0, int64_t rows,
              float* t) {
  const int64_t Wp = cv.Wp();
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t i = 0; i < rows; ++i) {
      float* dst = t + ((c - c0) * rows + i) * Wp;
      const int64_t h = h0 + i - cv.ph;
      if (h < 0 || h >= cv.H)
        zero_row(Wp, dst);
      else
        pad_row(in + (c * cv.H + h) * cv.W, cv.W, cv.pw, Wp, dst);
    }
  std::fill(t + (c1 - c0) * rows * Wp, t + (c1 - c0) * rows * Wp + kSlack, 0.0f);
}

// Keeps a loaded vector in a register: without this GCC folds the load into every
// multiply-add that uses it, and the loads, not the multiply-adds, bound the loop.
#define FRUGAL_IN_REGISTER(v) asm("" : "+x"(v))

// The forward register block: sums (kBlockK, NV, 8) += w[c][i][k] * x_j[c * cstride + tap[i]]
// over channels c in [0, nc) and taps i in [0, taps), with w packed as [c][i][kBlockK]. The
// sums start from, and end in, `sums`, so the loop itself keeps them all in registers.
template <int NV>
void forward_sums(const float* const* x, int64_t nc, int64_t cstride, const int64_t* tap,
                  int64_t taps, const float* w, float* sums) {
  __m256 acc[kBlockK][NV];
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[k][j] = _mm256_loadu_ps(sums + (k * NV + j) * kLanes);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t i = 0; i < taps; ++i, w += kBlockK) {
      const int64_t off = c * cstride + tap[i];
      __m256 in[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        in[j] = _mm256_loadu_ps(x[j] + off);
        FRUGAL_IN_REGISTER(in[j]);
      }
#pragma GCC unroll 8
      for (int k = 0; k < kBlockK; ++k) {
        const __m256 wk = _mm256_broadcast_ss(w + k);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[k][j] = _mm256_fmadd_ps(wk, in[j], acc[k][j]);
      }
    }
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) _mm256_storeu_ps(sums + (k * NV + j) * kLanes, acc[k][j]);
}

// The forward block: vectors v[0, nv) (nv <= NV) by the output channels of block kb, over
// the nc input channels of the tile t (nc, rows, Wp), whose filters `packed` holds. first: the sums
// start at 0, else at the partial sums in out; last: the bias (if any) is added before the store. A
// block of fewer than NV vectors repeats its first vector in the missing columns and does not store
// them.
template <int NV>
void block(const Conv& cv, const float* t, int64_t rows, const Vec* v, int64_t nv, int64_t p0,
           int64_t kb, int64_t nc, const float* packed, const int64_t* tap, const float* b,
           bool first, bool last, float* out) {
  const int64_t Wp = cv.Wp(), RS = cv.R * cv.S, PQ = cv.P * cv.Q;
  const int64_t K = std::min(kBlockK, cv.K - kb * kBlockK);
  auto out_at = [&](int64_t k, int64_t j) {
    return out + (kb * kBlockK + k) * PQ + v[j].p * cv.Q + v[j].q;
  };
  alignas(32) float sums[kBlockK * NV * kLanes];
  for (int64_t k = 0; k < kBlockK; ++k)
    for (int64_t j = 0; j < NV; ++j)
      _mm256_store_ps(sums + (k * NV + j) * kLanes, first || k >= K || j >= nv
                                                        ? _mm256_setzero_ps()
                                                        : load(out_at(k, j), v[j].lanes));
  const float* x[NV];
  for (int64_t j = 0; j < NV; ++j) {
    const Vec& u = v[j < nv ? j : 0];
    x[j] = t + (u.p - p0) * Wp + u.q;
  }
  forward_sums<NV>(x, nc, rows * Wp, tap, RS, packed + kb * nc * RS * kBlockK, sums);
  for (int64_t k = 0; k < K; ++k) {
    const __m256 bias = _mm256_set1_ps(last && b ? b[kb * kBlockK + k] : 0.0f);
    for (int64_t j = 0; j < nv; ++j) {
      const __m256 sum = _mm256_load_ps(sums + (k * NV + j) * kLanes);
      store(out_at(k, j), v[j].lanes, last && b ? _mm256_add_ps(sum, bias) : sum);
    }
  }
}

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

#undef FRUGAL_IN_REGISTER

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

// Runs the forward kernel of cv over in, with filters weight(o, i, r, s) for output channel o
// and input channel i. Each thread has a tile and a buffer of packed filters in scratch.
template <typename F>
void run(const Conv& cv, int threads, const float* in, const F& weight, const float* b, float* out,
         float* scratch) {
  const Tiling tl = tiling(cv, threads);
  const int64_t units = cv.N * tl.tiles, CHW = cv.C * cv.H * cv.W, KPQ = cv.K * cv.P * cv.Q;
  std::vector<int64_t> tap;  // offset of tap (r, s) in a tile
  for (int64_t r = 0; r < cv.R; ++r)
    for (int64_t s = 0; s < cv.S; ++s) tap.push_back(r * cv.Wp() + s);
  for_parts(parts(units, threads), units, [&](int part, int64_t u0, int64_t u1) {
    float* t = scratch + part * (tl.floats + cv.packed());
    float* packed = t + tl.floats;
    for (int64_t c0 = 0; c0 < cv.C; c0 += cv.chunk()) {
      const int64_t c1 = std::min(cv.C, c0 + cv.chunk());
      const bool first = c0 == 0, last = c1 == cv.C;
      pack(cv, c0, c1, weight, packed);
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t n = u / tl.tiles, p0 = u % tl.tiles * tl.rows;
        const int64_t p1 = std::min(cv.P, p0 + tl.rows), rows = p1 - p0 + cv.R - 1;
        pad_rows(cv, in + n * CHW, c0, c1, p0, rows, t);
        const std::vector<Vec> vs = vectors(p0, p1, cv.Q);
        const int64_t nv = static_cast<int64_t>(vs.size());
        // Columns of the block: 3, unless that leaves over 1/16 of the last block's columns
        // idle and 2 divides them evenly.
        const int64_t idle = (3 - nv % 3) % 3;
        const int64_t NV = idle * 16 > nv && nv % 2 == 0 ? 2 : 3;
        float* o = out + n * KPQ;
        for (int64_t kb = 0; kb < cv.blocks(); ++kb)
          for (int64_t j = 0; j < nv; j += NV) {
            const int64_t n_j = std::min(NV, nv - j);
            if (NV == 2)
              block<2>(cv, t, rows, vs.data() + j, n_j, p0, kb, c1 - c0, packed, tap.data(), b,
                       first, last, o);
            else
              block<3>(cv, t, rows, vs.data() + j, n_j, p0, kb, c1 - c0, packed, tap.data(), b,
                       first, last, o);
          }
      }
    }
  });
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

constexpr bool kBuilt = false;

template <typename F>
void run(const Conv&, int, const float*, const F&, const float*, float*, float*) {
  FRUGAL_CHECK(false, "direct conv2d: built for a CPU without AVX and FMA");
}
void filter(const Conv2dGeometry&, int, const float*, const float*, float*, float*) {
  FRUGAL_CHECK(false, "direct conv2d: built for a CPU without AVX and FMA");
}

#endif

}  // namespace

bool applies(const Conv2dGeometry& g, DType t) {
  return kBuilt && t == DType::f32 && stride_one(g);
}

size_t forward_scratch(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(forward_floats(forward_conv(g), threads)) * sizeof(float);
}
size_t data_scratch(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(forward_floats(data_conv(g), threads)) * sizeof(float);
}
size_t filter_scratch_bytes(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(filter_floats(g, threads)) * sizeof(float);
}

bool filter_applies(const Conv2dGeometry& g) {
  return g.Q % kLanes == 0 && g.K * g.P * g.Q * int64_t{sizeof(float)} <= int64_t{1} << 20;
}

void forward(const Conv2dGeometry& g, int threads, const float* x, const float* w, const float* b,
             float* y, float* scratch) {
  const int64_t C = g.C, R = g.R, S = g.S;
  auto weight = [&](int64_t k, int64_t c, int64_t r, int64_t s) {
    return w[((k * C + c) * R + r) * S + s];
  };
  run(forward_conv(g), threads, x, weight, b, y, scratch);
}

void backward_data(const Conv2dGeometry& g, int threads, const float* dy, const float* w, float* dx,
                   float* scratch) {
  const int64_t C = g.C, R = g.R, S = g.S;
  auto weight = [&](int64_t c, int64_t k, int64_t r, int64_t s) {  // flipped and transposed
    return w[((k * C + c) * R + R - 1 - r) * S + S - 1 - s];
  };
  run(data_conv(g), threads, dy, weight, nullptr, dx, scratch);
}

void backward_filter(const Conv2dGeometry& g, int threads, const float* x, const float* dy,
                     float* dw, float* scratch) {
  FRUGAL_CHECK(filter_applies(g), "direct conv2d filter gradient: output rows of ", g.Q,
               " are not whole vectors of ", kLanes);
  filter(g, threads, x, dy, dw, scratch);
}

}  // namespace frugal::direct_conv
