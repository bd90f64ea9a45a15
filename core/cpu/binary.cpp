// Broadcast arithmetic kernels of the CPU backend: the element formulas of core/broadcast.h
// (shared with the CUDA kernels) over static OpenMP splits, row by row of the innermost axis,
// with the common patterns (one shape; a broadcast operand over trailing axes; a bias's
// gradient, over leading axes) on loops of their own. Each gradient element is summed by one thread
// in the order reduce_grad fixes, so the bits are the CUDA kernels' and do not depend on the thread
// count.
#include <algorithm>

#include "core/broadcast.h"
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

constexpr int64_t kParallelMin = 16384;

// Rows of the innermost axis: each row's operand offsets are found once (the divisions), then
// the row runs with each operand's innermost stride (1, or 0 for a broadcast value).
struct Row {
  int64_t a, b;  // the operands' offsets at the row's first element
};
Row row_offsets(const Broadcast& g, int64_t row) {
  const int64_t c2 = row % g.size[2], c1 = row / g.size[2] % g.size[1];
  const int64_t c0 = row / (g.size[2] * g.size[1]);
  return {c0 * g.a[0] + c1 * g.a[1] + c2 * g.a[2], c0 * g.b[0] + c1 * g.b[1] + c2 * g.b[2]};
}

template <typename T>
void forward_t(BinaryKind k, const Broadcast& g, const T* a, const T* b, T* y) {
  if (g.numel() == 0) return;
  const int64_t inner = g.size[3], rows = g.numel() / inner, sa = g.a[3], sb = g.b[3];
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const Row o = row_offsets(g, r);
    const T *ar = a + o.a, *br = b + o.b;
    T* yr = y + r * inner;
    if (sa == 1 && sb == 1)
      for (int64_t q = 0; q < inner; ++q) yr[q] = binary_math::forward(k, ar[q], br[q]);
    else if (sa == 1)
      for (int64_t q = 0; q < inner; ++q) yr[q] = binary_math::forward(k, ar[q], br[0]);
    else if (sb == 1)
      for (int64_t q = 0; q < inner; ++q) yr[q] = binary_math::forward(k, ar[0], br[q]);
    else
      for (int64_t q = 0; q < inner; ++q) yr[q] = binary_math::forward(k, ar[0], br[0]);
  }
}

// The gradient of an operand of the output's shape: one term per element, row by row.
template <typename T>
void full_gradient_t(BinaryKind k, const Broadcast& g, int which, const T* a, const T* b,
                     const T* dy, T* dx) {
  const int64_t inner = g.size[3], rows = g.numel() / inner;
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const Row o = row_offsets(g, r);
    for (int64_t q = 0; q < inner; ++q) {
      const int64_t i = r * inner + q;
      const T av = a ? a[o.a + q * g.a[3]] : T(0), bv = b ? b[o.b + q * g.b[3]] : T(0);
      dx[i] = which == 0 ? binary_math::grad_a(k, av, bv, dy[i])
                         : binary_math::grad_b(k, av, bv, dy[i]);
    }
  }
}

// The gradient of an operand broadcast over trailing axes only (squeeze-and-excitation's
// (N,C,1,1) against (N,C,H,W)): element e reads the output block [e count, (e+1) count), summed
// in that order, as reduce_grad does. Where the other operand has the output's shape.
template <typename T>
bool suffix_gradient_t(BinaryKind k, const Broadcast& g, int which, const T* a, const T* b,
                       const T* dy, T* dx, int64_t n) {
  const int64_t* own = which == 0 ? g.a : g.b;
  const int64_t* other = which == 0 ? g.b : g.a;
  int64_t count = 1;
  int d = 3;
  for (; d >= 0 && own[d] == 0; --d) count *= g.size[d];
  for (; d >= 0; --d)
    if (own[d] == 0 && g.size[d] > 1) return false;  // broadcast along a leading axis too
  if (binary_math::operand_numel(g, other) != g.numel()) return false;
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t e = 0; e < n; ++e) {
    const T* d0 = dy + e * count;
    const T* full = (which == 0 ? b : a);
    const T* f0 = full ? full + e * count : nullptr;
    T acc = T(0);
    for (int64_t j = 0; j < count; ++j) {
      const T mine = which == 0 ? (a ? a[e] : T(0)) : (b ? b[e] : T(0));
      const T theirs = f0 ? f0[j] : T(0);
      const T term = which == 0 ? binary_math::grad_a(k, mine, theirs, d0[j])
                                : binary_math::grad_b(k, theirs, mine, d0[j]);
      acc = j == 0 ? term : acc + term;
    }
    dx[e] = acc;
  }
  return true;
}

// The gradient of an add's or sub's operand broadcast over leading axes only (a bias (C)
// against (N, L, C)): element e sums dy at r * n + e over the rows r = 0, 1, ... in that order,
// as reduce_grad does, with the elements of a block side by side in the inner loop. Only where
// the gradient is +-dy: a product's terms could be fused into the sums differently here.
template <typename T>
bool prefix_gradient_t(BinaryKind k, const Broadcast& g, int which, const T* dy, T* dx, int64_t n) {
  if (binary_backward_reads_inputs(k)) return false;
  const int64_t* own = which == 0 ? g.a : g.b;
  int64_t stride = 1;
  int d = 3;
  for (; d >= 0 && (g.size[d] == 1 || own[d] == stride); --d) stride *= g.size[d];
  for (; d >= 0; --d)
    if (own[d] != 0 && g.size[d] > 1) return false;  // not a trailing block of the output
  if (stride != n) return false;
  const int64_t rows = g.numel() / n;
  constexpr int64_t kBlock = 256;
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t e0 = 0; e0 < n; e0 += kBlock) {
    const int64_t e1 = std::min(n, e0 + kBlock);
    for (int64_t r = 0; r < rows; ++r) {
      const T* d0 = dy + r * n;
      for (int64_t e = e0; e < e1; ++e) {
        const T term = which == 0 ? binary_math::grad_a(k, T(0), T(0), d0[e])
                                  : binary_math::grad_b(k, T(0), T(0), d0[e]);
        dx[e] = r == 0 ? term : dx[e] + term;
      }
    }
  }
  return true;
}

template <typename T>
void gradient_t(BinaryKind k, const Broadcast& g, int which, const T* a, const T* b, const T* dy,
                T* dx) {
  const int64_t n = binary_math::operand_numel(g, which == 0 ? g.a : g.b);
  if (g.numel() == 0) return std::fill(dx, dx + n, T(0));  // a sum of no terms
  if (n == g.numel()) return full_gradient_t(k, g, which, a, b, dy, dx);
  if (suffix_gradient_t(k, g, which, a, b, dy, dx, n)) return;
  if (prefix_gradient_t(k, g, which, dy, dx, n)) return;
#pragma omp parallel for schedule(static) if (g.numel() > kParallelMin)
  for (int64_t e = 0; e < n; ++e) dx[e] = binary_math::reduce_grad(k, g, which, e, a, b, dy);
}

template <typename T>
void backward_t(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                const Tensor& dy, Tensor& da, Tensor& db) {
  const bool reads = binary_backward_reads_inputs(k);
  const T* av = reads && a.defined() ? a.data<T>() : nullptr;
  const T* bv = reads && b.defined() ? b.data<T>() : nullptr;
  int order[2];
  binary_gradient_order(g, order);
  for (int which : order) {
    Tensor& dx = which == 0 ? da : db;
    if (dx.defined()) gradient_t(k, g, which, av, bv, dy.data<T>(), dx.data<T>());
  }
}

}  // namespace

void CpuBackend::binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                Tensor& y) {
  check_binary_forward(k, g, a, b, y, device());
  if (y.dtype() == DType::f32)
    forward_t(k, g, a.data<float>(), b.data<float>(), y.data<float>());
  else
    forward_t(k, g, a.data<double>(), b.data<double>(), y.data<double>());
}

void CpuBackend::binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                 const Tensor& dy, Tensor& da, Tensor& db) {
  check_binary_backward(k, g, a, b, dy, da, db, device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(k, g, a, b, dy, da, db);
  else
    backward_t<double>(k, g, a, b, dy, da, db);
}

}  // namespace frugal
