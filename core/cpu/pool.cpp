// Max and average pooling kernels of the CPU backend. Parallel over the N*C planes; each
// backward zeroes its dx plane and scatters into it in output order, so the sums are the same
// bits on every run.
#include <algorithm>
#include <cmath>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// Window of output (p, q): taps [i0, i1) x [j0, j1) of its kernel_h x kernel_w, those inside
// the input; tap (i, j) reads input (hs + i*dilation_h, ws + j*dilation_w), hs, ws the window's
// start (may lie in the top/left padding). area (average pools, no dilation) counts padding up
// to the padded border (count_include_pad, clipped at H + pad_h_end as PyTorch in ceil mode),
// or only the elements inside the input (count_include_pad false).
struct Window {
  int64_t hs, ws, i0, i1, j0, j1, area;
};

// Taps [t0, t1) of a window starting at s, k taps `dil` apart, that land in [0, in).
void taps_inside(int64_t s, int64_t k, int64_t dil, int64_t in, int64_t& t0, int64_t& t1) {
  if (dil == 1) {  // every window but a dilated max pool's, without dividing
    t0 = std::clamp<int64_t>(-s, 0, k);
    t1 = std::max(t0, std::min(k, in - s));
    return;
  }
  t0 = s >= 0 ? 0 : std::min(k, (-s + dil - 1) / dil);
  t1 = in - s <= 0 ? t0 : std::max(t0, std::min(k, (in - s + dil - 1) / dil));
}

Window window(const Pool2dGeometry& g, int64_t p, int64_t q) {
  Window v;
  v.hs = p * g.stride_h - g.pad_h;
  v.ws = q * g.stride_w - g.pad_w;
  taps_inside(v.hs, g.kernel_h, g.dilation_h, g.H, v.i0, v.i1);
  taps_inside(v.ws, g.kernel_w, g.dilation_w, g.W, v.j0, v.j1);
  const int64_t he = std::min(v.hs + g.kernel_h, g.H + g.pad_h_end);
  const int64_t we = std::min(v.ws + g.kernel_w, g.W + g.pad_w_end);
  v.area = g.count_include_pad ? (he - v.hs) * (we - v.ws) : (v.i1 - v.i0) * (v.j1 - v.j0);
  return v;
}

// Where output o = nc*P*Q + j of a plane keeps its argmax position: one byte each (8 bits),
// or a nibble (4 bits: plane nc in bytes [nc*ceil(P*Q/2), ...), output j in byte j/2, the low
// nibble for even j). One thread writes a whole plane, so no byte has two writers.
struct IndexLayout {
  int bits;
  int64_t plane_bytes;
  IndexLayout(const Pool2dGeometry& g, int b)
      : bits(b), plane_bytes(b == 4 ? (g.P * g.Q + 1) / 2 : g.P * g.Q) {}
  void put(uint8_t* index, int64_t nc, int64_t j, int64_t v) const {
    uint8_t* plane = index + nc * plane_bytes;
    if (bits == 8)
      plane[j] = static_cast<uint8_t>(v);
    else if (j % 2 == 0)
      plane[j / 2] = static_cast<uint8_t>(v);
    else
      plane[j / 2] = static_cast<uint8_t>(plane[j / 2] | (v << 4));
  }
  int64_t get(const uint8_t* index, int64_t nc, int64_t j) const {
    const uint8_t* plane = index + nc * plane_bytes;
    return bits == 8 ? plane[j] : (plane[j / 2] >> (4 * (j % 2))) & 0xF;
  }
};

// One output's max and argmax (tap i * kernel_w + j of the full window), as every output is
// defined: taps in row-major order.
template <typename T, bool Dilated>
void max_window(const Pool2dGeometry& g, const T* xp, int64_t p, int64_t q, T& m, int64_t& k) {
  const Window v = window(g, p, q);
  const int64_t dh = Dilated ? g.dilation_h : 1, dw = Dilated ? g.dilation_w : 1;
  auto at = [&](int64_t i, int64_t j) { return xp[(v.hs + i * dh) * g.W + v.ws + j * dw]; };
  k = v.i0 * g.kernel_w + v.j0;
  m = at(v.i0, v.j0);
  for (int64_t i = v.i0; i < v.i1; ++i)
    for (int64_t j = v.j0; j < v.j1; ++j) {
      const T val = at(i, j);
      if (val > m || std::isnan(val)) {
        m = val;
        k = i * g.kernel_w + j;
      }
    }
}

// x (N,C,H,W)  y (N,C,P,Q)  index (IndexLayout) or null: argmax row-major in the full window.
// Padding never wins (acts as -inf); NaN wins, as in PyTorch; ties keep the first. Outputs
// whose window lies inside the row run a tap at a time over up to 64 outputs at once (the
// comparisons of one output form a chain; those of many outputs are independent, and
// vectorize), with the same taps in the same order per output as max_window. Dilated: false
// where both dilations are 1, whose taps' addresses then take no multiplications (the pools of
// every bundled network and CNN export run faster so: docs/BENCHMARKS.md, bench_pool).
template <typename T, bool Dilated>
void maxpool2d_forward_t(const Pool2dGeometry& g, const T* x, T* y, uint8_t* index,
                         const IndexLayout& at) {
  const int64_t dh = Dilated ? g.dilation_h : 1, dw = Dilated ? g.dilation_w : 1;
  // Outputs [q_lo, q_hi) have windows inside [0, W) along the row: their last tap, at
  // q*stride_w - pad_w + (kernel_w - 1)*dilation_w, at most W - 1.
  const int64_t q_lo = std::min(g.Q, (g.pad_w + g.stride_w - 1) / g.stride_w);
  const int64_t last = g.W - 1 + g.pad_w - (g.kernel_w - 1) * dw;
  const int64_t q_hi = std::max(q_lo, std::min(g.Q, last >= 0 ? last / g.stride_w + 1 : 0));
  constexpr int64_t kChunk = 64;
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x + nc * g.H * g.W;
    T* yp = y + nc * g.P * g.Q;
    for (int64_t p = 0; p < g.P; ++p) {
      auto one = [&](int64_t q) {
        T m;
        int64_t k;
        max_window<T, Dilated>(g, xp, p, q, m, k);
        yp[p * g.Q + q] = m;
        if (index) at.put(index, nc, p * g.Q + q, k);
      };
      for (int64_t q = 0; q < q_lo; ++q) one(q);
      const Window v = window(g, p, q_lo);
      for (int64_t c0 = q_lo; c0 < q_hi; c0 += kChunk) {
        const int64_t n = std::min(kChunk, q_hi - c0);
        T m[kChunk];
        int32_t best[kChunk];
        const T* first = xp + (v.hs + v.i0 * dh) * g.W + c0 * g.stride_w - g.pad_w;
        for (int64_t i = 0; i < n; ++i) {
          m[i] = first[i * g.stride_w];
          best[i] = static_cast<int32_t>(v.i0 * g.kernel_w);
        }
        for (int64_t r = v.i0; r < v.i1; ++r)
          for (int64_t j = 0; j < g.kernel_w; ++j) {
            const T* tap = xp + (v.hs + r * dh) * g.W + c0 * g.stride_w - g.pad_w + j * dw;
            const auto k = static_cast<int32_t>(r * g.kernel_w + j);
            for (int64_t i = 0; i < n; ++i) {
              const T val = tap[i * g.stride_w];
              const bool take = (val > m[i]) | (val != val);  // NaN wins, as std::isnan
              m[i] = take ? val : m[i];
              best[i] = take ? k : best[i];
            }
          }
        for (int64_t i = 0; i < n; ++i) {
          yp[p * g.Q + c0 + i] = m[i];
          if (index) at.put(index, nc, p * g.Q + c0 + i, best[i]);
        }
      }
      for (int64_t q = q_hi; q < g.Q; ++q) one(q);
    }
  }
}

// dy (N,C,P,Q)  index (IndexLayout)  dx (N,C,H,W):  dx[argmax] += dy
template <typename T, bool Dilated>
void maxpool2d_backward_t(const Pool2dGeometry& g, const T* dy, const uint8_t* index, T* dx,
                          const IndexLayout& at) {
  const int64_t dh = Dilated ? g.dilation_h : 1, dw = Dilated ? g.dilation_w : 1;
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    T* dxp = dx + nc * g.H * g.W;
    std::fill(dxp, dxp + g.H * g.W, T(0));
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q) {
        const int64_t k = at.get(index, nc, p * g.Q + q);
        const int64_t h = p * g.stride_h - g.pad_h + k / g.kernel_w * dh;
        const int64_t w = q * g.stride_w - g.pad_w + k % g.kernel_w * dw;
        dxp[h * g.W + w] += dy[nc * g.P * g.Q + p * g.Q + q];
      }
  }
}

// x (N,C,H,W)  y (N,C,P,Q):  y = sum of the window / window area (padding counts as 0)
template <typename T>
void avgpool2d_forward_t(const Pool2dGeometry& g, const T* x, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    const T* xp = x + nc * g.H * g.W;
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q) {
        const Window v = window(g, p, q);
        T sum = 0;  // no dilation (check_avgpool): taps i0.. are rows hs + i0..
        for (int64_t h = v.hs + v.i0; h < v.hs + v.i1; ++h)
          for (int64_t w = v.ws + v.j0; w < v.ws + v.j1; ++w) sum += xp[h * g.W + w];
        y[nc * g.P * g.Q + p * g.Q + q] = sum / static_cast<T>(v.area);
      }
  }
}

// dy (N,C,P,Q)  dx (N,C,H,W):  every in-bounds element of a window gets dy / area
template <typename T>
void avgpool2d_backward_t(const Pool2dGeometry& g, const T* dy, T* dx) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc) {
    T* dxp = dx + nc * g.H * g.W;
    std::fill(dxp, dxp + g.H * g.W, T(0));
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q) {
        const Window v = window(g, p, q);
        const T d = dy[nc * g.P * g.Q + p * g.Q + q] / static_cast<T>(v.area);
        for (int64_t h = v.hs + v.i0; h < v.hs + v.i1; ++h)
          for (int64_t w = v.ws + v.j0; w < v.ws + v.j1; ++w) dxp[h * g.W + w] += d;
      }
  }
}

// x (N,C,H,W)  y (N,C,H kh,W kw): each input element copied into its block.
template <typename T>
void upsample_nearest_forward_t(const Pool2dGeometry& g, const T* x, T* y) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q)
        y[(nc * g.P + p) * g.Q + q] = x[(nc * g.H + p / g.kernel_h) * g.W + q / g.kernel_w];
}

// dy (N,C,H kh,W kw)  dx (N,C,H,W): each block summed row by row.
template <typename T>
void upsample_nearest_backward_t(const Pool2dGeometry& g, const T* dy, T* dx) {
#pragma omp parallel for schedule(static)
  for (int64_t nc = 0; nc < g.N * g.C; ++nc)
    for (int64_t h = 0; h < g.H; ++h)
      for (int64_t w = 0; w < g.W; ++w) {
        T sum = 0;
        for (int64_t a = 0; a < g.kernel_h; ++a)
          for (int64_t b = 0; b < g.kernel_w; ++b)
            sum += dy[(nc * g.P + h * g.kernel_h + a) * g.Q + w * g.kernel_w + b];
        dx[(nc * g.H + h) * g.W + w] = sum;
      }
}

}  // namespace

void CpuBackend::upsample_nearest_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  check_upsample("upsample_nearest2d", g, x, y, device());
  if (x.dtype() == DType::f32)
    upsample_nearest_forward_t(g, x.data<float>(), y.data<float>());
  else
    upsample_nearest_forward_t(g, x.data<double>(), y.data<double>());
}

void CpuBackend::upsample_nearest_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_upsample("upsample_nearest2d backward", g, dx, dy, device());
  if (dy.dtype() == DType::f32)
    upsample_nearest_backward_t(g, dy.data<float>(), dx.data<float>());
  else
    upsample_nearest_backward_t(g, dy.data<double>(), dx.data<double>());
}

// Windows of up to 16 positions keep their argmax in 4 bits: half the saved bytes.
int CpuBackend::maxpool_index_bits(const Pool2dGeometry& g) const {
  return g.kernel_h * g.kernel_w <= 16 ? 4 : 8;
}

void CpuBackend::maxpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                   Tensor& index) {
  const int bits = maxpool_index_bits(g);
  check_maxpool_forward(g, x, y, index, device(), bits);
  uint8_t* idx = index.defined() ? index.data<uint8_t>() : nullptr;
  const IndexLayout at(g, bits);
  const bool dilated = g.dilation_h != 1 || g.dilation_w != 1;
  if (x.dtype() == DType::f32)
    (dilated ? maxpool2d_forward_t<float, true>
             : maxpool2d_forward_t<float, false>)(g, x.data<float>(), y.data<float>(), idx, at);
  else
    (dilated ? maxpool2d_forward_t<double, true>
             : maxpool2d_forward_t<double, false>)(g, x.data<double>(), y.data<double>(), idx, at);
}

void CpuBackend::maxpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                                    Tensor& dx) {
  const int bits = maxpool_index_bits(g);
  check_maxpool_backward(g, dy, index, dx, device(), bits);
  const IndexLayout at(g, bits);
  const bool dilated = g.dilation_h != 1 || g.dilation_w != 1;
  if (dy.dtype() == DType::f32)
    (dilated ? maxpool2d_backward_t<float, true>
             : maxpool2d_backward_t<float, false>)(g, dy.data<float>(), index.data<uint8_t>(),
                                                   dx.data<float>(), at);
  else
    (dilated ? maxpool2d_backward_t<double, true>
             : maxpool2d_backward_t<double, false>)(g, dy.data<double>(), index.data<uint8_t>(),
                                                    dx.data<double>(), at);
}

void CpuBackend::avgpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  check_avgpool("avg_pool2d", g, x, y, device());
  if (x.dtype() == DType::f32)
    avgpool2d_forward_t(g, x.data<float>(), y.data<float>());
  else
    avgpool2d_forward_t(g, x.data<double>(), y.data<double>());
}

void CpuBackend::avgpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  check_pool("avg_pool2d backward", g, dx, dy, device());
  if (dy.dtype() == DType::f32)
    avgpool2d_backward_t(g, dy.data<float>(), dx.data<float>());
  else
    avgpool2d_backward_t(g, dy.data<double>(), dx.data<double>());
}

}  // namespace frugal
