// Conv2d kernels of the CPU backend: im2col + GEMM (Eigen) in tiles of output rows whose columns
// fit a budget per thread. Forward gives each OpenMP thread a static range of (sample, tile)
// units and a column buffer of its own; backward shares each tile between the threads, each
// owning a static range of its column rows (of channels, for the data gradient), so nothing is
// summed across threads. Inside a parallel region Eigen's GEMMs run single-threaded. The tiling
// depends on the geometry, dtype and thread count only, so every memory mode does the same
// arithmetic in the same order. A 1x1, stride-1, unpadded conv is a GEMM over x: no columns.
// Stride-1 f32 convolutions larger than 1x1 go to the direct kernels of conv2d_direct.h instead
// (forward and data gradient in conv2d_direct.cpp; the filter gradient, where rows are whole
// vectors, in conv2d_direct_filter.cpp), unless set_cpu_direct_conv(false) asks for im2col
// everywhere. Grouped convolutions run im2col + GEMM one group at a time; depthwise ones (a
// group per input channel) have loops of their own, conv2d_depthwise.h.
#include <Eigen/Core>
#include <algorithm>

#include "core/cpu/conv2d_depthwise.h"
#include "core/cpu/conv2d_direct.h"
#include "core/cpu/conv_span.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/parts.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const MatR<T>>;
// A block of columns of a row-major matrix whose rows lie `stride` elements apart.
template <typename T>
using Block = Eigen::Map<MatR<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using ConstBlock = Eigen::Map<const MatR<T>, 0, Eigen::OuterStride<>>;

constexpr int64_t kColumnBudget = int64_t{1} << 20;  // bytes of im2col columns per thread
constexpr int64_t kParallelMin = 32768;              // fewer elements than this: one thread

bool pointwise(const Conv2dGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 &&
         g.pad_w == 0 && g.pad_h_end == 0 && g.pad_w_end == 0;
}

// One group's convolution: C/groups input channels to K/groups filters. The kernels below run
// it once per group, with the whole tensors' strides between samples.
Conv2dGeometry group_view(const Conv2dGeometry& g) {
  Conv2dGeometry one = g;
  one.C = g.C / g.groups, one.K = g.K / g.groups, one.groups = 1;
  return one;
}

// Output rows [0, P) of each sample run as tiles of `rows` rows, whose columns (C*R*S, rows*Q)
// fit `budget` bytes unless a single row does not.
struct Tiling {
  int64_t rows, tiles;  // output rows per tile, tiles per sample
  int64_t cols;         // elements of one tile's columns (0 for pointwise)
};
Tiling tiling(const Conv2dGeometry& g, DType t, int64_t budget, int64_t min_tiles) {
  const int64_t row = g.C * g.R * g.S * g.Q, size = static_cast<int64_t>(dtype_size(t));
  int64_t rows = pointwise(g) ? g.P : std::clamp<int64_t>(budget / (row * size), 1, g.P);
  rows = std::max<int64_t>(1, std::min(rows, (g.P + min_tiles - 1) / min_tiles));
  return {rows, (g.P + rows - 1) / rows, pointwise(g) ? 0 : row * rows};
}
// Forward: each thread takes whole tiles, with a column buffer of its own. With fewer samples
// than threads, a sample is cut into twice as many tiles as threads per sample: the buffers held
// at once are half a sample's columns (batch-1 inference's largest buffer), not all of them.
Tiling forward_tiling(const Conv2dGeometry& g, DType t, int threads) {
  return tiling(g, t, kColumnBudget,
                g.N > 0 && g.N < threads ? 2 * ((threads + g.N - 1) / g.N) : 1);
}
// Backward: the threads share each tile, each owning a range of its column rows (c,r,s), so
// one tile of all the threads' budgets is the whole scratch.
Tiling backward_tiling(const Conv2dGeometry& g, DType t, int threads) {
  return tiling(g, t, threads * kColumnBudget, 1);
}
// Stride 1 with Q == W (a "same" convolution): the rows a column row (c,r,s) reads are the
// input rows shifted by s - pad_w, so im2col and col2im move them in one copy or add; the
// entries that read the padding, which that shift pairs with the neighbouring rows, are zeroed
// (in the columns) by zero_padding_columns. Short per-row copies would spend more in calls than
// in copying (Q = 8 to 32 on CIFAR nets).
bool shifted_rows(const Conv2dGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.Q == g.W;
}
// rows (rows, Q): zeroes columns q outside [qs.lo, qs.hi) of every row.
template <typename T>
void zero_padding_columns(const Conv2dGeometry& g, T* rows, int64_t n_rows, Span qs) {
  for (int64_t row = 0; row < n_rows; ++row) {
    T* r = rows + row * g.Q;
    for (int64_t q = 0; q < qs.lo; ++q) r[q] = T(0);
    for (int64_t q = qs.hi; q < g.Q; ++q) r[q] = T(0);
  }
}

// x (C,H,W) of one sample -> rows [j0, j1) of its columns for output rows [p0, p1), as
// cols (j1-j0, L), L = (p1-p0)*Q: row j = (c,r,s), column (p-p0, q) holds
// x[c, p*stride_h - pad_h + r*dilation_h, q*stride_w - pad_w + s*dilation_w], or 0 in the
// padding. (Below, r and s stand for the dilated offsets r*dilation_h and s*dilation_w.)
template <typename T>
void im2col(const Conv2dGeometry& g, const T* x, int64_t j0, int64_t j1, int64_t p0, int64_t p1,
            T* cols) {
  const int64_t L = (p1 - p0) * g.Q;
  const bool flat = shifted_rows(g);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t s = j % g.S * g.dilation_w, r = j / g.S % g.R * g.dilation_h, c = j / (g.R * g.S),
                  w0 = s - g.pad_w;
    const Span ps = inside(g.H, g.P, r, g.stride_h, g.pad_h, p0, p1);
    const Span qs = inside(g.W, g.Q, s, g.stride_w, g.pad_w, 0, g.Q);
    T* out = cols + (j - j0) * L;  // column (p-p0)*Q + q
    std::fill(out, out + (ps.lo - p0) * g.Q, T(0));
    if (flat && ps.hi > ps.lo) {
      // out[i] = in[i + w0] over the rows' n elements, reading only inside those rows (if any).
      const int64_t n = (ps.hi - ps.lo) * g.W;
      const int64_t a = std::max<int64_t>(0, -w0), b = n - std::max<int64_t>(0, w0);
      T* o = out + (ps.lo - p0) * g.Q;
      const T* in = x + (c * g.H + ps.lo - g.pad_h + r) * g.W;
      if (a < b) std::copy(in + a + w0, in + b + w0, o + a);
      zero_padding_columns(g, o, ps.hi - ps.lo, qs);  // [0, a) and [b, n) are among these
      std::fill(out + (ps.hi - p0) * g.Q, out + L, T(0));
      continue;
    }
    for (int64_t p = ps.lo; p < ps.hi; ++p) {
      T* o = out + (p - p0) * g.Q;
      const T* in = x + (c * g.H + p * g.stride_h - g.pad_h + r) * g.W;
      std::fill(o, o + qs.lo, T(0));
      if (g.stride_w == 1)
        std::copy(in + qs.lo + w0, in + qs.hi + w0, o + qs.lo);
      else
        for (int64_t q = qs.lo; q < qs.hi; ++q) o[q] = in[q * g.stride_w + w0];
      std::fill(o + qs.hi, o + g.Q, T(0));
    }
    std::fill(out + (ps.hi - p0) * g.Q, out + L, T(0));
  }
}

// The inverse for channels [c0, c1): cols (rows (c0,0,0) on, L) of output rows [p0, p1) are
// added into the pixels of dx (C,H,W) they read, in (c,r,s,p,q) order. With shifted_rows(g)
// each (c,r,s) row is one shifted add, its padding entries zeroed first: adding +0 leaves dx
// as it was (dx starts at +0 and its sums never reach -0), so the result is the per-row
// loop's, bit for bit.
template <typename T>
void col2im_add(const Conv2dGeometry& g, T* cols, int64_t c0, int64_t c1, int64_t p0, int64_t p1,
                T* dx) {
  const int64_t L = (p1 - p0) * g.Q, RS = g.R * g.S;
  const bool flat = shifted_rows(g);
  for (int64_t j = c0 * RS; j < c1 * RS; ++j) {
    const int64_t s = j % g.S * g.dilation_w, r = j / g.S % g.R * g.dilation_h, c = j / RS,
                  w0 = s - g.pad_w;
    const Span ps = inside(g.H, g.P, r, g.stride_h, g.pad_h, p0, p1);
    const Span qs = inside(g.W, g.Q, s, g.stride_w, g.pad_w, 0, g.Q);
    if (flat && ps.hi > ps.lo) {
      T* in = cols + (j - c0 * RS) * L + (ps.lo - p0) * g.Q;
      const int64_t n = (ps.hi - ps.lo) * g.W;
      zero_padding_columns(g, in, ps.hi - ps.lo, qs);
      const int64_t a = std::max<int64_t>(0, -w0), b = n - std::max<int64_t>(0, w0);
      T* o = dx + (c * g.H + ps.lo - g.pad_h + r) * g.W;
      for (int64_t i = a; i < b; ++i) o[i + w0] += in[i];
      continue;
    }
    for (int64_t p = ps.lo; p < ps.hi; ++p) {
      const T* in = cols + (j - c0 * RS) * L + (p - p0) * g.Q;
      T* o = dx + (c * g.H + p * g.stride_h - g.pad_h + r) * g.W;
      for (int64_t q = qs.lo; q < qs.hi; ++q) o[q * g.stride_w + w0] += in[q];
    }
  }
}

// x (N,C,H,W)  w (K,C/G,R,S)  b (K) or null  y (N,K,P,Q):  y_n = w cols(x_n) + b, tile by tile
// and group by group (G = groups); each thread takes a static range of (sample, tile) units.
template <typename T>
void forward_t(const Conv2dGeometry& full, int threads, const T* x, const T* w, const T* b, T* y,
               T* scratch) {
  const Conv2dGeometry g = group_view(full);
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = full.C * g.H * g.W;
  const Tiling tl = forward_tiling(g, dtype_of<T>(), threads);
  const int64_t units = g.N * tl.tiles;
  for_parts(parts(units, threads), units, [&](int part, int64_t u0, int64_t u1) {
    T* cols = scratch + part * tl.cols;
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t n = u / tl.tiles, p0 = u % tl.tiles * tl.rows;
      const int64_t p1 = std::min(g.P, p0 + tl.rows), L = (p1 - p0) * g.Q;
      for (int64_t group = 0; group < full.groups; ++group) {
        const T* xg = x + n * CHW + group * g.C * g.H * g.W;
        if (!pointwise(g)) im2col(g, xg, 0, CRS, p0, p1, cols);
        const T* src = pointwise(g) ? xg + p0 * g.Q : cols;
        ConstMap<T> Wg(w + group * g.K * CRS, g.K, CRS);
        Block<T> Y(y + (n * full.K + group * g.K) * PQ + p0 * g.Q, g.K, L,
                   Eigen::OuterStride<>(PQ));
        Y.noalias() = Wg * ConstBlock<T>(src, CRS, L, Eigen::OuterStride<>(pointwise(g) ? PQ : L));
        if (b)
          Y.colwise() +=
              Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(b + group * g.K, g.K);
      }
    }
  });
}

// dy (N,K,P,Q)  w (K,C/G,R,S)  dx (N,C,H,W), group by group:  cols(dx_n) = w^T dy_n tile by
// tile, added into dx_n by col2im (a pointwise conv writes w^T dy_n straight into dx_n). Each
// thread owns a static range of the group's channels: their rows of w^T, of the columns and of
// dx.
template <typename T>
void backward_data_t(const Conv2dGeometry& full, int threads, const T* dy, const T* w, T* dx,
                     T* scratch) {
  const Conv2dGeometry g = group_view(full);
  const int64_t CRS = g.C * g.R * g.S, RS = g.R * g.S, PQ = g.P * g.Q, HW = g.H * g.W;
  const Tiling tl = backward_tiling(g, dtype_of<T>(), threads);
  for (int64_t group = 0; group < full.groups; ++group)
    for_parts(parts(g.C, threads), g.C, [&](int, int64_t c0, int64_t c1) {
      ConstBlock<T> Wt(w + group * g.K * CRS + c0 * RS, g.K, (c1 - c0) * RS,
                       Eigen::OuterStride<>(CRS));
      for (int64_t n = 0; n < g.N; ++n) {
        T* dxn = dx + (n * full.C + group * g.C) * HW;
        if (!pointwise(g)) std::fill(dxn + c0 * HW, dxn + c1 * HW, T(0));
        for (int64_t p0 = 0; p0 < g.P; p0 += tl.rows) {
          const int64_t p1 = std::min(g.P, p0 + tl.rows), L = (p1 - p0) * g.Q;
          ConstBlock<T> dY(dy + (n * full.K + group * g.K) * PQ + p0 * g.Q, g.K, L,
                           Eigen::OuterStride<>(PQ));
          T* dst = pointwise(g) ? dxn + c0 * PQ + p0 * g.Q : scratch + c0 * RS * tl.rows * g.Q;
          Block<T>(dst, (c1 - c0) * RS, L, Eigen::OuterStride<>(pointwise(g) ? PQ : L)).noalias() =
              Wt.transpose() * dY;
          if (!pointwise(g)) col2im_add(g, dst, c0, c1, p0, p1, dxn);
        }
      }
    });
}

// x (N,C,H,W)  dy (N,K,P,Q)  dw (K,C/G,R,S) or null  db (K) or null, group by group:
// dw = sum over samples and tiles, in order, of dy_n[tile] cols(x_n)[tile]^T. Each thread owns a
// static range of column rows (c,r,s): it builds only those rows and writes only those columns
// of dw, so no partial sums are kept and samples and tiles add up in the same order whatever
// the thread count.
// db = sum over n, p, q of dy, in eight lanes (see below).
template <typename T>
void backward_filter_t(const Conv2dGeometry& g, int threads, const T* x, const T* dy, T* dw, T* db,
                       T* scratch) {
  const int64_t PQ = g.P * g.Q;
  if (dw) {
    const Conv2dGeometry one = group_view(g);
    const int64_t CRS = one.C * g.R * g.S, CHW = g.C * g.H * g.W;
    const Tiling tl = backward_tiling(one, dtype_of<T>(), threads);
    for (int64_t group = 0; group < g.groups; ++group)
      for_parts(parts(CRS, threads), CRS, [&](int, int64_t j0, int64_t j1) {
        Block<T> dW(dw + group * one.K * CRS + j0, one.K, j1 - j0, Eigen::OuterStride<>(CRS));
        dW.setZero();
        T* cols = pointwise(one) ? nullptr : scratch + j0 * tl.rows * g.Q;
        for (int64_t n = 0; n < g.N; ++n)
          for (int64_t p0 = 0; p0 < g.P; p0 += tl.rows) {
            const int64_t p1 = std::min(g.P, p0 + tl.rows), L = (p1 - p0) * g.Q;
            const T* xg = x + n * CHW + group * one.C * g.H * g.W;
            if (!pointwise(one)) im2col(one, xg, j0, j1, p0, p1, cols);
            const T* src = pointwise(one) ? xg + j0 * PQ + p0 * g.Q : cols;
            dW.noalias() +=
                ConstBlock<T>(dy + (n * g.K + group * one.K) * PQ + p0 * g.Q, one.K, L,
                              Eigen::OuterStride<>(PQ)) *
                ConstBlock<T>(src, j1 - j0, L, Eigen::OuterStride<>(pointwise(one) ? PQ : L))
                    .transpose();
          }
      });
  }
  if (!db) return;
#pragma omp parallel for schedule(static) if (g.N * g.K * PQ >= kParallelMin)
  for (int64_t k = 0; k < g.K; ++k) {
    // Eight running sums, lane j % 8 of every plane in turn, so the adds vectorize; then the
    // lanes in order. A fixed order either way: the same bits on any thread count.
    constexpr int64_t kLanes = 8;
    T lanes[kLanes] = {};
    for (int64_t n = 0; n < g.N; ++n) {
      const T* plane = dy + (n * g.K + k) * PQ;
      int64_t j = 0;
      for (; j + kLanes <= PQ; j += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += plane[j + l];
      for (int64_t l = 0; j + l < PQ; ++l) lanes[l] += plane[j + l];
    }
    T total = 0;
    for (int64_t l = 0; l < kLanes; ++l) total += lanes[l];
    db[k] = total;
  }
}

bool g_direct = true;  // set_cpu_direct_conv
bool direct(const Conv2dGeometry& g, DType t) {
  return g_direct && direct_conv::applies(g, t);
}
bool direct_filter(const Conv2dGeometry& g, DType t) {
  return direct(g, t) && direct_conv::filter_applies(g);
}

// The shared checks (core/kernel_checks.h), then the scratch the CPU kernel needs.
void check(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
           const Tensor& y, const Tensor& scratch, size_t need, const Device& device) {
  check_conv(op, g, x, w, y, device);
  FRUGAL_CHECK(need == 0 || (scratch.defined() && scratch.bytes() >= need), op, ": scratch of ",
               scratch.defined() ? scratch.bytes() : 0, " bytes, needs ", need);
}

template <typename T>
T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}
template <typename T>
T* scratch_of(const Tensor& scratch, size_t need) {
  return need > 0 ? static_cast<T*>(scratch.raw()) : nullptr;
}

}  // namespace

void set_cpu_direct_conv(bool enabled) {
  g_direct = enabled;
}
bool cpu_direct_conv() {
  return g_direct;
}
bool cpu_conv2d_direct_applies(const Conv2dGeometry& g, DType t) {
  return direct_conv::applies(g, t);
}

// Forward: a tile's columns per thread that has tiles to run; backward: one tile's columns
// (of one group). Depthwise convolutions: a padded and a wide plane per thread at stride 1.
size_t CpuBackend::conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const {
  if (depthwise_conv::applies(g)) return depthwise_conv::scratch_bytes(g, t, threads());
  if (direct(g, t)) return direct_conv::forward_scratch(g, threads());
  const Tiling tl = forward_tiling(group_view(g), t, threads());
  return static_cast<size_t>(parts(g.N * tl.tiles, threads()) * tl.cols) * dtype_size(t);
}
size_t CpuBackend::conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const {
  if (depthwise_conv::applies(g)) return depthwise_conv::backward_scratch_bytes(g, t, threads());
  const size_t columns =
      static_cast<size_t>(backward_tiling(group_view(g), t, threads()).cols) * dtype_size(t);
  const size_t data = direct(g, t) ? direct_conv::data_scratch(g, threads()) : columns;
  return std::max(data,
                  direct_filter(g, t) ? direct_conv::filter_scratch_bytes(g, threads()) : columns);
}

void CpuBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                const Tensor& b, Tensor& y, Tensor& scratch) {
  check_defined("conv2d forward", "weight", w);
  const size_t need = conv2d_forward_scratch(g, x.dtype());
  check("conv2d forward", g, x, w, y, scratch, need, device());
  check_conv_bias("conv2d forward", "bias", g, b, x, device());
  if (depthwise_conv::applies(g))
    depthwise_conv::forward(g, threads(), x, w, b, y, scratch);
  else if (direct(g, x.dtype()))
    direct_conv::forward(g, threads(), x.data<float>(), w.data<float>(), optional<float>(b),
                         y.data<float>(), scratch_of<float>(scratch, need));
  else if (x.dtype() == DType::f32)
    forward_t(g, threads(), x.data<float>(), w.data<float>(), optional<float>(b), y.data<float>(),
              scratch_of<float>(scratch, need));
  else
    forward_t(g, threads(), x.data<double>(), w.data<double>(), optional<double>(b),
              y.data<double>(), scratch_of<double>(scratch, need));
}

void CpuBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx, Tensor& scratch) {
  check_defined("conv2d backward data", "weight", w);
  const size_t need = conv2d_backward_scratch(g, dy.dtype());
  check("conv2d backward data", g, dx, w, dy, scratch, need, device());
  if (depthwise_conv::applies(g))
    depthwise_conv::backward_data(g, threads(), dy, w, dx, scratch);
  else if (direct(g, dy.dtype()))
    direct_conv::backward_data(g, threads(), dy.data<float>(), w.data<float>(), dx.data<float>(),
                               scratch_of<float>(scratch, need));
  else if (dy.dtype() == DType::f32)
    backward_data_t(g, threads(), dy.data<float>(), w.data<float>(), dx.data<float>(),
                    scratch_of<float>(scratch, need));
  else
    backward_data_t(g, threads(), dy.data<double>(), w.data<double>(), dx.data<double>(),
                    scratch_of<double>(scratch, need));
}

void CpuBackend::conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                        Tensor& dw, Tensor& db, Tensor& scratch) {
  const size_t need = conv2d_backward_scratch(g, x.dtype());
  check("conv2d backward filter", g, x, dw, dy, scratch, need,
        device());  // dw undefined: bias only
  check_conv_bias("conv2d backward filter", "bias gradient", g, db, x, device());
  const bool f32 = x.dtype() == DType::f32;
  if (depthwise_conv::applies(g) || direct_filter(g, x.dtype())) {
    if (dw.defined() && depthwise_conv::applies(g))
      depthwise_conv::backward_filter(g, threads(), x, dy, dw, scratch);
    else if (dw.defined())
      direct_conv::backward_filter(g, threads(), x.data<float>(), dy.data<float>(),
                                   dw.data<float>(), scratch_of<float>(scratch, need));
    // the bias gradient only
    if (f32)
      backward_filter_t<float>(g, threads(), x.data<float>(), dy.data<float>(), nullptr,
                               optional<float>(db), nullptr);
    else
      backward_filter_t<double>(g, threads(), x.data<double>(), dy.data<double>(), nullptr,
                                optional<double>(db), nullptr);
  } else if (f32)
    backward_filter_t(g, threads(), x.data<float>(), dy.data<float>(), optional<float>(dw),
                      optional<float>(db), scratch_of<float>(scratch, need));
  else
    backward_filter_t(g, threads(), x.data<double>(), dy.data<double>(), optional<double>(dw),
                      optional<double>(db), scratch_of<double>(scratch, need));
}

}  // namespace frugal
