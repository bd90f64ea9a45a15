// Linear (fully connected) kernels of the CPU backend: Eigen GEMMs over row-major maps, threaded
// by OpenMP; the bias gradient sums the batch in order, one thread per output feature.
#include <Eigen/Core>

#include "core/cpu/cpu_backend.h"

namespace frugal {

namespace {

template <typename T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<MatR<T>>;
template <typename T>
using ConstMap = Eigen::Map<const MatR<T>>;

// Loops over fewer elements than this run on one thread: forking costs more than they do.
constexpr int64_t kParallelMin = 32768;

// x (N,I)  w (O,I)  b (O) or null  y (N,O):  y = x w^T + b
template <typename T>
void forward_t(const T* x, const T* w, const T* b, T* y, int64_t N, int64_t I, int64_t O) {
  Map<T>(y, N, O).noalias() = ConstMap<T>(x, N, I) * ConstMap<T>(w, O, I).transpose();
  if (!b) return;
#pragma omp parallel for schedule(static) if (N * O >= kParallelMin)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) y[n * O + o] += b[o];
}

// dy (N,O)  w (O,I)  dx (N,I):  dx = dy w
template <typename T>
void backward_data_t(const T* dy, const T* w, T* dx, int64_t N, int64_t I, int64_t O) {
  Map<T>(dx, N, I).noalias() = ConstMap<T>(dy, N, O) * ConstMap<T>(w, O, I);
}

// x (N,I)  dy (N,O)  dw (O,I) or null  db (O) or null:  dw = dy^T x;  db = sum_n dy, n in order
template <typename T>
void backward_weight_t(const T* x, const T* dy, T* dw, T* db, int64_t N, int64_t I, int64_t O) {
  if (dw) Map<T>(dw, O, I).noalias() = ConstMap<T>(dy, N, O).transpose() * ConstMap<T>(x, N, I);
  if (!db) return;
#pragma omp parallel for schedule(static) if (N * O >= kParallelMin)
  for (int64_t o = 0; o < O; ++o) {
    T sum = 0;
    for (int64_t n = 0; n < N; ++n) sum += dy[n * O + o];
    db[o] = sum;
  }
}

// Checks x (N,I), w (O,I), y (N,O) and an optional bias (O) for one float dtype.
void check(const char* op, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& y) {
  FRUGAL_CHECK(x.dtype() == DType::f32 || x.dtype() == DType::f64, op, ": needs f32 or f64, got ",
               dtype_name(x.dtype()));
  FRUGAL_CHECK(
      x.shape().rank() == 2 && y.shape().rank() == 2 && (!w.defined() || w.shape().rank() == 2), op,
      ": expects x (N,I), w (O,I), y (N,O); got x ", x.shape(), " w ", w.shape(), " y ", y.shape());
  const int64_t N = x.shape()[0], I = x.shape()[1], O = y.shape()[1];
  FRUGAL_CHECK(y.shape()[0] == N && (!w.defined() || w.shape() == Shape{O, I}), op, ": x ",
               x.shape(), " w ", w.shape(), " y ", y.shape(), " do not agree");
  FRUGAL_CHECK(!b.defined() || b.shape() == Shape{O}, op, ": bias ", b.shape(), " for ", O,
               " outputs");
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()) &&
                   (!b.defined() || b.dtype() == x.dtype()),
               op, ": mixed dtypes");
}

template <typename T>
T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  FRUGAL_CHECK(w.defined(), "linear forward: missing weight");
  check("linear forward", x, w, b, y);
  const int64_t N = x.shape()[0], I = x.shape()[1], O = w.shape()[0];
  if (x.dtype() == DType::f32)
    forward_t(x.data<float>(), w.data<float>(), optional<float>(b), y.data<float>(), N, I, O);
  else
    forward_t(x.data<double>(), w.data<double>(), optional<double>(b), y.data<double>(), N, I, O);
}

void CpuBackend::linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  FRUGAL_CHECK(w.defined(), "linear backward data: missing weight");
  check("linear backward data", dx, w, Tensor(), dy);
  const int64_t N = dx.shape()[0], I = dx.shape()[1], O = w.shape()[0];
  if (dy.dtype() == DType::f32)
    backward_data_t(dy.data<float>(), w.data<float>(), dx.data<float>(), N, I, O);
  else
    backward_data_t(dy.data<double>(), w.data<double>(), dx.data<double>(), N, I, O);
}

void CpuBackend::linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  check("linear backward weight", x, dw, db, dy);  // dw or db may be undefined
  const int64_t N = x.shape()[0], I = x.shape()[1], O = dy.shape()[1];
  if (x.dtype() == DType::f32)
    backward_weight_t(x.data<float>(), dy.data<float>(), optional<float>(dw), optional<float>(db),
                      N, I, O);
  else
    backward_weight_t(x.data<double>(), dy.data<double>(), optional<double>(dw),
                      optional<double>(db), N, I, O);
}

}  // namespace frugal
