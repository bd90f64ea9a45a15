// Linear (fully connected) kernels of the CPU backend: Eigen GEMMs over row-major maps. Eigen
// threads a GEMM itself (OpenMP, outside any parallel region) but not a matrix-vector product,
// so at batch 1 forward and backward data split the output over threads by hand. The bias
// gradient sums the batch in order, one thread per output feature.
#include <omp.h>

#include <Eigen/Core>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using Map = Eigen::Map<MatR<T>>;
template <typename T>
using ConstMap = Eigen::Map<const MatR<T>>;
template <typename T>
using ConstBlock = Eigen::Map<const MatR<T>, 0, Eigen::OuterStride<>>;

// Loops over fewer elements than this run on one thread: forking costs more than they do.
constexpr int64_t kParallelMin = 32768;

// Runs body(j0, j1) on `parts` static, equal ranges of [0, n) in one OpenMP region (a smaller
// team takes the ranges in turn, so the split depends on `parts` only).
template <typename F>
void split(int parts, int64_t n, const F& body) {
#pragma omp parallel num_threads(parts)
  for (int part = omp_get_thread_num(); part < parts; part += omp_get_num_threads())
    body(n * part / parts, n * (part + 1) / parts);
}
// Whether a batch-1 product is worth splitting by hand.
bool split_vector(int threads, int64_t N, int64_t I, int64_t O) {
  return N == 1 && threads > 1 && I * O >= kParallelMin;
}

// x (N,I)  w (O,I)  b (O) or null  y (N,O):  y = x w^T + b
template <typename T>
void forward_t(int threads, const T* x, const T* w, const T* b, T* y, int64_t N, int64_t I,
               int64_t O) {
  if (split_vector(threads, N, I, O))
    split(threads, O, [&](int64_t o0, int64_t o1) {
      Eigen::Map<MatR<T>>(y + o0, 1, o1 - o0).noalias() =
          ConstMap<T>(x, 1, I) * ConstMap<T>(w + o0 * I, o1 - o0, I).transpose();
    });
  else
    Map<T>(y, N, O).noalias() = ConstMap<T>(x, N, I) * ConstMap<T>(w, O, I).transpose();
  if (!b) return;
#pragma omp parallel for schedule(static) if (N * O >= kParallelMin)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) y[n * O + o] += b[o];
}

// dy (N,O)  w (O,I)  dx (N,I):  dx = dy w
template <typename T>
void backward_data_t(int threads, const T* dy, const T* w, T* dx, int64_t N, int64_t I, int64_t O) {
  if (split_vector(threads, N, I, O))
    split(threads, I, [&](int64_t i0, int64_t i1) {
      Eigen::Map<MatR<T>>(dx + i0, 1, i1 - i0).noalias() =
          ConstMap<T>(dy, 1, O) * ConstBlock<T>(w + i0, O, i1 - i0, Eigen::OuterStride<>(I));
    });
  else
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

template <typename T>
T* optional(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

void CpuBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  check_defined("linear forward", "weight", w);
  const auto [N, I, O] = check_linear("linear forward", x, w, b, y, device());
  if (x.dtype() == DType::f32)
    forward_t(threads(), x.data<float>(), w.data<float>(), optional<float>(b), y.data<float>(), N,
              I, O);
  else
    forward_t(threads(), x.data<double>(), w.data<double>(), optional<double>(b), y.data<double>(),
              N, I, O);
}

void CpuBackend::linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  check_defined("linear backward data", "weight", w);
  const auto [N, I, O] = check_linear("linear backward data", dx, w, Tensor(), dy, device());
  if (dy.dtype() == DType::f32)
    backward_data_t(threads(), dy.data<float>(), w.data<float>(), dx.data<float>(), N, I, O);
  else
    backward_data_t(threads(), dy.data<double>(), w.data<double>(), dx.data<double>(), N, I, O);
}

void CpuBackend::linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  // dw or db may be undefined
  const auto [N, I, O] = check_linear("linear backward weight", x, dw, db, dy, device());
  if (x.dtype() == DType::f32)
    backward_weight_t(x.data<float>(), dy.data<float>(), optional<float>(dw), optional<float>(db),
                      N, I, O);
  else
    backward_weight_t(x.data<double>(), dy.data<double>(), optional<double>(dw),
                      optional<double>(db), N, I, O);
}

}  // namespace frugal
