// The CUDA backend's batched matrix products: one strided-batched cuBLAS GEMM (full f32/f64
// math) on row-major matrices, read by cuBLAS as their column-major transposes: C = op(A) op(B)
// row-major is C^T = op(B)^T op(A)^T column-major.
#include <type_traits>

#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"

namespace frugal {

namespace {

int to_int(int64_t v) {
  return cublas_int(v, "batched_matmul");
}

template <typename T>
void gemm_batched(cublasHandle_t h, const MatmulGeometry& g, const T* a, const T* b, T* c) {
  const T one = 1, zero = 0;
  // Column-major: C^T (N, M) = op(B)^T (N, K) op(A)^T (K, M).
  const cublasOperation_t ob = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t oa = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ldb = g.trans_b ? g.K : g.N, lda = g.trans_a ? g.M : g.K;
  if constexpr (std::is_same_v<T, float>)
    FRUGAL_CUBLAS_CHECK(cublasSgemmStridedBatched(
        h, ob, oa, to_int(g.N), to_int(g.M), to_int(g.K), &one, b, to_int(ldb), g.K * g.N, a,
        to_int(lda), g.M * g.K, &zero, c, to_int(g.N), g.M * g.N, to_int(g.batch)));
  else
    FRUGAL_CUBLAS_CHECK(cublasDgemmStridedBatched(
        h, ob, oa, to_int(g.N), to_int(g.M), to_int(g.K), &one, b, to_int(ldb), g.K * g.N, a,
        to_int(lda), g.M * g.K, &zero, c, to_int(g.N), g.M * g.N, to_int(g.batch)));
}

}  // namespace

void CudaBackend::batched_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b,
                                 Tensor& c) {
  check_matmul(g, a, b, c, device());
  if (g.batch == 0 || g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    fill(c, 0.0);
    return;
  }
  if (a.dtype() == DType::f32)
    gemm_batched(cublas_, g, a.device_data<float>(), b.device_data<float>(),
                 c.device_data<float>());
  else
    gemm_batched(cublas_, g, a.device_data<double>(), b.device_data<double>(),
                 c.device_data<double>());
}

}  // namespace frugal
