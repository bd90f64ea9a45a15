// Elementwise binary arithmetic with broadcasting (ONNX's and NumPy's rule, over at most four
// dimensions once those read alike are merged): which operation, how an output element finds its
// two operands, and one element's result and partial derivatives, shared by the CPU and CUDA
// kernels so both compute the same formulas in the same order. Squeeze-and-excitation's x * s (s
// (N,C,1,1)), a per-channel scale or shift (C,1,1), and a scalar are all this.
#pragma once

#include <cmath>
#include <cstdint>

#if !defined(__CUDACC__)
#include "core/shape.h"
#endif

#if defined(__CUDACC__)
#define FRUGAL_BROADCAST_HD __host__ __device__
#else
#define FRUGAL_BROADCAST_HD
#endif

namespace frugal {

// add, sub, mul, div: arithmetic. mask: a where b != 0, else -0 (the sum's identity: x + -0 is x
// for every x, -0, infinities and NaNs included); unmask: a where b == 0, else -0. So
// where(c, a, b) is exactly mask(a, c) + unmask(b, c) (layers/select.h); the mask b gets no
// gradient. greater .. equal: 1 where `a op b` holds, else 0 (ONNX's bools as numbers);
// logical_or, logical_xor: 1 where either / exactly one of a and b is non-zero, else 0. No
// gradient reaches either operand of those seven.
enum class BinaryKind {
  add,
  sub,
  mul,
  div,
  mask,
  unmask,
  greater,
  less,
  greater_equal,
  less_equal,
  equal,
  logical_or,
  logical_xor,
  maximum,  // torch.maximum: NaN if either is; at a tie each operand gets half the gradient
  minimum,
  pow  // a^b, torch.pow of two tensors (GeM pooling's learned exponent); gradients as PyTorch's
};
// "add", "sub", "mul", "div", "mask", "unmask", "greater", "less", "greater_equal",
// "less_equal", "equal", "or", "xor", "maximum", "minimum", "pow"
const char* binary_name(BinaryKind k);
// The comparisons and logical ops, whose output is 0 or 1 and has no gradient.
FRUGAL_BROADCAST_HD inline bool binary_compares(BinaryKind k) {
  return k == BinaryKind::greater || k == BinaryKind::less || k == BinaryKind::greater_equal ||
         k == BinaryKind::less_equal || k == BinaryKind::equal || k == BinaryKind::logical_or ||
         k == BinaryKind::logical_xor;
}
// maximum or minimum.
FRUGAL_BROADCAST_HD inline bool binary_extreme(BinaryKind k) {
  return k == BinaryKind::maximum || k == BinaryKind::minimum;
}
// Whether operand `which` (0: a, 1: b) can carry a gradient: a and b of arithmetic, a of the
// masks, neither of a comparison.
FRUGAL_BROADCAST_HD inline bool binary_differentiable(BinaryKind k, int which) {
  if (binary_compares(k)) return false;
  return which == 0 || !(k == BinaryKind::mask || k == BinaryKind::unmask);
}

// The output's four sizes (shapes right-aligned, padded with 1s in front) and each operand's
// element strides, 0 along the axes it is broadcast over.
struct Broadcast {
  int64_t size[4] = {1, 1, 1, 1};
  int64_t a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
  FRUGAL_BROADCAST_HD int64_t numel() const { return size[0] * size[1] * size[2] * size[3]; }
};

namespace binary_math {

#if defined(__CUDA_ARCH__)
#define FRUGAL_BINARY_MATH(f) f  // CUDA's overloads for float and double
#else
#define FRUGAL_BINARY_MATH(f) std::f
#endif

// Output element i (row-major) -> its operand's element index, given that operand's strides.
FRUGAL_BROADCAST_HD inline int64_t operand_index(const Broadcast& g, const int64_t* stride,
                                                 int64_t i) {
  int64_t at = 0;
  for (int d = 3; d >= 0; --d) {
    at += i % g.size[d] * stride[d];
    i /= g.size[d];
  }
  return at;
}

template <typename T>
FRUGAL_BROADCAST_HD inline T forward(BinaryKind k, T a, T b) {
  switch (k) {
    case BinaryKind::add:
      return a + b;
    case BinaryKind::sub:
      return a - b;
    case BinaryKind::mul:
      return a * b;
    case BinaryKind::div:
      return a / b;
    case BinaryKind::mask:
      return b != T(0) ? a : -T(0);
    case BinaryKind::unmask:
      return b != T(0) ? -T(0) : a;
    case BinaryKind::greater:
      return a > b ? T(1) : T(0);
    case BinaryKind::less:
      return a < b ? T(1) : T(0);
    case BinaryKind::greater_equal:
      return a >= b ? T(1) : T(0);
    case BinaryKind::less_equal:
      return a <= b ? T(1) : T(0);
    case BinaryKind::equal:
      return a == b ? T(1) : T(0);
    case BinaryKind::logical_or:
      return a != T(0) || b != T(0) ? T(1) : T(0);
    case BinaryKind::maximum:
      return a != a || a > b ? a : b;  // a where a is NaN, b where b is: NaN from either
    case BinaryKind::minimum:
      return a != a || a < b ? a : b;
    case BinaryKind::pow:
      return FRUGAL_BINARY_MATH(pow)(a, b);
    default:  // logical_xor
      return (a != T(0)) != (b != T(0)) ? T(1) : T(0);
  }
}

// The share of maximum's (minimum's) gradient that goes to a, as torch.maximum's backward
// gives it: none where b is the larger (smaller), half at a tie, else all of it (where either is
// NaN too: both operands get dy there, as in PyTorch).
template <typename T>
FRUGAL_BROADCAST_HD inline T extreme_share(BinaryKind k, T a, T b, T dy) {
  if (a == b) return dy / T(2);
  return (k == BinaryKind::maximum ? a < b : a > b) ? T(0) : dy;
}

// dy times d(a op b)/da and d(a op b)/db at one element.
template <typename T>
FRUGAL_BROADCAST_HD inline T grad_a(BinaryKind k, T a, T b, T dy) {
  switch (k) {
    case BinaryKind::maximum:
    case BinaryKind::minimum:
      return extreme_share(k, a, b, dy);
    case BinaryKind::add:
    case BinaryKind::sub:
      return dy;
    case BinaryKind::mul:
      return dy * b;
    case BinaryKind::div:
      return dy / b;
    case BinaryKind::mask:
      return b != T(0) ? dy : T(0);
    case BinaryKind::unmask:
      return b != T(0) ? T(0) : dy;
    case BinaryKind::pow:  // dy b a^(b - 1), 0 where b is 0, as PyTorch
      return b == T(0) ? T(0) : dy * b * FRUGAL_BINARY_MATH(pow)(a, b - T(1));
    default:  // a comparison: no gradient
      return T(0);
  }
}
template <typename T>
FRUGAL_BROADCAST_HD inline T grad_b(BinaryKind k, T a, T b, T dy) {
  switch (k) {
    case BinaryKind::add:
      return dy;
    case BinaryKind::sub:
      return -dy;
    case BinaryKind::mul:
      return dy * a;
    case BinaryKind::div:
      return -(dy * (a / b) / b);
    case BinaryKind::maximum:
    case BinaryKind::minimum:
      return extreme_share(k, b, a, dy);
    case BinaryKind::pow:  // dy a^b ln a, 0 where a is 0 and b >= 0, as PyTorch
      return a == T(0) && b >= T(0)
                 ? T(0)
                 : dy * (FRUGAL_BINARY_MATH(pow)(a, b) * FRUGAL_BINARY_MATH(log)(a));
    default:  // a mask or a comparison: no gradient
      return T(0);
  }
}

// Elements of an operand with strides `stride`: the output's sizes along the axes it has.
FRUGAL_BROADCAST_HD inline int64_t operand_numel(const Broadcast& g, const int64_t* stride) {
  int64_t n = 1;
  for (int d = 0; d < 4; ++d) n *= stride[d] != 0 ? g.size[d] : 1;
  return n;
}

// The output elements that read one operand's element e: `count` of them, the j-th (row-major)
// at the free coordinates j takes over the operand's broadcast axes and e's fixed coordinates.
struct GradWalk {
  int64_t fixed[4], free_size[4], count;
};
FRUGAL_BROADCAST_HD inline GradWalk grad_walk(const Broadcast& g, const int64_t* own, int64_t e) {
  GradWalk w;
  w.count = 1;
  for (int d = 3; d >= 0; --d) {
    const bool has = own[d] != 0 || g.size[d] == 1;
    w.fixed[d] = has ? e % g.size[d] : 0;
    if (has) e /= g.size[d];
    w.free_size[d] = has ? 1 : g.size[d];
    w.count *= w.free_size[d];
  }
  return w;
}

// The j-th term of reduce_grad's sum: grad_a (grad_b) at the j-th output element of the walk.
template <typename T>
FRUGAL_BROADCAST_HD inline T grad_term(BinaryKind k, const Broadcast& g, int which,
                                       const GradWalk& w, int64_t j, const T* a, const T* b,
                                       const T* dy) {
  int64_t c[4];
  for (int d = 3; d >= 0; --d) {
    c[d] = w.free_size[d] == 1 ? w.fixed[d] : j % w.free_size[d];
    j /= w.free_size[d];
  }
  const int64_t i = ((c[0] * g.size[1] + c[1]) * g.size[2] + c[2]) * g.size[3] + c[3];
  const int64_t ai = c[0] * g.a[0] + c[1] * g.a[1] + c[2] * g.a[2] + c[3] * g.a[3];
  const int64_t bi = c[0] * g.b[0] + c[1] * g.b[1] + c[2] * g.b[2] + c[3] * g.b[3];
  const T av = a ? a[ai] : T(0), bv = b ? b[bi] : T(0);
  return which == 0 ? grad_a(k, av, bv, dy[i]) : grad_b(k, av, bv, dy[i]);
}

// a + b rounded once, never fused with the multiplication that made b: nvcc contracts
// acc + dy * x into one fused multiply-add where it can, and the CPU never does.
template <typename T>
FRUGAL_BROADCAST_HD inline T add_unfused(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 4)
    return __fadd_rn(a, b);
  else
    return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// The gradient of one operand (which = 0: a, 1: b) at its element e: over the output elements
// that read it, in row-major order, the sum of grad_a (grad_b); the first term as it is, so an
// operand with the output's shape gets its one term's exact bits. a and b may be null for add
// and sub, which do not read them.
template <typename T>
FRUGAL_BROADCAST_HD inline T reduce_grad(BinaryKind k, const Broadcast& g, int which, int64_t e,
                                         const T* a, const T* b, const T* dy) {
  const GradWalk w = grad_walk(g, which == 0 ? g.a : g.b, e);
  T acc = T(0);
  for (int64_t j = 0; j < w.count; ++j) {
    const T term = grad_term(k, g, which, w, j, a, b, dy);
    acc = j == 0 ? term : add_unfused(acc, term);
  }
  return acc;
}

#undef FRUGAL_BINARY_MATH

}  // namespace binary_math

// The order Backend::binary_backward writes the gradients in (0: da, 1: db): a reduced one
// before a full-sized one, db before da when both are full-sized, so the one written last may
// alias dy.
inline void binary_gradient_order(const Broadcast& g, int order[2]) {
  const bool a_full = binary_math::operand_numel(g, g.a) == g.numel();
  const bool b_full = binary_math::operand_numel(g, g.b) == g.numel();
  const bool a_last = a_full || !b_full;
  order[0] = a_last ? 1 : 0, order[1] = a_last ? 0 : 1;
}

// Whether backward needs the operands' values: mul, div, maximum, minimum and pow do, and the
// masks (their mask b); add and sub do not, and a comparison has no backward.
inline bool binary_backward_reads_inputs(BinaryKind k) {
  return k == BinaryKind::mul || k == BinaryKind::div || k == BinaryKind::mask ||
         k == BinaryKind::unmask || binary_extreme(k) || k == BinaryKind::pow;
}
// Whether backward reads operand `which` (0: a, 1: b) for the gradients wanted: a for db
// (mul's a * dy, div's -dy * a / b^2), b for da (mul's b * dy, div's dy / b, a mask's
// selection) and for div's db; both for either gradient of maximum and minimum (which operand
// is the extreme) and of pow.
// BinaryOp's Roles::reads_only_for declares the same to the planner.
inline bool binary_backward_reads_operand(BinaryKind k, int which, bool wants_da, bool wants_db) {
  if (!binary_backward_reads_inputs(k)) return false;
  if (binary_extreme(k) || k == BinaryKind::pow) return wants_da || wants_db;
  if (k == BinaryKind::mask || k == BinaryKind::unmask) return which == 1 && wants_da;
  return which == 0 ? wants_db : wants_da || (k == BinaryKind::div && wants_db);
}

#if !defined(__CUDACC__)
// NumPy's broadcast of shapes a and b (any ranks, 0 included): right-aligned, each axis of the
// same extent or 1, the output's extent the larger; throws naming both shapes and the axis.
Shape broadcast_shape(const Shape& a, const Shape& b);
// The broadcast of operands of shapes a and b (rank 1 and up): right-aligned, each axis of the
// same size or 1. Past rank 4, axes are merged where both operands read them alike, and at
// most four may remain. Writes the output's shape to *out; throws naming both shapes otherwise.
Broadcast broadcast_of(const Shape& a, const Shape& b, Shape* out);
#endif

}  // namespace frugal
