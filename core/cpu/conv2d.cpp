// Conv2d kernels of the CPU backend: im2col + GEMM (Eigen, threaded by OpenMP). The batch runs
// in chunks whose im2col columns fit a fixed budget; the chunk size depends on the geometry and
// dtype only, so every memory mode does the same arithmetic in the same order. A 1x1, stride-1,
// unpadded conv is a plain GEMM over x and needs no columns.
#include <Eigen/Core>
#include <algorithm>

#include "core/cpu/cpu_backend.h"

namespace frugal {

namespace {

template <typename T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<MatR<T>>;
template <typename T>
using ConstMap = Eigen::Map<const MatR<T>>;

constexpr int64_t kColumnBudget = int64_t{8} << 20;  // bytes of im2col columns per chunk
// Loops over fewer elements than this run on one thread: forking costs more than they do.
constexpr int64_t kParallelMin = 32768;

bool pointwise(const Conv2dGeometry& g) {
  return g.R == 1 && g.S == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_h == 0 && g.pad_w == 0;
}
// Elements of one sample's columns: (C*R*S, P*Q); for a pointwise conv that is x itself.
int64_t sample_columns(const Conv2dGeometry& g) {
  return g.C * g.R * g.S * g.P * g.Q;
}
// Samples per chunk: as many as fit the budget, at least one.
int64_t chunk_samples(const Conv2dGeometry& g, DType t) {
  const int64_t bytes = sample_columns(g) * static_cast<int64_t>(dtype_size(t));
  return std::clamp<int64_t>(kColumnBudget / std::max<int64_t>(1, bytes), 1,
                             std::max<int64_t>(1, g.N));
}
size_t scratch_bytes(const Conv2dGeometry& g, DType t) {
  if (pointwise(g)) return 0;
  return static_cast<size_t>(chunk_samples(g, t) * sample_columns(g)) * dtype_size(t);
}

// Output positions o in [0, out) whose input position o*stride - pad + k lies in [0, in):
// the range [lo, hi). Kernels loop over it without a bounds check per element.
struct Span {
  int64_t lo, hi;
};
Span inside(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  auto ceil_div = [&](int64_t a) { return a <= 0 ? 0 : (a + stride - 1) / stride; };
  const int64_t lo = std::min(out, ceil_div(pad - k));
  return {lo, std::clamp(ceil_div(in + pad - k), lo, out)};
}

// x (n,C,H,W)  cols (n, C*R*S, P*Q): row (c,r,s), column (p,q) holds
// x[c, p*stride_h - pad_h + r, q*stride_w - pad_w + s], or 0 in the padding.
template <typename T>
void im2col(const Conv2dGeometry& g, const T* x, int64_t n, T* cols) {
  const int64_t rows = n * g.C * g.R * g.S, PQ = g.P * g.Q;
#pragma omp parallel for schedule(static) if (rows * PQ >= kParallelMin)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t s = row % g.S, r = row / g.S % g.R, nc = row / (g.R * g.S);
    const Span ps = inside(g.H, g.P, r, g.stride_h, g.pad_h);
    const Span qs = inside(g.W, g.Q, s, g.stride_w, g.pad_w);
    const T* plane = x + nc * g.H * g.W;
    T* out = cols + row * PQ;
    std::fill(out, out + ps.lo * g.Q, T(0));
    for (int64_t p = ps.lo; p < ps.hi; ++p) {
      T* o = out + p * g.Q;
      const T* in = plane + (p * g.stride_h - g.pad_h + r) * g.W;
      const int64_t w0 = s - g.pad_w;  // input column of q = 0
      std::fill(o, o + qs.lo, T(0));
      for (int64_t q = qs.lo; q < qs.hi; ++q) o[q] = in[q * g.stride_w + w0];
      std::fill(o + qs.hi, o + g.Q, T(0));
    }
    std::fill(out + ps.hi * g.Q, out + PQ, T(0));
  }
}

// cols (n, C*R*S, P*Q) -> dx (n,C,H,W): each pixel is the sum of the column entries that read
// it, added in (r,s,p,q) order. One thread owns each (n,c) plane, so the order is fixed.
template <typename T>
void col2im(const Conv2dGeometry& g, const T* cols, int64_t n, T* dx) {
  const int64_t planes = n * g.C, PQ = g.P * g.Q;
#pragma omp parallel for schedule(static) if (planes * g.R * g.S * PQ >= kParallelMin)
  for (int64_t nc = 0; nc < planes; ++nc) {
    T* plane = dx + nc * g.H * g.W;
    std::fill(plane, plane + g.H * g.W, T(0));
    for (int64_t r = 0; r < g.R; ++r)
      for (int64_t s = 0; s < g.S; ++s) {
        const Span ps = inside(g.H, g.P, r, g.stride_h, g.pad_h);
        const Span qs = inside(g.W, g.Q, s, g.stride_w, g.pad_w);
        const T* in = cols + ((nc * g.R + r) * g.S + s) * PQ;
        for (int64_t p = ps.lo; p < ps.hi; ++p) {
          T* o = plane + (p * g.stride_h - g.pad_h + r) * g.W;
          const int64_t w0 = s - g.pad_w;
          for (int64_t q = qs.lo; q < qs.hi; ++q) o[q * g.stride_w + w0] += in[p * g.Q + q];
        }
      }
  }
}

// x (N,C,H,W)  w (K,C,R,S)  b (K) or null  y (N,K,P,Q):  y_n = w cols(x_n) + b
template <typename T>
void forward_t(const Conv2dGeometry& g, const T* x, const T* w, const T* b, T* y, T* cols) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = g.C * g.H * g.W;
  const int64_t chunk = chunk_samples(g, dtype_of<T>());
  ConstMap<T> W(w, g.K, CRS);
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t n = std::min(chunk, g.N - n0);
    const T* src = x + n0 * CHW;
    if (!pointwise(g)) {
      im2col(g, src, n, cols);
      src = cols;
    }
    for (int64_t i = 0; i < n; ++i) {
      Map<T> Y(y + (n0 + i) * g.K * PQ, g.K, PQ);
      Y.noalias() = W * ConstMap<T>(src + i * CRS * PQ, CRS, PQ);
      if (b) Y.colwise() += Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(b, g.K);
    }
  }
}

// dy (N,K,P,Q)  w (K,C,R,S)  dx (N,C,H,W):  cols(dx_n) = w^T dy_n, then col2im
template <typename T>
void backward_data_t(const Conv2dGeometry& g, const T* dy, const T* w, T* dx, T* cols) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = g.C * g.H * g.W;
  const int64_t chunk = chunk_samples(g, dtype_of<T>());
  ConstMap<T> W(w, g.K, CRS);
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    const int64_t n = std::min(chunk, g.N - n0);
    T* dst = pointwise(g) ? dx + n0 * CHW : cols;
    for (int64_t i = 0; i < n; ++i)
      Map<T>(dst + i * CRS * PQ, CRS, PQ).noalias() =
          W.transpose() * ConstMap<T>(dy + (n0 + i) * g.K * PQ, g.K, PQ);
    if (!pointwise(g)) col2im(g, cols, n, dx + n0 * CHW);
  }
}

// x (N,C,H,W)  dy (N,K,P,Q)  dw (K,C,R,S) or null  db (K) or null:
// dw = sum_n dy_n cols(x_n)^T, samples in order; db = sum over n, p, q of dy, in that order.
template <typename T>
void backward_filter_t(const Conv2dGeometry& g, const T* x, const T* dy, T* dw, T* db, T* cols) {
  const int64_t CRS = g.C * g.R * g.S, PQ = g.P * g.Q, CHW = g.C * g.H * g.W;
  const int64_t chunk = chunk_samples(g, dtype_of<T>());
  if (dw) {
    Map<T> dW(dw, g.K, CRS);
    dW.setZero();
    for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
      const int64_t n = std::min(chunk, g.N - n0);
      const T* src = x + n0 * CHW;
      if (!pointwise(g)) {
        im2col(g, src, n, cols);
        src = cols;
      }
      for (int64_t i = 0; i < n; ++i)
        dW.noalias() += ConstMap<T>(dy + (n0 + i) * g.K * PQ, g.K, PQ) *
                        ConstMap<T>(src + i * CRS * PQ, CRS, PQ).transpose();
    }
  }
  if (!db) return;
#pragma omp parallel for schedule(static) if (g.N * g.K * PQ >= kParallelMin)
  for (int64_t k = 0; k < g.K; ++k) {
    T total = 0;
    for (int64_t n = 0; n < g.N; ++n) {
      const T* plane = dy + (n * g.K + k) * PQ;
      T sum = 0;
      for (int64_t j = 0; j < PQ; ++j) sum += plane[j];
      total += sum;
    }
    db[k] = total;
  }
}

// Checks a kernel's tensors against the geometry: element counts, one float dtype, scratch.
// w may be undefined only where the kernel allows it (a filter gradient nobody needs).
void check(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
           const Tensor& y, const Tensor& scratch) {
  FRUGAL_CHECK(x.defined() && y.defined(), op, ": missing input or output tensor");
  FRUGAL_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": needs f32 or f64, got ",
               dtype_name(x.dtype()));
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()), op,
               ": mixed dtypes");
  FRUGAL_CHECK(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P * g.Q &&
                   (!w.defined() || w.numel() == g.K * g.C * g.R * g.S),
               op, ": tensors x ", x.shape(), " w ", w.shape(), " y ", y.shape(),
               " do not match the geometry N,C,H,W = ", g.N, ",", g.C, ",", g.H, ",", g.W,
               " K,R,S = ", g.K, ",", g.R, ",", g.S, " P,Q = ", g.P, ",", g.Q);
  FRUGAL_CHECK(g.stride_h > 0 && g.stride_w > 0 && g.H + 2 * g.pad_h >= g.R &&
                   g.W + 2 * g.pad_w >= g.S && g.P == (g.H + 2 * g.pad_h - g.R) / g.stride_h + 1 &&
                   g.Q == (g.W + 2 * g.pad_w - g.S) / g.stride_w + 1,
               op, ": output ", g.P, "x", g.Q, " does not follow from input ", g.H, "x", g.W);
  const size_t need = scratch_bytes(g, x.dtype());
  FRUGAL_CHECK(need == 0 || (scratch.defined() && scratch.bytes() >= need), op, ": scratch of ",
               scratch.defined() ? scratch.bytes() : 0, " bytes, needs ", need);
}

template <typename T>
T* columns(const Conv2dGeometry& g, const Tensor& scratch) {
  return pointwise(g) ? nullptr : static_cast<T*>(scratch.raw());
}
template <typename T>
T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

size_t CpuBackend::conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const {
  return scratch_bytes(g, t);
}
size_t CpuBackend::conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const {
  return scratch_bytes(g, t);
}

void CpuBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                const Tensor& b, Tensor& y, Tensor& scratch) {
  FRUGAL_CHECK(w.defined(), "conv2d forward: missing weight");
  check("conv2d forward", g, x, w, y, scratch);
  FRUGAL_CHECK(!b.defined() || (b.numel() == g.K && b.dtype() == x.dtype()),
               "conv2d forward: bias ", b.shape(), " for ", g.K, " filters");
  if (x.dtype() == DType::f32)
    forward_t(g, x.data<float>(), w.data<float>(), optional<float>(b), y.data<float>(),
              columns<float>(g, scratch));
  else
    forward_t(g, x.data<double>(), w.data<double>(), optional<double>(b), y.data<double>(),
              columns<double>(g, scratch));
}

void CpuBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx, Tensor& scratch) {
  FRUGAL_CHECK(w.defined(), "conv2d backward data: missing weight");
  check("conv2d backward data", g, dx, w, dy, scratch);
  if (dy.dtype() == DType::f32)
    backward_data_t(g, dy.data<float>(), w.data<float>(), dx.data<float>(),
                    columns<float>(g, scratch));
  else
    backward_data_t(g, dy.data<double>(), w.data<double>(), dx.data<double>(),
                    columns<double>(g, scratch));
}

void CpuBackend::conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                        Tensor& dw, Tensor& db, Tensor& scratch) {
  check("conv2d backward filter", g, x, dw, dy, scratch);  // dw undefined: bias only
  FRUGAL_CHECK(!db.defined() || (db.numel() == g.K && db.dtype() == x.dtype()),
               "conv2d backward filter: bias gradient ", db.shape(), " for ", g.K, " filters");
  if (x.dtype() == DType::f32)
    backward_filter_t(g, x.data<float>(), dy.data<float>(), optional<float>(dw),
                      optional<float>(db), columns<float>(g, scratch));
  else
    backward_filter_t(g, x.data<double>(), dy.data<double>(), optional<double>(dw),
                      optional<double>(db), columns<double>(g, scratch));
}

}  // namespace frugal
