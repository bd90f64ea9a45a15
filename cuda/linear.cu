// Linear (fully connected) kernels of the CUDA backend: cuBLAS GEMMs (full f32/f64 math, no
// atomics) on row-major tensors, read by cuBLAS as their column-major transposes; the bias and
// its gradient are the per-channel kernels of cuda/channel.cu.
#include <type_traits>

#include "core/kernel_checks.h"
#include "cuda/channel.h"
#include "cuda/cuda_backend.h"

namespace frugal {

namespace {
int to_int(int64_t v) {
  return cublas_int(v, "linear");
}

// Column-major C (m,n) = op(A) op(B) with op(A) (m,k), op(B) (k,n); T is float or double.
template <typename T>
void gemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* A,
          int64_t lda, const T* B, int64_t ldb, T* C, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const T one = 1, zero = 0;
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  if constexpr (std::is_same_v<T, float>)
    FRUGAL_CUBLAS_CHECK(cublasSgemm(h, oa, ob, to_int(m), to_int(n), to_int(k), &one, A,
                                    to_int(lda), B, to_int(ldb), &zero, C, to_int(ldc)));
  else
    FRUGAL_CUBLAS_CHECK(cublasDgemm(h, oa, ob, to_int(m), to_int(n), to_int(k), &one, A,
                                    to_int(lda), B, to_int(ldb), &zero, C, to_int(ldc)));
}

// A row-major (r,c) matrix is the column-major (c,r) matrix of the same bytes, so each
// row-major product below is written as its transpose.

// x (N,I)  w (O,I)  y (N,O):  y = x w^T, i.e. y^T (O,N) = w (O,I) x^T (I,N)
template <typename T>
void forward_t(cublasHandle_t h, const LinearDims& d, const T* x, const T* w, T* y) {
  gemm<T>(h, true, false, d.O, d.N, d.I, w, d.I, x, d.I, y, d.O);
}

// dy (N,O)  w (O,I)  dx (N,I):  dx = dy w, i.e. dx^T (I,N) = w^T (I,O) dy^T (O,N)
template <typename T>
void backward_data_t(cublasHandle_t h, const LinearDims& d, const T* dy, const T* w, T* dx) {
  gemm<T>(h, false, false, d.I, d.N, d.O, w, d.I, dy, d.O, dx, d.I);
}

// x (N,I)  dy (N,O)  dw (O,I):  dw = dy^T x, i.e. dw^T (I,O) = x^T (I,N) dy (N,O)
template <typename T>
void backward_weight_t(cublasHandle_t h, const LinearDims& d, const T* x, const T* dy, T* dw) {
  gemm<T>(h, false, true, d.I, d.O, d.N, x, d.I, dy, d.O, dw, d.I);
}
}  // namespace

void CudaBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  check_defined("linear forward", "weight", w);
  const LinearDims d = check_linear("linear forward", x, w, b, y, device());
  if (x.dtype() == DType::f32)
    forward_t(cublas_, d, x.device_data<float>(), w.device_data<float>(), y.device_data<float>());
  else
    forward_t(cublas_, d, x.device_data<double>(), w.device_data<double>(),
              y.device_data<double>());
  if (b.defined()) add_channel_bias(b, d.N, d.O, 1, y);
}

void CudaBackend::linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  check_defined("linear backward data", "weight", w);
  const LinearDims d = check_linear("linear backward data", dx, w, Tensor(), dy, device());
  if (dy.dtype() == DType::f32)
    backward_data_t(cublas_, d, dy.device_data<float>(), w.device_data<float>(),
                    dx.device_data<float>());
  else
    backward_data_t(cublas_, d, dy.device_data<double>(), w.device_data<double>(),
                    dx.device_data<double>());
}

void CudaBackend::linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw,
                                         Tensor& db) {
  const LinearDims d =
      check_linear("linear backward weight", x, dw, db, dy, device());  // dw, db optional
  if (dw.defined()) {
    if (x.dtype() == DType::f32)
      backward_weight_t(cublas_, d, x.device_data<float>(), dy.device_data<float>(),
                        dw.device_data<float>());
    else
      backward_weight_t(cublas_, d, x.device_data<double>(), dy.device_data<double>(),
                        dw.device_data<double>());
  }
  if (db.defined()) sum_channels(dy, d.N, d.O, 1, db, partials(), sums());
}

}  // namespace frugal
