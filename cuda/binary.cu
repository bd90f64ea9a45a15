// Broadcast arithmetic kernels of the CUDA backend: one thread per output element (forward) or
// per gradient element (backward; a block per gradient element where each sums many terms, as a
// squeeze-excitation scale's over H x W), over the element formulas and the summation order the
// CPU twin uses (core/broadcast.h).
#include "core/broadcast.h"
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void binary_forward_kernel(BinaryKind k, Broadcast g, const T* a, const T* b, T* y) {
  const int64_t i = thread_index();
  if (i < g.numel())
    y[i] = binary_math::forward(k, a[binary_math::operand_index(g, g.a, i)],
                                b[binary_math::operand_index(g, g.b, i)]);
}

template <typename T>
__global__ void binary_gradient_kernel(BinaryKind k, Broadcast g, int which, const T* a, const T* b,
                                       const T* dy, T* dx, int64_t n) {
  const int64_t e = thread_index();
  if (e < n) dx[e] = binary_math::reduce_grad(k, g, which, e, a, b, dy);
}

template <typename T>
__global__ void binary_gradient_blocks_kernel(BinaryKind k, Broadcast g, int which, const T* a,
                                              const T* b, const T* dy, T* dx) {
  const int64_t e = blockIdx.x;
  const binary_math::GradWalk w = binary_math::grad_walk(g, which == 0 ? g.a : g.b, e);
  const T sum = ordered_block_sum<T>(
      w.count, [&](int64_t j) { return binary_math::grad_term(k, g, which, w, j, a, b, dy); });
  if (threadIdx.x == 0) dx[e] = sum;
}

template <typename T>
void backward_t(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                const Tensor& dy, Tensor& da, Tensor& db) {
  const bool reads = binary_backward_reads_inputs(k);
  const T* av = reads && a.defined() ? a.device_data<T>() : nullptr;
  const T* bv = reads && b.defined() ? b.device_data<T>() : nullptr;
  int order[2];
  binary_gradient_order(g, order);
  for (int which : order) {
    Tensor& dx = which == 0 ? da : db;
    if (!dx.defined()) continue;
    const int64_t n = binary_math::operand_numel(g, which == 0 ? g.a : g.b);
    if (ordered_blocks_pay(g.numel() / std::max<int64_t>(n, 1), n))
      launch_blocks(n, binary_gradient_blocks_kernel<T>, k, g, which, av, bv, dy.device_data<T>(),
                    dx.device_data<T>());
    else
      launch(n, binary_gradient_kernel<T>, k, g, which, av, bv, dy.device_data<T>(),
             dx.device_data<T>(), n);
  }
}

}  // namespace

void CudaBackend::binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                 Tensor& y) {
  check_binary_forward(k, g, a, b, y, device());
  const int64_t n = g.numel();
  if (y.dtype() == DType::f32)
    launch(n, binary_forward_kernel<float>, k, g, a.device_data<float>(), b.device_data<float>(),
           y.device_data<float>());
  else
    launch(n, binary_forward_kernel<double>, k, g, a.device_data<double>(), b.device_data<double>(),
           y.device_data<double>());
}

void CudaBackend::binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a,
                                  const Tensor& b, const Tensor& dy, Tensor& da, Tensor& db) {
  check_binary_backward(k, g, a, b, dy, da, db, device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(k, g, a, b, dy, da, db);
  else
    backward_t<double>(k, g, a, b, dy, da, db);
}

}  // namespace frugal
