// The CPU's batched matrix products: one Eigen product per batch over row-major maps, batches
// in parallel, each product single-threaded inside the parallel loop (Eigen does not thread
// within one), so a batch's bits depend neither on the batch count nor on the threads.
#include <Eigen/Core>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
using MatR = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
void product(const MatmulGeometry& g, const T* a, const T* b, T* c) {
  using CMap = Eigen::Map<const MatR<T>>;
  const CMap A(a, g.trans_a ? g.K : g.M, g.trans_a ? g.M : g.K);
  const CMap B(b, g.trans_b ? g.N : g.K, g.trans_b ? g.K : g.N);
  Eigen::Map<MatR<T>> C(c, g.M, g.N);
  if (g.trans_a && g.trans_b)
    C.noalias() = A.transpose() * B.transpose();
  else if (g.trans_a)
    C.noalias() = A.transpose() * B;
  else if (g.trans_b)
    C.noalias() = A * B.transpose();
  else
    C.noalias() = A * B;
}

template <typename T>
void batched(const MatmulGeometry& g, const T* a, const T* b, T* c) {
  if (g.M == 0 || g.N == 0) return;
  if (g.K == 0) {
    for (int64_t i = 0; i < g.batch * g.M * g.N; ++i) c[i] = T(0);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < g.batch; ++i)
    product(g, a + i * g.M * g.K, b + i * g.K * g.N, c + i * g.M * g.N);
}

}  // namespace

void CpuBackend::batched_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b,
                                Tensor& c) {
  check_matmul(g, a, b, c, device());
  if (a.dtype() == DType::f32)
    batched(g, a.data<float>(), b.data<float>(), c.data<float>());
  else
    batched(g, a.data<double>(), b.data<double>(), c.data<double>());
}

}  // namespace frugal
