// Broadcast arithmetic kernels of the CPU backend: the element formulas of core/broadcast.h
// (shared with the CUDA kernels) over static OpenMP splits. Each gradient element is summed by
// one thread in the order reduce_grad fixes, so the bits do not depend on the thread count.
#include "core/broadcast.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

constexpr int64_t kParallelMin = 16384;

template <typename T>
void forward_t(BinaryKind k, const Broadcast& g, const T* a, const T* b, T* y) {
  const int64_t n = g.numel();
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i)
    y[i] = binary_math::forward(k, a[binary_math::operand_index(g, g.a, i)],
                                b[binary_math::operand_index(g, g.b, i)]);
}

template <typename T>
void gradient_t(BinaryKind k, const Broadcast& g, int which, const T* a, const T* b, const T* dy,
                T* dx) {
  const int64_t n = binary_math::operand_numel(g, which == 0 ? g.a : g.b);
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t e = 0; e < n; ++e) dx[e] = binary_math::reduce_grad(k, g, which, e, a, b, dy);
}

template <typename T>
void backward_t(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                const Tensor& dy, Tensor& da, Tensor& db) {
  const bool reads = binary_backward_reads_inputs(k);
  const T* av = reads ? a.data<T>() : nullptr;
  const T* bv = reads ? b.data<T>() : nullptr;
  const bool a_full = binary_math::operand_numel(g, g.a) == g.numel();
  const bool b_full = binary_math::operand_numel(g, g.b) == g.numel();
  const bool a_last = a_full || !b_full;  // see Backend::binary_backward
  for (int which : {a_last ? 1 : 0, a_last ? 0 : 1}) {
    Tensor& dx = which == 0 ? da : db;
    if (dx.defined()) gradient_t(k, g, which, av, bv, dy.data<T>(), dx.data<T>());
  }
}

}  // namespace

void CpuBackend::binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                Tensor& y) {
  check_defined(binary_name(k), "operand a", a);
  check_defined(binary_name(k), "operand b", b);
  check_binary(binary_name(k), g, a, b, y, device());
  if (y.dtype() == DType::f32)
    forward_t(k, g, a.data<float>(), b.data<float>(), y.data<float>());
  else
    forward_t(k, g, a.data<double>(), b.data<double>(), y.data<double>());
}

void CpuBackend::binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                 const Tensor& dy, Tensor& da, Tensor& db) {
  const char* op = binary_name(k);
  if (binary_backward_reads_inputs(k)) {
    check_defined(op, "operand a", a);
    check_defined(op, "operand b", b);
    check_binary(op, g, a, b, dy, device());
  }
  check_binary(op, g, da, db, dy, device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(k, g, a, b, dy, da, db);
  else
    backward_t<double>(k, g, a, b, dy, da, db);
}

}  // namespace frugal
