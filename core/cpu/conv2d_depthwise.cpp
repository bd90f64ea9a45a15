// Depthwise convolution kernels of the CPU backend (see conv2d_depthwise.h). Past 400 lines:
// three passes in two forms each (row by row at any stride, wide planes at stride 1) share the
// span, padding and vector helpers here; split apart they would each need all of them.
#include "core/cpu/conv2d_depthwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "core/cpu/conv_span.h"
#include "core/cpu/parts.h"

namespace frugal::depthwise_conv {

namespace {

// Rows of a tap: output row p reads input row p*stride_h - pad_h + r*dilation_h.
Span rows_of(const Conv2dGeometry& g, int64_t r) {
  return inside(g.H, g.P, r * g.dilation_h, g.stride_h, g.pad_h, 0, g.P);
}
Span columns_of(const Conv2dGeometry& g, int64_t s) {
  return inside(g.W, g.Q, s * g.dilation_w, g.stride_w, g.pad_w, 0, g.Q);
}

// y (P,Q) plane k of one sample from its input plane x (H,W) and filter wk (R,S): the bias,
// then each tap in (r, s) order added along whole rows; each tap's rows and columns are found
// once per plane (the integer divisions would otherwise cost more than a short row's adds).
template <typename T>
void forward_plane(const Conv2dGeometry& g, const T* x, const T* wk, T bias, T* y) {
  std::fill(y, y + g.P * g.Q, bias);
  for (int64_t r = 0; r < g.R; ++r) {
    const Span ps = rows_of(g, r);
    for (int64_t s = 0; s < g.S; ++s) {
      const Span qs = columns_of(g, s);
      const T wv = wk[r * g.S + s];
      for (int64_t p = ps.lo; p < ps.hi; ++p) {
        const T* in =
            x + (p * g.stride_h - g.pad_h + r * g.dilation_h) * g.W + s * g.dilation_w - g.pad_w;
        T* yr = y + p * g.Q;
        if (g.stride_w == 1)
          for (int64_t q = qs.lo; q < qs.hi; ++q) yr[q] += wv * in[q];
        else
          for (int64_t q = qs.lo; q < qs.hi; ++q) yr[q] += wv * in[q * g.stride_w];
      }
    }
  }
}

// dx (H,W) plane c of one sample: the transpose of forward, over the filters of channel c in
// order, each tap's weight times a dy row added into the input row it read.
template <typename T>
void data_plane(const Conv2dGeometry& g, const T* dy, const T* w, int64_t k0, int64_t k1, T* dx) {
  std::fill(dx, dx + g.H * g.W, T(0));
  for (int64_t k = k0; k < k1; ++k) {
    const T* dyk = dy + k * g.P * g.Q;
    for (int64_t r = 0; r < g.R; ++r) {
      const Span ps = rows_of(g, r);
      for (int64_t s = 0; s < g.S; ++s) {
        const Span qs = columns_of(g, s);
        const T wv = w[(k * g.R + r) * g.S + s];
        for (int64_t p = ps.lo; p < ps.hi; ++p) {
          T* out =
              dx + (p * g.stride_h - g.pad_h + r * g.dilation_h) * g.W + s * g.dilation_w - g.pad_w;
          const T* dyr = dyk + p * g.Q;
          if (g.stride_w == 1)
            for (int64_t q = qs.lo; q < qs.hi; ++q) out[q] += wv * dyr[q];
          else
            for (int64_t q = qs.lo; q < qs.hi; ++q) out[q * g.stride_w] += wv * dyr[q];
        }
      }
    }
  }
}

// dw of filter k: for each tap, the sum over samples, rows and columns (in that order) of dy
// times the input it read, in eight lanes so the products vectorize; then the lanes in order.
// Taps go kTaps at a time, each with its lanes, so a sample's planes are read once per batch
// of taps rather than once per tap.
template <typename T>
void filter_of(const Conv2dGeometry& g, const T* x, const T* dy, int64_t k, T* dwk) {
  constexpr int64_t kLanes = 8, kTaps = 49;
  const int64_t c = k / (g.K / g.C), taps = g.R * g.S;
  for (int64_t t0 = 0; t0 < taps; t0 += kTaps) {
    const int64_t t1 = std::min(taps, t0 + kTaps);
    T lanes[kTaps][kLanes] = {};
    Span ps[kTaps], qs[kTaps];
    int64_t offset[kTaps];  // of the input a tap reads at output (0, 0)
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / g.S, s = t % g.S;
      ps[t - t0] = rows_of(g, r), qs[t - t0] = columns_of(g, s);
      offset[t - t0] = (r * g.dilation_h - g.pad_h) * g.W + s * g.dilation_w - g.pad_w;
    }
    for (int64_t n = 0; n < g.N; ++n) {
      const T* xp = x + (n * g.C + c) * g.H * g.W;
      const T* dyp = dy + (n * g.K + k) * g.P * g.Q;
      for (int64_t t = t0; t < t1; ++t) {
        T* acc = lanes[t - t0];
        const Span cols = qs[t - t0];
        for (int64_t p = ps[t - t0].lo; p < ps[t - t0].hi; ++p) {
          const T* dyr = dyp + p * g.Q;
          const T* in = xp + p * g.stride_h * g.W + offset[t - t0];
          int64_t q = cols.lo;
          for (; q + kLanes <= cols.hi; q += kLanes)
            for (int64_t l = 0; l < kLanes; ++l) acc[l] += dyr[q + l] * in[(q + l) * g.stride_w];
          for (int64_t l = 0; q + l < cols.hi; ++l) acc[l] += dyr[q + l] * in[(q + l) * g.stride_w];
        }
      }
    }
    for (int64_t t = t0; t < t1; ++t) {
      T total = 0;
      for (int64_t l = 0; l < kLanes; ++l) total += lanes[t - t0][l];
      dwk[t] = total;
    }
  }
}

// Stride 1 takes the wide form: the input plane copied into a zero-padded one (Hp x Wp, and
// slack for the last row's reads), outputs computed over rows Wp wide whose columns past Q are
// dropped (the data gradient's are zeros). A tap is then one shift of the whole plane: one
// long vectorized loop instead of a short one per row (MobileNet's 7x7 to 14x14 planes).
struct Wide {
  int64_t Wp, padded, wide;  // padded row width; elements of the padded plane, of the wide one
};
Wide wide_of(const Conv2dGeometry& g) {
  const int64_t Hp = g.H + g.pad_h + g.pad_h_end, Wp = g.W + g.pad_w + g.pad_w_end;
  return {Wp, Hp * Wp + (g.S - 1) * g.dilation_w, g.P * Wp};
}
bool wide_applies(const Conv2dGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1;
}
int64_t tap_offset(const Conv2dGeometry& g, const Wide& v, int64_t r, int64_t s) {
  return r * g.dilation_h * v.Wp + s * g.dilation_w;
}

// x (H,W) into xp, padded: zeros around it.
template <typename T>
void pad_plane(const Conv2dGeometry& g, const Wide& v, const T* x, T* xp) {
  std::fill(xp, xp + v.padded, T(0));
  for (int64_t h = 0; h < g.H; ++h)
    std::copy(x + h * g.W, x + (h + 1) * g.W, xp + (h + g.pad_h) * v.Wp + g.pad_w);
}
// dy (P,Q) into rows Wp wide, zeros past Q.
template <typename T>
void widen_plane(const Conv2dGeometry& g, const Wide& v, const T* dy, T* dyw) {
  for (int64_t p = 0; p < g.P; ++p) {
    std::copy(dy + p * g.Q, dy + (p + 1) * g.Q, dyw + p * v.Wp);
    std::fill(dyw + p * v.Wp + g.Q, dyw + (p + 1) * v.Wp, T(0));
  }
}

// Two vectors of outputs at a time, their sums held in registers over every tap
// (in (r, s) order): one store per output instead of one load and one store per tap. Each tap
// is added as the tap-by-tap loops add it, `acc + w * x` in one expression, which the compiler
// contracts into a fused multiply-add where the CPU has them and cannot where it has none, so
// the blocked loops give those loops' bits in every build. GCC's vector extensions, not the
// auto-vectorizer: left to itself it vectorized across the taps with gathers and kept the sums
// on the stack. The scalar tail says the same with std::fma where the CPU fuses. The vectors
// are the machine's width: wider generic vectors are lowered badly (64-byte ones made the
// haswell build's forward about nine times slower than the loop they replace).
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
    a0 = a0 + w * x0;
    a1 = a1 + w * x1;
  }
  store(out, a0);
  store(out + kLanes<T>, a1);
}

// Every tap's offset in the padded plane, in (r, s) order: the same for every plane of a pass.
std::vector<int64_t> tap_offsets(const Conv2dGeometry& g, const Wide& v) {
  std::vector<int64_t> offset;
  for (int64_t r = 0; r < g.R; ++r)
    for (int64_t s = 0; s < g.S; ++s) offset.push_back(tap_offset(g, v, r, s));
  return offset;
}

template <typename T>
void forward_wide(const Conv2dGeometry& g, const Wide& v, std::span<const int64_t> offset,
                  const T* x, const T* wk, T bias, T* y, T* xp, T* wide) {
  pad_plane(g, v, x, xp);
  constexpr int64_t B = kBlock<T>;
  T biases[B];
  std::fill(biases, biases + B, bias);
  int64_t i = 0;
  for (; i + B <= v.wide; i += B) block_taps(offset, wk, xp + i, biases, wide + i);
  for (; i < v.wide; ++i) {
    T acc = bias;
    for (size_t t = 0; t < offset.size(); ++t) acc = madd(wk[t], xp[offset[t] + i], acc);
    wide[i] = acc;
  }
  for (int64_t p = 0; p < g.P; ++p) std::copy(wide + p * v.Wp, wide + p * v.Wp + g.Q, y + p * g.Q);
}

template <typename T>
void data_wide(const Conv2dGeometry& g, const Wide& v, const T* dy, const T* w, int64_t k0,
               int64_t k1, T* dx, T* dxp, T* dyw) {
  std::fill(dxp, dxp + v.padded, T(0));
  for (int64_t k = k0; k < k1; ++k) {
    widen_plane(g, v, dy + k * g.P * g.Q, dyw);
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const T wv = w[(k * g.R + r) * g.S + s];
        T* out = dxp + tap_offset(g, v, r, s);
        for (int64_t i = 0; i < v.wide; ++i) out[i] += wv * dyw[i];
      }
  }
  for (int64_t h = 0; h < g.H; ++h) {
    const T* row = dxp + (h + g.pad_h) * v.Wp + g.pad_w;
    std::copy(row, row + g.W, dx + h * g.W);
  }
}

// dw of filter k in the wide form: each tap's dot product of the widened dy with the shifted
// padded x, over samples in order, in 32 lanes of the flat index; then the lanes in order. The
// taps go kGroup at a time over the plane on AVX-512, each block of dy read once for the group
// and every tap's 32 sums in registers (each lane still adds its products in the order of the
// flat index, as one tap at a time adds them); elsewhere one tap at a time (grouped, AVX2's 16
// registers spilled and the step was slower than this).
template <typename T>
void filter_wide(const Conv2dGeometry& g, const Wide& v, const T* x, const T* dy, int64_t k, T* dwk,
                 T* xp, T* dyw) {
  constexpr int64_t kSum = 32, kTaps = 49;
  constexpr int64_t kGroup = 4;             // AVX-512: every tap's sums in registers
  constexpr int64_t NV = kSum / kLanes<T>;  // vectors per tap's sums
  const int64_t c = k / (g.K / g.C), taps = g.R * g.S;
  const int64_t full = v.wide / kSum * kSum;
  for (int64_t t0 = 0; t0 < taps; t0 += kTaps) {
    const int64_t t1 = std::min(taps, t0 + kTaps);
    alignas(64) T lanes[kTaps][kSum] = {};
    for (int64_t n = 0; n < g.N; ++n) {
      pad_plane(g, v, x + (n * g.C + c) * g.H * g.W, xp);
      widen_plane(g, v, dy + (n * g.K + k) * g.P * g.Q, dyw);
      if constexpr (kVecBytes == 64) {
        for (int64_t u0 = t0; u0 < t1; u0 += kGroup) {
          const int64_t u1 = std::min(t1, u0 + kGroup), count = u1 - u0;
          const T* in[kGroup];
          V<T> acc[kGroup][NV];
          for (int64_t u = 0; u < count; ++u) {
            in[u] = xp + tap_offset(g, v, (u0 + u) / g.S, (u0 + u) % g.S);
            for (int64_t e = 0; e < NV; ++e) load(acc[u][e], lanes[u0 + u - t0] + e * kLanes<T>);
          }
          for (int64_t i = 0; i < full; i += kSum) {
            V<T> d[NV];
            for (int64_t e = 0; e < NV; ++e) load(d[e], dyw + i + e * kLanes<T>);
            for (int64_t u = 0; u < count; ++u)
              for (int64_t e = 0; e < NV; ++e) {
                V<T> xv;
                load(xv, in[u] + i + e * kLanes<T>);
                acc[u][e] = acc[u][e] + d[e] * xv;
              }
          }
          for (int64_t u = 0; u < count; ++u) {
            T* sums = lanes[u0 + u - t0];
            for (int64_t e = 0; e < NV; ++e) store(sums + e * kLanes<T>, acc[u][e]);
            for (int64_t l = 0; full + l < v.wide; ++l) sums[l] += dyw[full + l] * in[u][full + l];
          }
        }
      } else {  // AVX2 and SSE: the compiler's own vectors, tap by tap, do better
        for (int64_t t = t0; t < t1; ++t) {
          T* acc = lanes[t - t0];
          const T* in = xp + tap_offset(g, v, t / g.S, t % g.S);
          int64_t i = 0;
          for (; i + kSum <= v.wide; i += kSum)
            for (int64_t l = 0; l < kSum; ++l) acc[l] += dyw[i + l] * in[i + l];
          for (int64_t l = 0; i + l < v.wide; ++l) acc[l] += dyw[i + l] * in[i + l];
        }
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
  const std::vector<int64_t> offset = wide_applies(g) ? tap_offsets(g, v) : std::vector<int64_t>{};
  for_parts(parts(planes, threads), planes, [&](int part, int64_t u0, int64_t u1) {
    T* xp = scratch + part * (v.padded + v.wide);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / g.K, k = u % g.K;
      const T* xc = x + (n * g.C + k / m) * g.H * g.W;
      const T bias = b ? b[k] : T(0);
      if (wide_applies(g))
        forward_wide(g, v, offset, xc, w + k * g.R * g.S, bias, y + u * g.P * g.Q, xp,
                     xp + v.padded);
      else
        forward_plane(g, xc, w + k * g.R * g.S, bias, y + u * g.P * g.Q);
    }
  });
}

template <typename T>
void backward_data_t(const Conv2dGeometry& g, int threads, const T* dy, const T* w, T* dx,
                     T* scratch) {
  const int64_t m = g.K / g.C, planes = g.N * g.C;
  const Wide v = wide_of(g);
  for_parts(parts(planes, threads), planes, [&](int part, int64_t u0, int64_t u1) {
    T* dxp = scratch + part * (v.padded + v.wide);
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / g.C, c = u % g.C;
      const T* dyn = dy + n * g.K * g.P * g.Q;
      if (wide_applies(g))
        data_wide(g, v, dyn, w, c * m, (c + 1) * m, dx + u * g.H * g.W, dxp, dxp + v.padded);
      else
        data_plane(g, dyn, w, c * m, (c + 1) * m, dx + u * g.H * g.W);
    }
  });
}

template <typename T>
void backward_filter_t(const Conv2dGeometry& g, int threads, const T* x, const T* dy, T* dw,
                       T* scratch) {
  const Wide v = wide_of(g);
  for_parts(parts(g.K, threads), g.K, [&](int part, int64_t k0, int64_t k1) {
    T* xp = scratch + part * (v.padded + v.wide);
    for (int64_t k = k0; k < k1; ++k)
      if (wide_applies(g))
        filter_wide(g, v, x, dy, k, dw + k * g.R * g.S, xp, xp + v.padded);
      else
        filter_of(g, x, dy, k, dw + k * g.R * g.S);
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
  if (!wide_applies(g)) return 0;
  const Wide v = wide_of(g);
  return static_cast<size_t>(threads * (v.padded + v.wide)) * dtype_size(t);
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
