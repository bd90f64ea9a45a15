// Depthwise convolution kernels of the CPU backend (see conv2d_depthwise.h). Past 400 lines:
// the three passes share the phase planes, their padding and the vector helpers here; split
// apart they would each need all of them.
#include "core/cpu/conv2d_depthwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cpu/parts.h"
#include "core/cpu/stream_out.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace frugal::depthwise_conv {

namespace {

// ceil(a / d) for d > 0, and 0 where a <= 0.
int64_t ceil_pos(int64_t a, int64_t d) {
  return a <= 0 ? 0 : (a + d - 1) / d;
}

// Vectors of the machine's width (see block_taps).
#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
template <typename T>
struct Vec;
template <>
struct Vec<float> {
  typedef float type __attribute__((vector_size(kVecBytes)));
};
template <>
struct Vec<double> {
  typedef double type __attribute__((vector_size(kVecBytes)));
};
template <typename T>
using V = typename Vec<T>::type;
template <typename T>
constexpr int64_t kLanes = kVecBytes / sizeof(T);
template <typename T>
constexpr int64_t kBlock = 2 * kLanes<T>;

// By reference: a vector passed by value can change the ABI between builds (GCC's -Wpsabi).
template <typename T>
inline void load(V<T>& v, const T* p) {
  std::memcpy(&v, p, sizeof v);
}
template <typename T>
inline void store(T* p, const V<T>& v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
inline T madd(T a, T b, T c) {
#ifdef __FMA__
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// acc + a * b for vectors, fused where the CPU fuses, as madd: said outright, not left to the
// compiler's contraction, which GCC skipped for one multiply-add of column_sums's one-column
// pass on AVX2 (a vmulps and a vaddps in the loop: filter gradients of 5x5 layers, f32 and f64,
// a rounding off the tap-by-tap sums here and there). Every blocked loop below adds its taps
// through it, and every scalar loop through madd.
template <typename T>
inline V<T> vmadd(const V<T>& a, const V<T>& b, const V<T>& acc) {
#ifdef __FMA__
  if constexpr (kVecBytes == 64 && sizeof(T) == 4) return _mm512_fmadd_ps(a, b, acc);
  if constexpr (kVecBytes == 64 && sizeof(T) == 8) return _mm512_fmadd_pd(a, b, acc);
  if constexpr (kVecBytes == 32 && sizeof(T) == 4) return _mm256_fmadd_ps(a, b, acc);
  if constexpr (kVecBytes == 32 && sizeof(T) == 8) return _mm256_fmadd_pd(a, b, acc);
  if constexpr (kVecBytes == 16 && sizeof(T) == 4) return _mm_fmadd_ps(a, b, acc);
  if constexpr (kVecBytes == 16 && sizeof(T) == 8) return _mm_fmadd_pd(a, b, acc);
#endif
  return acc + a * b;
}

// n elements from `from` to `to`, B bytes at a time, the last B overlapping the ones before:
// inline, where std::copy calls memmove, whose call costs more than copying a 14-wide row.
// Rows of at least a machine vector go a vector at a time (a 28-wide f32 row in 2 pairs of
// AVX-512 loads and stores, not 7 of 16 bytes), shorter ones 16 bytes at a time, rows of fewer
// than 16 bytes element by element.
template <int B, typename T>
inline void copy_chunks(const T* from, int64_t n, T* to) {
  constexpr int64_t L = B / sizeof(T);
  typedef T Chunk __attribute__((vector_size(B)));
  Chunk c;
  for (int64_t i = 0; i + L < n; i += L) {
    std::memcpy(&c, from + i, sizeof c);
    std::memcpy(to + i, &c, sizeof c);
  }
  std::memcpy(&c, from + n - L, sizeof c);
  std::memcpy(to + n - L, &c, sizeof c);
}
template <typename T>
inline void copy_row(const T* from, int64_t n, T* to) {
  const auto bytes = n * static_cast<int64_t>(sizeof(T));
  if (bytes >= kVecBytes) return copy_chunks<kVecBytes>(from, n, to);
  if (bytes >= 16) return copy_chunks<16>(from, n, to);
  for (int64_t i = 0; i < n; ++i) to[i] = from[i];
}

// Asks for the `count` elements at p to be brought into the caches ahead of their use: the
// next plane's, while this one is computed.
template <typename T>
inline void prefetch(const T* p, int64_t count) {
  const char* bytes = reinterpret_cast<const char*>(p);
  const int64_t n = count * static_cast<int64_t>(sizeof(T));
  for (int64_t b = 0; b < n; b += 64) __builtin_prefetch(bytes + b, 0, 2);
}

// n elements rounded up to whole 64-byte lines (16 elements: 64 bytes of f32, 128 of f64): each
// part of a thread's scratch starts on a line, so its vectors at whole-vector offsets never
// straddle two (the filter gradient's loads of dy a row of taps at a time, the wide outputs'
// stores). On AVX2 a 16-byte offset there had half of them split, the 5x5 filter gradient 10-15%
// slower.
int64_t whole_lines(int64_t n) {
  return (n + 15) / 16 * 16;
}

// The wide form, at any stride. The padded input plane (Hp x Wp) is split into stride_h x
// stride_w phase planes, each Hs x Ws: padded element (i, j) lies in phase
// (i % stride_h, j % stride_w) at (i / stride_h, j / stride_w), so at stride 1 there is one
// phase, the padded plane itself. Output (p, q)'s tap (r, s) reads padded element
// (p*stride_h + r*dilation_h, q*stride_w + s*dilation_w): in one phase, at (p, q) shifted by a
// fixed offset. Outputs are computed over rows Ws wide (the columns past Q dropped; the data
// gradient's are zeros), so a tap is one shift of a whole phase plane: one long vectorized loop
// instead of a short, strided one per row. The columns past Q read into the next row (or, on
// the last row, up to `slack` elements past the last phase): values that are dropped.
struct Wide {
  int64_t Hs, Ws, plane, phases;  // a phase plane's rows, columns, elements; how many phases
  int64_t padded, wide;  // elements of the phase planes and slack (whole lines); of the wide
                         // output plane
  int64_t each;          // elements of a thread's forward scratch: both, whole lines each
};
Wide wide_of(const Conv2dGeometry& g) {
  const int64_t Hp = g.H + g.pad_h + g.pad_h_end, Wp = g.W + g.pad_w + g.pad_w_end;
  const int64_t Hs = ceil_pos(Hp, g.stride_h), Ws = ceil_pos(Wp, g.stride_w);
  const int64_t phases = g.stride_h * g.stride_w, slack = (g.S - 1) * g.dilation_w / g.stride_w;
  const int64_t padded = whole_lines(phases * Hs * Ws + slack);
  return {Hs, Ws, Hs * Ws, phases, padded, g.P * Ws, padded + whole_lines(g.P * Ws)};
}
// Tap (r, s)'s phase, and its shift inside the phase plane.
int64_t tap_phase(const Conv2dGeometry& g, int64_t r, int64_t s) {
  return (r * g.dilation_h % g.stride_h) * g.stride_w + s * g.dilation_w % g.stride_w;
}
int64_t tap_shift(const Conv2dGeometry& g, const Wide& v, int64_t r, int64_t s) {
  return r * g.dilation_h / g.stride_h * v.Ws + s * g.dilation_w / g.stride_w;
}
int64_t tap_offset(const Conv2dGeometry& g, const Wide& v, int64_t r, int64_t s) {
  return tap_phase(g, r, s) * v.plane + tap_shift(g, v, r, s);
}

// A row's even and odd elements apart (split_row), or back together (join_row): two vectors
// at a time through shuffles, the rest one by one. n elements in the row, ceil(n/2) even ones.
template <typename T, size_t... I>
inline void unzip(const V<T>& a, const V<T>& b, V<T>& even, V<T>& odd, std::index_sequence<I...>) {
  even = __builtin_shufflevector(a, b, (2 * I)...);
  odd = __builtin_shufflevector(a, b, (2 * I + 1)...);
}
template <typename T, size_t... I>
inline void zip(const V<T>& even, const V<T>& odd, V<T>& lo, V<T>& hi, std::index_sequence<I...>) {
  constexpr size_t L = sizeof...(I);
  lo = __builtin_shufflevector(even, odd, (I % 2 * L + I / 2)...);
  hi = __builtin_shufflevector(even, odd, (I % 2 * L + L / 2 + I / 2)...);
}
template <typename T>
void split_row(const T* row, int64_t n, T* even, T* odd) {
  constexpr int64_t L = kLanes<T>;
  int64_t i = 0;
  for (; 2 * (i + L) <= n; i += L) {
    V<T> a, b, e, o;
    load(a, row + 2 * i);
    load(b, row + 2 * i + L);
    unzip<T>(a, b, e, o, std::make_index_sequence<L>());
    store(even + i, e);
    store(odd + i, o);
  }
  for (; 2 * i < n; ++i) {
    even[i] = row[2 * i];
    if (2 * i + 1 < n) odd[i] = row[2 * i + 1];
  }
}
template <typename T>
void join_row(const T* even, const T* odd, int64_t n, T* row) {
  constexpr int64_t L = kLanes<T>;
  int64_t i = 0;
  for (; 2 * (i + L) <= n; i += L) {
    V<T> e, o, lo, hi;
    load(e, even + i);
    load(o, odd + i);
    zip<T>(e, o, lo, hi, std::make_index_sequence<L>());
    store(row + 2 * i, lo);
    store(row + 2 * i + L, hi);
  }
  for (; 2 * i < n; ++i) {
    row[2 * i] = even[i];
    if (2 * i + 1 < n) row[2 * i + 1] = odd[i];
  }
}

// A plane (H,W) and the padded interior of the phase planes at `phases`: copied into the
// phases (kInto) or back out of them. Row h is padded row i = h + pad_h, of phase row
// (i % stride_h, i / stride_h), kept as a running pair (a division per row costs as much as
// copying a 14-wide row). Column w is padded column j = w + pad_w, of phase column
// (j % stride_w, j / stride_w): at stride 2 the even columns go to one phase and the odd ones
// to the other, split by shuffles. Out of the phases, the rows may go to `out` (past the
// caches) in place of x.
template <bool kInto, typename T>
void move_plane(const Conv2dGeometry& g, const Wide& v, std::conditional_t<kInto, const T*, T*> x,
                T* phases, StreamOut<T>* out = nullptr) {
  const int64_t sw = g.stride_w;
  auto rows = [&](const auto& move) {  // move(row h, phase (., 0)'s padded row)
    int64_t a = g.pad_h % g.stride_h, i = g.pad_h / g.stride_h;
    for (int64_t h = 0; h < g.H; ++h) {
      T* at = phases + a * sw * v.plane + i * v.Ws;
      if constexpr (kInto) {
        move(x + h * g.W, at);
      } else {
        move(out ? out->reserve(g.W) : x + h * g.W, at);
        if (out) out->commit(g.W);
      }
      if (++a == g.stride_h) a = 0, ++i;
    }
  };
  if (sw == 1) {  // one phase, from column pad_w
    rows([&](auto row, T* at) {
      if constexpr (kInto)
        copy_row(row, g.W, at + g.pad_w);
      else
        copy_row(at + g.pad_w, g.W, row);
    });
  } else if (sw == 2) {
    // The even columns w in phase pad_w % 2 from column pad_w / 2, the odd ones in the other
    // from column (pad_w + 1) / 2.
    const int64_t even = g.pad_w % 2 * v.plane + g.pad_w / 2;
    const int64_t odd = (g.pad_w + 1) % 2 * v.plane + (g.pad_w + 1) / 2;
    rows([&](auto row, T* at) {
      if constexpr (kInto)
        split_row(row, g.W, at + even, at + odd);
      else
        join_row(at + even, at + odd, g.W, row);
    });
  } else {
    rows([&](auto row, T* at) {
      for (int64_t b = 0; b < sw; ++b) {  // padded columns j*stride_w + b, of phase (., b)
        const int64_t lo = ceil_pos(g.pad_w - b, sw), hi = ceil_pos(g.pad_w + g.W - b, sw);
        for (int64_t j = lo; j < hi; ++j)
          if constexpr (kInto)
            at[b * v.plane + j] = row[j * sw + b - g.pad_w];
          else
            row[j * sw + b - g.pad_w] = at[b * v.plane + j];
      }
    });
  }
}

// x (H,W) into xp's phase planes. The zeros around it are set once per pass and thread: every
// plane of a pass writes the same elements.
template <typename T>
void pad_plane(const Conv2dGeometry& g, const Wide& v, const T* x, T* xp) {
  move_plane<true, T>(g, v, x, xp);
}
// dy (P,Q) into rows Ws wide; the zeros past Q, as pad_plane's, are set once.
template <typename T>
void widen_plane(const Conv2dGeometry& g, const Wide& v, const T* dy, T* dyw) {
  for (int64_t p = 0; p < g.P; ++p) copy_row(dy + p * g.Q, g.Q, dyw + p * v.Ws);
}

// Two vectors of outputs at a time, their sums held in registers over every tap
// (in (r, s) order): one store per output instead of one load and one store per tap. Each tap
// is added as the tap-by-tap loops add it, one fused multiply-add where the CPU has them and a
// multiply and an add where it has none (vmadd), so the blocked loops give those loops' bits in
// every build. GCC's vector extensions, not the auto-vectorizer: left to itself it vectorized
// across the taps with gathers and kept the sums on the stack. The scalar tail says the same
// with madd. The vectors are the machine's width: wider generic vectors are lowered badly
// (64-byte ones made the haswell build's forward about nine times slower than the loop they
// replace).
// out[0, kBlock) = init[0, kBlock) + each tap's weight wk[t] times `in` shifted by offset[t].
template <typename T>
inline void block_taps(std::span<const int64_t> offset, const T* wk, const T* in, const T* init,
                       T* out) {
  V<T> a0, a1, x0, x1;
  load(a0, init);
  load(a1, init + kLanes<T>);
  for (size_t t = 0; t < offset.size(); ++t) {
    const V<T> w = V<T>{} + wk[t];
    const T* x = in + offset[t];
    load(x0, x);
    load(x1, x + kLanes<T>);
    a0 = vmadd<T>(w, x0, a0);
    a1 = vmadd<T>(w, x1, a1);
  }
  store(out, a0);
  store(out + kLanes<T>, a1);
}

// Makes the compiler hold a vector in a register once loaded: left to itself it folds the
// load into each multiply-add that reads it, loading the same vector twice.
template <typename T>
inline void keep_in_register(V<T>& x) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+v"(x));
#else
  (void)x;
#endif
}

// pair_taps four vectors wide, for AVX2, whose 16 registers hold neither a 5x5 filter's weights
// nor both rows' inputs beside their sums: each output's sum is a chain of R*C dependent
// multiply-adds, and two vectors a row kept 4 chains in flight, half of what the FMA units take
// (2 a cycle, 4 cycles each), so a plane in L1 waited on the chains. Here 8: each tap's weight
// is broadcast into a register once per row and each multiply-add reads its vector of x from
// memory (the loads cost less than the wait), 10 registers in all. A plane of EfficientNet's
// 28x28 5x5 layer in L1 takes 0.73-0.79 us forward against 0.90-0.93, one of MobileNet's 56x56
// 3x3 layers 1.45-1.54 us against 1.79-1.84 (one row at a time before). Each output adds its
// taps in (r, c) order as pair_taps does: the same bits.
template <int R, int C, typename T>
inline void pair_taps_wide(const V<T> (&wv)[R * C], const int64_t (&col)[C], int64_t step,
                           const T* rows, const T* init1, const T* init2, T* out1, T* out2) {
  constexpr int64_t L = kLanes<T>;
  V<T> a0, a1, a2, a3, b0, b1, b2, b3;
  load(a0, init1), load(a1, init1 + L), load(a2, init1 + 2 * L), load(a3, init1 + 3 * L);
  load(b0, init2), load(b1, init2 + L), load(b2, init2 + 2 * L), load(b3, init2 + 3 * L);
  auto x = [](const T* p) {
    V<T> v;
    load(v, p);
    return v;
  };
#pragma GCC unroll 64
  for (int j = 0; j <= R; ++j) {
    const T* row = rows + j * step;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      const T* p = row + col[c];
      if (j < R) {
        V<T> w = wv[j * C + c];
        keep_in_register<T>(w);
        a0 = vmadd<T>(w, x(p), a0), a1 = vmadd<T>(w, x(p + L), a1);
        a2 = vmadd<T>(w, x(p + 2 * L), a2), a3 = vmadd<T>(w, x(p + 3 * L), a3);
      }
      if (j > 0) {
        V<T> w = wv[(j - 1) * C + c];
        keep_in_register<T>(w);
        b0 = vmadd<T>(w, x(p), b0), b1 = vmadd<T>(w, x(p + L), b1);
        b2 = vmadd<T>(w, x(p + 2 * L), b2), b3 = vmadd<T>(w, x(p + 3 * L), b3);
      }
    }
  }
  store(out1, a0), store(out1 + L, a1), store(out1 + 2 * L, a2), store(out1 + 3 * L, a3);
  store(out2, b0), store(out2 + L, b1), store(out2 + 2 * L, b2), store(out2 + 3 * L, b3);
}

// Two rows of outputs at once where a pass runs at stride 1 down the rows without dilation
// there (R x C taps, both known at compile time: 3x3 and 5x5): the outputs at out1 and at out2,
// two vectors each, whose rows' taps read the same input rows one row apart. Input row j
// (`rows` + j*step, its taps' columns at `col`) serves out1's taps (j, .) and out2's (j - 1, .),
// each vector of it loaded once for both: (R + 1) * C loads of two vectors for 2 * R * C taps
// instead of 2 * R * C, and the weights, broadcast once per plane (`wv`), stay in registers where
// the machine has enough. Each output still adds its taps in (r, c) order, through vmadd as
// block_taps adds them: the same bits. NV vectors a row: 2, or 4 (pair_taps_wide).
template <int R, int C, int NV, typename T>
inline void pair_taps(const V<T> (&wv)[R * C], const int64_t (&col)[C], int64_t step, const T* rows,
                      const T* init1, const T* init2, T* out1, T* out2) {
  if constexpr (NV == 4) return pair_taps_wide<R, C>(wv, col, step, rows, init1, init2, out1, out2);
  constexpr int64_t L = kLanes<T>;
  V<T> a0, a1, b0, b1;
  load(a0, init1);
  load(a1, init1 + L);
  load(b0, init2);
  load(b1, init2 + L);
#pragma GCC unroll 64
  for (int j = 0; j <= R; ++j) {
    const T* row = rows + j * step;
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) {
      V<T> x0, x1;
      load(x0, row + col[c]);
      load(x1, row + col[c] + L);
      keep_in_register<T>(x0);
      keep_in_register<T>(x1);
      if (j < R) {
        a0 = vmadd<T>(wv[j * C + c], x0, a0);
        a1 = vmadd<T>(wv[j * C + c], x1, a1);
      }
      if (j > 0) {
        b0 = vmadd<T>(wv[(j - 1) * C + c], x0, b0);
        b1 = vmadd<T>(wv[(j - 1) * C + c], x1, b1);
      }
    }
  }
  store(out1, a0);
  store(out1 + L, a1);
  store(out2, b0);
  store(out2 + L, b1);
}

// Whether row pairs go four vectors wide (pair_taps_wide): on AVX2, where a row is that wide.
template <typename T>
bool wide_pairs(int64_t Ws) {
  return kVecBytes == 32 && Ws >= 4 * kLanes<T>;
}

// The row pairs of [begin, end), whole rows Ws wide: pair.template operator()<NV>(i) computes
// the blocks of NV vectors at i and at i + Ws, for blocks covering the first row of each pair
// (the last may run into the next row: those outputs are computed again later, from the start).
// Returns where the rows left over begin. Used only where recomputing an output gives what
// computing it once gives (the forward, and the data gradient with one filter per channel).
template <typename T, typename F>
int64_t over_row_pairs(int64_t begin, int64_t end, int64_t Ws, const F& pair) {
  auto rows = [&]<int NV>() {
    constexpr int64_t B = NV * kLanes<T>;
    const int64_t covered = (Ws + B - 1) / B * B;
    int64_t i = begin;
    for (; i + Ws + covered <= end; i += 2 * Ws)
      for (int64_t j = i; j < i + Ws; j += B) pair.template operator()<NV>(j);
    return i;
  };
  return wide_pairs<T>(Ws) ? rows.template operator()<4>() : rows.template operator()<2>();
}

// The taps' weights broadcast into vectors, and the columns of row 0's taps.
template <int R, int C, typename T>
struct PairTaps {
  V<T> wv[R * C];
  int64_t col[C];
  PairTaps(const T* wk, const int64_t* cols) {
    for (int t = 0; t < R * C; ++t) wv[t] = V<T>{} + wk[t];
    for (int c = 0; c < C; ++c) col[c] = cols[c];
  }
};

// Every tap's offset in the padded plane, in (r, s) order: the same for every plane of a pass.
std::vector<int64_t> tap_offsets(const Conv2dGeometry& g, const Wide& v) {
  std::vector<int64_t> offset;
  for (int64_t r = 0; r < g.R; ++r)
    for (int64_t s = 0; s < g.S; ++s) offset.push_back(tap_offset(g, v, r, s));
  return offset;
}

// Whether rows go in pairs (pair_taps): a square filter of `taps` (3 or 5) rows and columns,
// stride 1 and no dilation down the rows, and rows at least a block wide (narrower ones would
// compute each output more than once). 3x3 on AVX2 only four vectors wide: two vectors wide
// the pairs were 5-10% slower than one row at a time (bench_conv, 2026-11-27).
template <typename T>
bool pairs_apply(const Conv2dGeometry& g, const Wide& v, int64_t taps) {
  return g.R == taps && g.S == taps && g.stride_h == 1 && g.dilation_h == 1 && v.Ws >= kBlock<T> &&
         (taps == 5 || kVecBytes == 64 || wide_pairs<T>(v.Ws));
}

// Whether a pass writes its output past the caches (StreamOut): outputs of `elements` larger
// than the caches can hold for the next layer, in rows of `row` elements that fit the stage.
template <typename T>
bool streams(int64_t elements, int64_t row) {
  return elements * static_cast<int64_t>(sizeof(T)) >= stream_from() &&
         row <= StreamOut<T>::kRowMax;
}

template <typename T>
void forward_wide(const Conv2dGeometry& g, const Wide& v, std::span<const int64_t> offset,
                  const T* x, const T* wk, T bias, T* y, T* xp, T* wide, StreamOut<T>* out) {
  pad_plane(g, v, x, xp);
  constexpr int64_t B = kBlock<T>;
  T biases[2 * B];  // four vectors: pair_taps_wide starts from them
  std::fill(biases, biases + 2 * B, bias);
  int64_t i = 0;
  // Not inlined (here or in the data gradient): inlined into the pass, GCC spilled the 5x5
  // pairs' sums on AVX-512, which took the data gradient from 7 to 13 ms on one thread.
  auto pairs = [&]<int R, int C>() __attribute__((noinline)) {
    const PairTaps<R, C, T> k(wk, offset.data());
    i = over_row_pairs<T>(0, v.wide, v.Ws, [&]<int NV>(int64_t j) {
      pair_taps<R, C, NV>(k.wv, k.col, v.Ws, xp + j, biases, biases, wide + j, wide + j + v.Ws);
    });
  };
  if (pairs_apply<T>(g, v, 3)) pairs.template operator()<3, 3>();
  if (pairs_apply<T>(g, v, 5)) pairs.template operator()<5, 5>();
  for (; i + B <= v.wide; i += B) block_taps(offset, wk, xp + i, biases, wide + i);
  for (; i < v.wide; ++i) {
    T acc = bias;
    for (size_t t = 0; t < offset.size(); ++t) acc = madd(wk[t], xp[offset[t] + i], acc);
    wide[i] = acc;
  }
  for (int64_t p = 0; p < g.P; ++p) {
    copy_row(wide + p * v.Ws, g.Q, out ? out->reserve(g.Q) : y + p * g.Q);
    if (out) out->commit(g.Q);
  }
}

// The data gradient gathers. dx's padded element (i, j) sums, over the channel's filters in
// order and each filter's taps in (r, s) order, the tap's weight times the dy element that read
// it, if one did: in phase (i % stride_h, j % stride_w) only that phase's taps reach it, each
// from dy at (i / stride_h, j / stride_w) less the tap's shift. So each phase plane of dx is a
// stride-1 gather over dy widened to rows Ws wide, with its phase's taps. dy sits in `dyz`
// behind `margin` zeros (the largest shift) and above zero rows, so every tap of every dx
// element reads inside it; a term whose dy lies outside the plane is a zero added, as the
// zeros past Q always were. Only dx's rows are computed, two vectors at a time with their sums
// in registers (block_taps), into `out` (the phase planes), then copied out: each element gets
// the terms the tap-by-tap scatter gave it, in its order, and zeros.
struct Gather {
  int64_t margin, zplane;      // zeros before dy's rows; the elements of zeros, dy and zeros
                               // (both whole lines: dy's first row and dx's first phase plane
                               // start on one)
  std::vector<int64_t> tap;    // the taps phase by phase, (r, s) order within each
  std::vector<int64_t> back;   // where each reads dyz, less the dx element's index
  std::vector<int64_t> begin;  // phase f's are [begin[f], begin[f + 1])
};
int64_t margin_of(const Conv2dGeometry& g, const Wide& v) {
  return whole_lines(tap_shift(g, v, g.R - 1, g.S - 1));
}
int64_t zplane_of(const Conv2dGeometry& g, const Wide& v) {
  return whole_lines(margin_of(g, v) + v.plane);
}
Gather gather_of(const Conv2dGeometry& g, const Wide& v) {
  Gather z{margin_of(g, v), zplane_of(g, v), {}, {}, {0}};
  for (int64_t f = 0; f < v.phases; ++f) {
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s)
        if (tap_phase(g, r, s) == f) {
          z.tap.push_back(r * g.S + s);
          z.back.push_back(z.margin - tap_shift(g, v, r, s));
        }
    z.begin.push_back(static_cast<int64_t>(z.tap.size()));
  }
  return z;
}
// Elements of a thread's backward scratch: the filter gradient's padded and wide planes, or the
// data gradient's dyz, dx's phase planes and a phase's weights, whichever is more.
int64_t backward_each(const Conv2dGeometry& g, const Wide& v) {
  return std::max(v.each, whole_lines(zplane_of(g, v) + v.plane * v.phases + g.R * g.S));
}

template <typename T>
void data_wide(const Conv2dGeometry& g, const Wide& v, const Gather& z, const T* dy, const T* w,
               int64_t k0, int64_t k1, T* dx, T* dyz, T* out, T* wf, StreamOut<T>* to) {
  constexpr int64_t B = kBlock<T>;
  static constexpr T zeros[2 * B] = {};  // four vectors, as the forward's biases
  for (int64_t k = k0; k < k1; ++k) {
    widen_plane(g, v, dy + k * g.P * g.Q, dyz + z.margin);
    for (int64_t f = 0; f < v.phases; ++f) {
      const int64_t a = f / g.stride_w, u0 = z.begin[f], count = z.begin[f + 1] - u0;
      for (int64_t u = 0; u < count; ++u) wf[u] = w[k * g.R * g.S + z.tap[u0 + u]];
      const std::span<const int64_t> back(z.back.data() + u0, count);
      T* o = out + f * v.plane;
      int64_t i = ceil_pos(g.pad_h - a, g.stride_h) * v.Ws;
      const int64_t end = ceil_pos(g.pad_h + g.H - a, g.stride_h) * v.Ws;
      // Row pairs: dx's row below reads dy one row further down, so out1 is the lower row
      // (its taps' first row of dy is the pair's last) and the rows step up.
      auto pairs = [&]<int R, int C>() __attribute__((noinline)) {
        const PairTaps<R, C, T> t(wf, back.data());
        i = over_row_pairs<T>(i, end, v.Ws, [&]<int NV>(int64_t j) {
          pair_taps<R, C, NV>(t.wv, t.col, -v.Ws, dyz + j + v.Ws, zeros, zeros, o + j + v.Ws,
                              o + j);
        });
      };
      if (g.stride_w == 1 && k1 - k0 == 1) {  // one phase; each dx element computed from zero
        if (pairs_apply<T>(g, v, 3)) pairs.template operator()<3, 3>();
        if (pairs_apply<T>(g, v, 5)) pairs.template operator()<5, 5>();
      }
      for (; i + B <= end; i += B) block_taps(back, wf, dyz + i, k == k0 ? zeros : o + i, o + i);
      for (; i < end; ++i) {
        T acc = k == k0 ? T(0) : o[i];
        for (int64_t u = 0; u < count; ++u) acc = madd(wf[u], dyz[back[u] + i], acc);
        o[i] = acc;
      }
    }
  }
  move_plane<false, T>(g, v, dx, out, to);
}

// The filter gradient's sums: 32 lanes of the flat index per tap.
constexpr int64_t kSum = 32;

// kCount taps' sums over the whole blocks [0, full) of the widened dy and the taps' shifted
// planes `in`, added into `sums`, held in registers: kCount is a constant, so the compiler keeps
// every accumulator in a register (with a count known only at run time it kept them on the
// stack, a load and a store per multiply-add). Each vector of dy is loaded once for the group
// and each of x once (held, not folded into a multiply-add): kCount * (vectors per tap's sums)
// accumulators, one dy and one x vector in registers.
template <int kCount, typename T>
void group_sums(const T* dyw, const T* const* in, int64_t full, T* const* sums) {
  constexpr int64_t NV = kSum / kLanes<T>;  // vectors per tap's sums
  V<T> acc[kCount][NV];
  for (int u = 0; u < kCount; ++u)
    for (int64_t e = 0; e < NV; ++e) load(acc[u][e], sums[u] + e * kLanes<T>);
  for (int64_t i = 0; i < full; i += kSum)
#pragma GCC unroll 8
    for (int64_t e = 0; e < NV; ++e) {
      V<T> d;
      load(d, dyw + i + e * kLanes<T>);
#pragma GCC unroll 16
      for (int u = 0; u < kCount; ++u) {
        V<T> xv;
        load(xv, in[u] + i + e * kLanes<T>);
        acc[u][e] = vmadd<T>(d, xv, acc[u][e]);
      }
    }
  for (int u = 0; u < kCount; ++u)
    for (int64_t e = 0; e < NV; ++e) store(sums[u] + e * kLanes<T>, acc[u][e]);
}
// One tap's products past the whole blocks, [full, wide), into its lanes, as the blocks add
// theirs.
template <typename T>
inline void tail_sums(const T* dyw, const T* in, int64_t full, int64_t wide, T* sums) {
  for (int64_t l = 0; full + l < wide; ++l) sums[l] = madd(dyw[full + l], in[full + l], sums[l]);
}
// f.template operator()<N>() for the N of 1 to kMax equal to n: a count known at run time
// made a constant, so the kernel it picks keeps its sums in registers.
template <int kMax, typename F>
void with_count(int64_t n, const F& f) {
  if constexpr (kMax >= 1) {
    if (n == kMax) return f.template operator()<kMax>();
    with_count<kMax - 1>(n, f);
  }
}

// A vector of x shifted by s elements: lanes s.. of cur, then nxt's first. On AVX-512 f32
// one valignd, which leaves its sources alone: GCC lowers the generic shuffle to vpermt2ps,
// which overwrites its index operand, plus a register copy before each (Zen 4: the filter
// gradient's row loop ran 8 copies per 10 multiply-adds).
template <int s, typename T, size_t... I>
inline V<T> shifted(const V<T>& cur, const V<T>& nxt, std::index_sequence<I...>) {
#if defined(__AVX512F__)
  if constexpr (sizeof(T) == 4 && s > 0) {
    return (V<T>)_mm512_alignr_epi32((__m512i)nxt, (__m512i)cur, s);  // vector casts: same bits
  }
#endif
  return __builtin_shufflevector(cur, nxt, (s + I)...);
}
// Where row_sums is used: 5x5 filters in f32 on AVX-512, whose 32 registers hold a row's
// sums (3x3 rows were slower than groups of taps).
template <typename T>
constexpr bool kRowSums = kVecBytes == 64 && sizeof(T) == 4;
// A row's S taps (columns next to each other: stride 1, no dilation across) at once on AVX-512:
// tap s reads x at `row` + s, so each block loads x's vectors once and shifts them across
// lanes for the other taps (one load and S - 1 shuffles instead of S loads), each lane of each
// tap adding d * x in the order of the flat index as group_sums does: the same bits. Reads up to
// a vector past the last tap's elements (the thread's scratch goes on: the wide dy plane).
template <int S, typename T>
void row_sums(const T* dyw, const T* row, int64_t full, T* sums) {
  constexpr int64_t L = kLanes<T>, NV = kSum / L;
  V<T> acc[S][NV];
  for (int s = 0; s < S; ++s)
    for (int64_t e = 0; e < NV; ++e) load(acc[s][e], sums + s * kSum + e * L);
  for (int64_t i = 0; i < full; i += kSum) {
    V<T> cur;
    load(cur, row + i);
#pragma GCC unroll 8
    for (int64_t e = 0; e < NV; ++e) {
      V<T> d, nxt;
      load(d, dyw + i + e * L);
      load(nxt, row + i + (e + 1) * L);
      [&]<size_t... s>(std::index_sequence<s...>) {
        ((acc[s][e] =
              vmadd<T>(d, shifted<s, T>(cur, nxt, std::make_index_sequence<L>()), acc[s][e])),
         ...);
      }
      (std::make_index_sequence<S>());
      cur = nxt;
    }
  }
  for (int s = 0; s < S; ++s)
    for (int64_t e = 0; e < NV; ++e) store(sums + s * kSum + e * L, acc[s][e]);
}

// Columns of taps at once (column_sums), where rows of the wide planes are whole vectors long
// (Ws a multiple of the lanes), on AVX2 and AVX-512: tap (r, c) pairs dy at p with x at
// p + r*Ws + c, so one vector of x at m + c serves every row's tap, each with the dy vector at
// m - r*Ws, which starts on the same lane of a vector of sums (r*Ws is whole vectors). The sums'
// vectors go one at a time (em, the vector of 32 lanes that x's position m falls in), so a tap
// has one accumulator in registers: R*NC of them, NC vectors of x and one of dy. Each lane of
// each tap still adds its products in the order of the flat index, as group_sums does: the same
// bits. x is loaded once for R taps and dy's loads are aligned with the plane, where group_sums
// loads x once per tap (half of those loads crossing a cache line) and dy once per group.
constexpr int kRegisters = kVecBytes == 64 ? 32 : 16;
template <int R>
constexpr int kColumns = (kRegisters - 1) / (R + 1);  // 2 of 5 rows on AVX2, 5 on AVX-512

// Whether column_sums applies: a filter of 3 or 5 rows whose taps' sums fit one pass's
// (taps_max), stride 1 and no dilation, rows whole vectors, planes taller than the filter.
template <typename T>
bool columns_apply(const Conv2dGeometry& g, const Wide& v, int64_t full, int64_t taps_max) {
  return kVecBytes >= 32 && (g.R == 3 || g.R == 5) && g.R * g.S <= taps_max && g.stride_h == 1 &&
         g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 && v.Ws % kLanes<T> == 0 &&
         full > (g.R - 1) * v.Ws;
}

// Taps (r, c), r < R and c < NC, whose x starts at `x` + r*Ws + c: sums[r*NC + c] gains their
// products over the whole blocks [0, full) of the widened dy. m runs over x's positions; row
// r's tap reads dy at m - r*Ws where that lies in [0, full). NE of the sums' vectors go at once
// (x's vectors at m + e*L): a column alone (NC = 1) would keep only R chains of multiply-adds in
// flight, fewer than the FMA units take, and two vectors of sums double them (there only the
// first and last rows' steps check which taps reach dy, the rest run without a branch; with one
// vector the branches cost nothing measurable and the split slowed short planes; the extra
// column below needs it all the same). Not inlined:
// inside filter_wide GCC kept one of AVX2's 10 sums on the stack, a store and a load in its chain
// of multiply-adds at every step (the EfficientNet layer's filter gradient 40% slower).
// Rows [XA, XB) may also take the taps of one more column, whose x starts at `xe` + r*Ws
// (sums[R*NC + r - XA]), with one vector of sums at a time: their vector of x is read by each
// multiply-add from memory, so they need registers only for their sums (see
// all_column_sums); their steps are split as two vectors' are (with all of AVX2's 16 registers
// taken, GCC kept sums on the stack in steps that check every row).
template <int R, int NC, int NE, int XA = 0, int XB = 0, typename T>
__attribute__((noinline)) void column_sums(const T* dyw, const T* x, int64_t Ws, int64_t full,
                                           T* const* sums, const T* xe = nullptr) {
  constexpr int64_t L = kLanes<T>, NV = kSum / L;
  constexpr int NX = XB - XA;
  static_assert(NV % NE == 0 && 0 <= XA && XA <= XB && XB <= R && (NX == 0 || NE == 1));
  const int64_t rowv = Ws / L, end = full + (R - 1) * Ws;
  for (int64_t em = 0; em < NV; em += NE) {
    V<T> acc[R][NC][NE];
    V<T> extra[NX > 0 ? NX : 1];  // taps (XA + i, extra column)
    int64_t at[R][NE];  // row r's vector of sums for em + e: the one its dy vectors fall in
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int e = 0; e < NE; ++e) {
        at[r][e] = ((em + e - r * rowv) % NV + NV) % NV * L;
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) load(acc[r][c][e], sums[r * NC + c] + at[r][e]);
        if (XA <= r && r < XB) load(extra[r - XA], sums[R * NC + r - XA] + at[r][0]);
      }
    // The products of x's vectors at m + e*L + c: where `checked`, those of the taps that reach
    // dy, x read only up to where one-vector steps read it (m + e*L < end).
    const auto step = [&]<bool checked>(int64_t m) __attribute__((always_inline)) {
      V<T> xv[NE][NC] = {};  // zeros never read (a checked step reads only what it loaded):
                             // said for GCC, which warned of their use on AVX2
#pragma GCC unroll 8
      for (int e = 0; e < NE; ++e)
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c)
          if (!checked || m + e * L < end) load(xv[e][c], x + m + e * L + c);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int e = 0; e < NE; ++e) {
          const int64_t p = m + e * L - r * Ws;
          if (checked && (p < 0 || p >= full)) continue;
          V<T> d;
          load(d, dyw + p);
          keep_in_register<T>(d);
#pragma GCC unroll 8
          for (int c = 0; c < NC; ++c) acc[r][c][e] = vmadd<T>(d, xv[e][c], acc[r][c][e]);
          if (XA <= r && r < XB) {  // NE is 1 here: e is 0, at[r][0] this row's vector
            // Loaded afresh by each row (GCC would hold it in a register, taking one from x's
            // columns, which it would then reload for every row).
            const T* xr = xe + m;
#if defined(__GNUC__)
            asm volatile("" : "+r"(xr));
#endif
            V<T> xv1;
            load(xv1, xr);
            extra[r - XA] = vmadd<T>(d, xv1, extra[r - XA]);
          }
        }
    };
    // Every tap reaches dy from m = (R-1)*Ws (row R-1's first) while m + (NE-1)*L < full.
    const int64_t open = (R - 1) * Ws, close = full - (NE - 1) * L;
    int64_t m = em * L;
    if constexpr (NE > 1 || NX > 0) {
      for (; m < end && m < open; m += kSum) step.template operator()<true>(m);
      for (; m < close; m += kSum) step.template operator()<false>(m);
    }
    for (; m < end; m += kSum) step.template operator()<true>(m);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int e = 0; e < NE; ++e)
#pragma GCC unroll 8
        for (int c = 0; c < NC; ++c) store(sums[r * NC + c] + at[r][e], acc[r][c][e]);
#pragma GCC unroll 8
    for (int r = XA; r < XB; ++r) store(sums[R * NC + r - XA] + at[r][0], extra[r - XA]);
  }
}
// Every tap of an R-row filter S wide by column_sums, kColumns<R> columns at a time (a last
// column alone two vectors of sums at a time, where their registers fit); lanes[t] holds tap t's
// sums, taps in (r, s) order. A 5x5 filter on AVX2 goes in two passes, not three: columns 0-1
// with column 4's rows 0-2, then columns 2-3 with its rows 3-4 (13 and 12 sums, two vectors of
// x and one of dy: the 16 registers). Column 4 alone, two vectors of sums at a time, loaded 6
// vectors for 5 multiply-adds; now each pass loads 10 for 13 and 9 for 12, and the plane is
// swept twice (docs/BENCHMARKS.md, "the AVX2 5x5 filter gradient in two sweeps": EfficientNet's
// 28x28 layer 0.82-0.92 of the three sweeps' time on 2 threads). Its smaller planes (14x14, 7x7)
// have rows of 18 and 11, not whole vectors in f32, and do not come here.
template <int R, typename T>
void all_column_sums(int64_t S, const T* dyw, const T* xp, int64_t Ws, int64_t full,
                     T (*lanes)[kSum]) {
  constexpr int64_t kMax = kColumns<R>;
  if constexpr (R == 5 && kMax == 2) {
    if (S == 5) {
      T* first[13];   // taps (r, 0), (r, 1) for each r, then (0, 4), (1, 4), (2, 4)
      T* second[12];  // taps (r, 2), (r, 3), then (3, 4), (4, 4)
      for (int64_t r = 0; r < 5; ++r)
        for (int64_t c = 0; c < 2; ++c) {
          first[r * 2 + c] = lanes[r * 5 + c];
          second[r * 2 + c] = lanes[r * 5 + 2 + c];
        }
      for (int64_t r = 0; r < 5; ++r)
        (r < 3 ? first[10 + r] : second[10 + r - 3]) = lanes[r * 5 + 4];
      column_sums<5, 2, 1, 0, 3>(dyw, xp, Ws, full, first, xp + 4);
      column_sums<5, 2, 1, 3, 5>(dyw, xp + 2, Ws, full, second, xp + 4);
      return;
    }
  }
  constexpr bool kPairAlone = 2 * R + 3 <= kRegisters && kSum / kLanes<T> % 2 == 0;
  for (int64_t s0 = 0; s0 < S; s0 += kMax) {
    const int64_t nc = std::min(kMax, S - s0);
    T* sums[R * kMax];
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < nc; ++c) sums[r * nc + c] = lanes[r * S + s0 + c];
    if (kPairAlone && nc == 1 && kMax > 1) {
      column_sums<R, 1, kPairAlone ? 2 : 1>(dyw, xp + s0, Ws, full, sums);
      continue;
    }
    with_count<kMax>(nc, [&]<int NC>() { column_sums<R, NC, 1>(dyw, xp + s0, Ws, full, sums); });
  }
}

// Taps per group: 4 on AVX-512 (8 were no faster); on AVX2 as many as leave a register for dy
// and one for x beside their sums (3 in f32, 1 in f64: a group of 4 spilled and was slower than
// one tap at a time). SSE goes one tap at a time with the compiler's own vectors, and so does
// AVX2 on planes of fewer blocks than kGroupFrom: loading and storing a group's sums for each
// plane cost more than the group saved (MobileNetV2's 14x14 layer, 7 blocks: 14% slower).
template <typename T>
constexpr int64_t kGroup = kVecBytes == 64 ? 4 : std::max<int64_t>(1, 14 / (kSum / kLanes<T>));
constexpr int64_t kGroupFrom = 16;

// dw of filter k in the wide form: each tap's dot product of the widened dy with the shifted
// padded x, over samples in order, in 32 lanes of the flat index; then the lanes in order. The
// taps go kGroup at a time over the plane, each block of dy read once for the group and every
// tap's 32 sums in registers, or a row of 5 at once (row_sums), or columns at once
// (column_sums); each lane still adds its products in the order of the flat index, as one tap at
// a time adds them.
template <typename T>
void filter_wide(const Conv2dGeometry& g, const Wide& v, const T* x, const T* dy, int64_t k, T* dwk,
                 T* xp, T* dyw) {
  constexpr int64_t kTaps = 49;
  const int64_t c = k / (g.K / g.C), taps = g.R * g.S;
  const int64_t full = v.wide / kSum * kSum;
  // Rows of taps at once (row_sums) where they fit AVX-512's registers.
  const bool rows_apply = kRowSums<T> && g.S == 5 && g.stride_w == 1 && g.dilation_w == 1 &&
                          g.stride_h == 1 && taps <= kTaps;
  const bool columns = columns_apply<T>(g, v, full, kTaps);
  for (int64_t t0 = 0; t0 < taps; t0 += kTaps) {
    const int64_t t1 = std::min(taps, t0 + kTaps);
    alignas(64) T lanes[kTaps][kSum] = {};
    for (int64_t n = 0; n < g.N; ++n) {
      if (n + 1 < g.N) {
        prefetch(x + ((n + 1) * g.C + c) * g.H * g.W, g.H * g.W);
        prefetch(dy + ((n + 1) * g.K + k) * g.P * g.Q, g.P * g.Q);
      }
      pad_plane(g, v, x + (n * g.C + c) * g.H * g.W, xp);
      widen_plane(g, v, dy + (n * g.K + k) * g.P * g.Q, dyw);
      if (rows_apply) {
        for (int64_t r = 0; r < g.R; ++r) {
          const T* row = xp + tap_offset(g, v, r, 0);
          T* sums = lanes[r * g.S];
          if constexpr (kRowSums<T>) row_sums<5>(dyw, row, full, sums);
          for (int64_t s = 0; s < g.S; ++s) tail_sums(dyw, row + s, full, v.wide, sums + s * kSum);
        }
        continue;
      }
      if (columns) {
        if (g.R == 3) all_column_sums<3>(g.S, dyw, xp, v.Ws, full, lanes);
        if (g.R == 5) all_column_sums<5>(g.S, dyw, xp, v.Ws, full, lanes);
        for (int64_t t = 0; t < taps; ++t)
          tail_sums(dyw, xp + tap_offset(g, v, t / g.S, t % g.S), full, v.wide, lanes[t]);
        continue;
      }
      if (kVecBytes == 16 || (kVecBytes == 32 && full < kGroupFrom * kSum)) {
        for (int64_t t = t0; t < t1; ++t) {
          T* acc = lanes[t - t0];
          const T* in = xp + tap_offset(g, v, t / g.S, t % g.S);
          int64_t i = 0;
          for (; i + kSum <= v.wide; i += kSum)
            for (int64_t l = 0; l < kSum; ++l) acc[l] = madd(dyw[i + l], in[i + l], acc[l]);
          for (int64_t l = 0; i + l < v.wide; ++l) acc[l] = madd(dyw[i + l], in[i + l], acc[l]);
        }
        continue;
      }
      for (int64_t u0 = t0; u0 < t1; u0 += kGroup<T>) {
        const int64_t count = std::min(t1 - u0, kGroup<T>);
        const T* in[kGroup<T>];
        T* sums[kGroup<T>];
        for (int64_t u = 0; u < count; ++u) {
          in[u] = xp + tap_offset(g, v, (u0 + u) / g.S, (u0 + u) % g.S);
          sums[u] = lanes[u0 + u - t0];
        }
        with_count<kGroup<T>>(count, [&]<int N>() { group_sums<N>(dyw, in, full, sums); });
        for (int64_t u = 0; u < count; ++u) tail_sums(dyw, in[u], full, v.wide, sums[u]);
      }
    }
    for (int64_t t = t0; t < t1; ++t) {
      T total = 0;
      for (int64_t l = 0; l < kSum; ++l) total += lanes[t - t0][l];
      dwk[t] = total;
    }
  }
}

template <typename T>
void forward_t(const Conv2dGeometry& g, int threads, const T* x, const T* w, const T* b, T* y,
               T* scratch) {
  const int64_t m = g.K / g.C, planes = g.N * g.K;
  const Wide v = wide_of(g);
  const std::vector<int64_t> offset = tap_offsets(g, v);
  const bool stream = streams<T>(planes * g.P * g.Q, g.Q);
  for_parts(parts(planes, threads), planes, [&](int part, int64_t u0, int64_t u1) {
    T* xp = scratch + part * v.each;
    std::fill(xp, xp + v.padded, T(0));
    StreamOut<T> out(y + u0 * g.P * g.Q);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / g.K, k = u % g.K;
      if (u + 1 < u1)
        prefetch(x + ((u + 1) / g.K * g.C + (u + 1) % g.K / m) * g.H * g.W, g.H * g.W);
      forward_wide(g, v, offset, x + (n * g.C + k / m) * g.H * g.W, w + k * g.R * g.S,
                   b ? b[k] : T(0), y + u * g.P * g.Q, xp, xp + v.padded, stream ? &out : nullptr);
    }
    if (stream) out.finish();
  });
}

template <typename T>
void backward_data_t(const Conv2dGeometry& g, int threads, const T* dy, const T* w, T* dx,
                     T* scratch) {
  const int64_t m = g.K / g.C, planes = g.N * g.C;
  const Wide v = wide_of(g);
  const Gather z = gather_of(g, v);
  const bool stream = streams<T>(planes * g.H * g.W, g.W);
  for_parts(parts(planes, threads), planes, [&](int part, int64_t u0, int64_t u1) {
    T* dyz = scratch + part * backward_each(g, v);
    T* out = dyz + z.zplane;
    std::fill(dyz, dyz + z.zplane, T(0));
    StreamOut<T> to(dx + u0 * g.H * g.W);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / g.C, c = u % g.C;
      if (u + 1 < u1)
        prefetch(dy + ((u + 1) / g.C * g.K + (u + 1) % g.C * m) * g.P * g.Q, m * g.P * g.Q);
      data_wide(g, v, z, dy + n * g.K * g.P * g.Q, w, c * m, (c + 1) * m, dx + u * g.H * g.W, dyz,
                out, out + v.phases * v.plane, stream ? &to : nullptr);
    }
    if (stream) to.finish();
  });
}

template <typename T>
void backward_filter_t(const Conv2dGeometry& g, int threads, const T* x, const T* dy, T* dw,
                       T* scratch) {
  const Wide v = wide_of(g);
  for_parts(parts(g.K, threads), g.K, [&](int part, int64_t k0, int64_t k1) {
    T* xp = scratch + part * backward_each(g, v);
    std::fill(xp, xp + v.padded + v.wide, T(0));
    for (int64_t k = k0; k < k1; ++k)
      filter_wide(g, v, x, dy, k, dw + k * g.R * g.S, xp, xp + v.padded);
  });
}

template <typename T>
const T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}
template <typename T>
T* scratch_of(const Tensor& scratch) {
  return scratch.defined() ? static_cast<T*>(scratch.raw()) : nullptr;
}

}  // namespace

bool applies(const Conv2dGeometry& g) {
  return g.groups > 1 && g.groups == g.C;
}

size_t scratch_bytes(const Conv2dGeometry& g, DType t, int threads) {
  const Wide v = wide_of(g);
  return static_cast<size_t>(threads * v.each) * dtype_size(t);
}

size_t backward_scratch_bytes(const Conv2dGeometry& g, DType t, int threads) {
  return static_cast<size_t>(threads * backward_each(g, wide_of(g))) * dtype_size(t);
}

void forward(const Conv2dGeometry& g, int threads, const Tensor& x, const Tensor& w,
             const Tensor& b, Tensor& y, Tensor& scratch) {
  if (x.dtype() == DType::f32)
    forward_t(g, threads, x.data<float>(), w.data<float>(), optional<float>(b), y.data<float>(),
              scratch_of<float>(scratch));
  else
    forward_t(g, threads, x.data<double>(), w.data<double>(), optional<double>(b), y.data<double>(),
              scratch_of<double>(scratch));
}

void backward_data(const Conv2dGeometry& g, int threads, const Tensor& dy, const Tensor& w,
                   Tensor& dx, Tensor& scratch) {
  if (dy.dtype() == DType::f32)
    backward_data_t(g, threads, dy.data<float>(), w.data<float>(), dx.data<float>(),
                    scratch_of<float>(scratch));
  else
    backward_data_t(g, threads, dy.data<double>(), w.data<double>(), dx.data<double>(),
                    scratch_of<double>(scratch));
}

void backward_filter(const Conv2dGeometry& g, int threads, const Tensor& x, const Tensor& dy,
                     Tensor& dw, Tensor& scratch) {
  if (x.dtype() == DType::f32)
    backward_filter_t(g, threads, x.data<float>(), dy.data<float>(), dw.data<float>(),
                      scratch_of<float>(scratch));
  else
    backward_filter_t(g, threads, x.data<double>(), dy.data<double>(), dw.data<double>(),
                      scratch_of<double>(scratch));
}

}  // namespace frugal::depthwise_conv
