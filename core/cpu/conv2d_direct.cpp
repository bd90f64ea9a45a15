// Direct f32 convolution for stride-1 layers: the forward pass and the data gradient, one kernel
// (see conv2d_direct.h; the pieces shared with the filter gradient are in conv2d_direct_tile.h).
//
// Forward, for one sample and a tile of output rows [p0, p1): the input rows the tile reads are
// copied, zero-padded, into a buffer of (C, rows + R - 1, Wp) with Wp = W + 2 pad_w. An output
// "vector" is 16 neighbouring outputs of one row with AVX-512, else 8 (the last of a row may hold
// fewer; rows shorter than a vector are covered by vectors over the rows laid out Wp apart,
// lanes past Q idle), and output (p, q) reads buffer row p - p0 + r at column q + s, so for
// every tap (c, r, s) a vector's inputs are neighbouring floats at a fixed offset from its own
// start. The register block
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
#include "core/cpu/conv2d_direct.h"

#include <algorithm>
#include <vector>

#include "core/cpu/conv2d_direct_tile.h"
#include "core/cpu/parts.h"
#include "core/error.h"

namespace frugal::direct_conv {

namespace {

bool stride_one(const Conv2dGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && (g.R > 1 || g.S > 1) && g.pad_h < g.R &&
         g.pad_w < g.S;
}

// The data gradient: dy (N, K, P, Q) padded by (R-1-pad_h, S-1-pad_w) gives dx (N, C, H, W).
Conv data_conv(const Conv2dGeometry& g) {
  return {g.N, g.K, g.P, g.Q, g.C, g.R, g.S, g.R - 1 - g.pad_h, g.S - 1 - g.pad_w, g.H, g.W};
}

constexpr int64_t kTileBudget = int64_t{3} << 18;  // bytes of padded input per thread

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

// The forward kernel's output vectors: 16 floats with AVX-512 (twice the work per load and
// broadcast of the 8-wide form, in as many registers), else 8. Every lane is one output's own
// chain of multiply-adds, so the width changes no bits.
#if defined(__AVX512F__)
using VReg = __m512;
constexpr int64_t kW = 16;
inline VReg vloadu(const float* p) {
  return _mm512_loadu_ps(p);
}
inline void vstoreu(float* p, VReg v) {
  _mm512_storeu_ps(p, v);
}
inline VReg vbroadcast(const float* p) {
  return _mm512_set1_ps(*p);
}
inline VReg vfmadd(VReg a, VReg b, VReg c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline VReg vadd(VReg a, VReg b) {
  return _mm512_add_ps(a, b);
}
inline VReg vset1(float v) {
  return _mm512_set1_ps(v);
}
inline __mmask16 first_lanes(int64_t lanes) {
  return static_cast<__mmask16>((1u << lanes) - 1);
}
inline VReg vload_n(const float* p, int64_t lanes) {
  return lanes == kW ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(first_lanes(lanes), p);
}
inline void vstore_n(float* p, int64_t lanes, VReg v) {
  if (lanes == kW)
    _mm512_storeu_ps(p, v);
  else
    _mm512_mask_storeu_ps(p, first_lanes(lanes), v);
}
#define FRUGAL_IN_VREG(v) asm("" : "+v"(v))
#else
using VReg = __m256;
constexpr int64_t kW = kLanes;
inline VReg vloadu(const float* p) {
  return _mm256_loadu_ps(p);
}
inline void vstoreu(float* p, VReg v) {
  _mm256_storeu_ps(p, v);
}
inline VReg vbroadcast(const float* p) {
  return _mm256_broadcast_ss(p);
}
inline VReg vfmadd(VReg a, VReg b, VReg c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline VReg vadd(VReg a, VReg b) {
  return _mm256_add_ps(a, b);
}
inline VReg vset1(float v) {
  return _mm256_set1_ps(v);
}
inline VReg vload_n(const float* p, int64_t lanes) {
  return load(p, lanes);
}
inline void vstore_n(float* p, int64_t lanes, VReg v) {
  store(p, lanes, v);
}
#define FRUGAL_IN_VREG(v) FRUGAL_IN_REGISTER(v)
#endif
// A tile's slack (kSlack floats) covers a kW-wide read from a row's last output.
static_assert(kSlack >= kW - 1, "direct conv2d: the tile slack is shorter than a vector");

// An output vector: kW lanes over the tile's output rows laid out Wp apart, from flat position
// f (row p0 + f / Wp, column f % Wp); a lane whose column is Q or more is no output. `row`: its
// `lanes` outputs lie in one row, loaded and stored as one vector; otherwise the vector spans
// rows (short rows: ResNet's 7x7 layers fill 14 of 16 lanes this way instead of 7).
struct OutVec {
  int64_t f, lanes;
  bool row;
  int64_t at[kW];  // each lane's output in an output plane (p * Q + q), or -1
};
std::vector<OutVec> wide_vectors(int64_t p0, int64_t p1, int64_t Q, int64_t Wp) {
  std::vector<OutVec> v;
  auto add = [&](int64_t f, int64_t lanes, bool row) {
    OutVec u{f, lanes, row, {}};
    for (int64_t l = 0; l < kW; ++l) {
      const int64_t pos = f + l, c = pos % Wp;
      u.at[l] = l < lanes && c < Q ? (p0 + pos / Wp) * Q + c : -1;
    }
    v.push_back(u);
  };
  for (int64_t p = p0; p < p1; ++p)
    for (int64_t q = 0; q < Q; q += kW) add((p - p0) * Wp + q, std::min(kW, Q - q), true);
  const int64_t end = (p1 - p0 - 1) * Wp + Q;  // past the last output
  if ((end + kW - 1) / kW >= static_cast<int64_t>(v.size())) return v;
  v.clear();
  for (int64_t f = 0; f < end; f += kW) {
    const int64_t lanes = std::min(kW, end - f);
    add(f, lanes, f % Wp + lanes <= Q);
  }
  return v;
}

// The forward register block: sums (kBlockK, NV, kW) += w[c][i][k] * x_j[c * cstride + tap[i]]
// over channels c in [0, nc) and taps i in [0, taps), with w packed as [c][i][kBlockK]. The
// sums start from, and end in, `sums`, so the loop itself keeps them all in registers.
template <int NV>
void forward_sums(const float* const* x, int64_t nc, int64_t cstride, const int64_t* tap,
                  int64_t taps, const float* w, float* sums) {
  VReg acc[kBlockK][NV];
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[k][j] = vloadu(sums + (k * NV + j) * kW);
  for (int64_t c = 0; c < nc; ++c)
    for (int64_t i = 0; i < taps; ++i, w += kBlockK) {
      const int64_t off = c * cstride + tap[i];
      VReg in[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) {
        in[j] = vloadu(x[j] + off);
        FRUGAL_IN_VREG(in[j]);
      }
#pragma GCC unroll 8
      for (int k = 0; k < kBlockK; ++k) {
        const VReg wk = vbroadcast(w + k);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[k][j] = vfmadd(wk, in[j], acc[k][j]);
      }
    }
#pragma GCC unroll 8
  for (int k = 0; k < kBlockK; ++k)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) vstoreu(sums + (k * NV + j) * kW, acc[k][j]);
}

// The forward block: vectors v[0, nv) (nv <= NV) by the output channels of block kb, over
// the nc input channels of the tile t (nc, rows, Wp), whose filters `packed` holds. first: the sums
// start at 0, else at the partial sums in out; last: the bias (if any) is added before the store. A
// block of fewer than NV vectors repeats its first vector in the missing columns and does not store
// them. A vector that spans rows moves its outputs lane by lane (once a block, beside the
// block's nc * R * S multiply-adds per lane).
template <int NV>
void block(const Conv& cv, const float* t, int64_t rows, const OutVec* v, int64_t nv, int64_t kb,
           int64_t nc, const float* packed, const int64_t* tap, const float* b, bool first,
           bool last, float* out) {
  const int64_t Wp = cv.Wp(), RS = cv.R * cv.S, PQ = cv.P * cv.Q;
  const int64_t K = std::min(kBlockK, cv.K - kb * kBlockK);
  auto plane = [&](int64_t k) { return out + (kb * kBlockK + k) * PQ; };
  // Where lane l of vector j writes in an output plane, or -1 (past Q, or past the vector).
  auto at = [&](int64_t j, int64_t l) { return v[j].at[l]; };
  alignas(64) float sums[kBlockK * NV * kW];
  for (int64_t k = 0; k < kBlockK; ++k)
    for (int64_t j = 0; j < NV; ++j) {
      float* s = sums + (k * NV + j) * kW;
      if (first || k >= K || j >= nv) {
        vstoreu(s, vset1(0.0f));
      } else if (v[j].row) {
        vstoreu(s, vload_n(plane(k) + at(j, 0), v[j].lanes));
      } else {
        for (int64_t l = 0; l < kW; ++l) s[l] = at(j, l) >= 0 ? plane(k)[at(j, l)] : 0.0f;
      }
    }
  const float* x[NV];
  for (int64_t j = 0; j < NV; ++j) x[j] = t + v[j < nv ? j : 0].f;
  forward_sums<NV>(x, nc, rows * Wp, tap, RS, packed + kb * nc * RS * kBlockK, sums);
  for (int64_t k = 0; k < K; ++k) {
    const float bk = last && b ? b[kb * kBlockK + k] : 0.0f;
    const VReg bias = vset1(bk);
    for (int64_t j = 0; j < nv; ++j) {
      const float* s = sums + (k * NV + j) * kW;
      if (v[j].row) {
        const VReg sum = vloadu(s);
        vstore_n(plane(k) + at(j, 0), v[j].lanes, last && b ? vadd(sum, bias) : sum);
      } else {
        for (int64_t l = 0; l < kW; ++l)
          if (at(j, l) >= 0) plane(k)[at(j, l)] = last && b ? s[l] + bk : s[l];
      }
    }
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
        const std::vector<OutVec> vs = wide_vectors(p0, p1, cv.Q, cv.Wp());
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
              block<2>(cv, t, rows, vs.data() + j, n_j, kb, c1 - c0, packed, tap.data(), b, first,
                       last, o);
            else
              block<3>(cv, t, rows, vs.data() + j, n_j, kb, c1 - c0, packed, tap.data(), b, first,
                       last, o);
          }
      }
    }
  });
}

#else

template <typename F>
void run(const Conv&, int, const float*, const F&, const float*, float*, float*) {
  FRUGAL_CHECK(false, "direct conv2d: built for a CPU without AVX and FMA");
}

#endif

}  // namespace

bool applies(const Conv2dGeometry& g, DType t) {
  return kBuilt && t == DType::f32 && conv_is_plain(g) && stride_one(g);
}

size_t forward_scratch(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(forward_floats(forward_conv(g), threads)) * sizeof(float);
}
size_t data_scratch(const Conv2dGeometry& g, int threads) {
  return static_cast<size_t>(forward_floats(data_conv(g), threads)) * sizeof(float);
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

}  // namespace frugal::direct_conv
