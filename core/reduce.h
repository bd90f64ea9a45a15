// Reductions over the rows of a tensor (ONNX's ReduceSum, ReduceMax, ReduceL2, ...): which one,
// and one element's input gradient, shared by the CPU and CUDA kernels so both compute the
// same formulas. NaN propagates, as in PyTorch.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define FRUGAL_REDUCE_HD __host__ __device__
#else
#define FRUGAL_REDUCE_HD
#endif

namespace frugal {

enum class Reduction {
  sum,          // sum x
  mean,         // sum x / C
  max,          // the largest x (the first one's column kept for backward; NaN wins)
  min,          // the smallest x (likewise)
  sum_square,   // sum x^2
  l1,           // sum |x|
  l2,           // sqrt(sum x^2)
  log_sum_exp,  // m + log sum e^(x - m), m the largest x (m where m is infinite)
};
const char* reduction_name(Reduction r);  // "reduce_sum", ...

// Whether backward reads x (sum_square, l1, l2, log_sum_exp), y (l2, log_sum_exp), and the
// saved column of the extreme (max, min).
FRUGAL_REDUCE_HD inline bool reduction_reads_input(Reduction r) {
  return r == Reduction::sum_square || r == Reduction::l1 || r == Reduction::l2 ||
         r == Reduction::log_sum_exp;
}
FRUGAL_REDUCE_HD inline bool reduction_reads_output(Reduction r) {
  return r == Reduction::l2 || r == Reduction::log_sum_exp;
}
FRUGAL_REDUCE_HD inline bool reduction_keeps_index(Reduction r) {
  return r == Reduction::max || r == Reduction::min;
}

namespace reduce_math {

#if defined(__CUDA_ARCH__)
#define FRUGAL_REDUCE_MATH(f) f
#else
#define FRUGAL_REDUCE_MATH(f) std::f
#endif

// d x_j of one row with C columns, from its dy, x_j and y (max and min: `at` whether j is the
// kept column), as PyTorch's backward formulas: sum dy; mean dy / C; sum_square 2 x dy; l1
// sign(x) dy (0 at 0); l2 x / y dy (0 where y is 0); log_sum_exp e^(x - y) dy.
template <typename T>
FRUGAL_REDUCE_HD inline T grad(Reduction r, T dy, T x, T y, long long C, bool at) {
  switch (r) {
    case Reduction::sum:
      return dy;
    case Reduction::mean:
      return dy / static_cast<T>(C);
    case Reduction::max:
    case Reduction::min:
      return at ? dy : T(0);
    case Reduction::sum_square:
      return T(2) * x * dy;
    case Reduction::l1:
      return x > T(0) ? dy : x < T(0) ? -dy : x == T(0) ? T(0) : x;  // NaN stays NaN
    case Reduction::l2:
      return y == T(0) ? T(0) : x / y * dy;
    case Reduction::log_sum_exp:
      return FRUGAL_REDUCE_MATH(exp)(x - y) * dy;
  }
  return T(0);
}

#undef FRUGAL_REDUCE_MATH

}  // namespace reduce_math
}  // namespace frugal
