// Smooth and piecewise-linear activations (the ones modern CNNs and ONNX models use): which
// one, what its backward reads, and one element's forward and derivative, shared by the CPU and
// CUDA kernels so both compute the same formulas. NaN propagates through every one of them, as
// in PyTorch.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define FRUGAL_ACTIVATION_HD __host__ __device__
#else
#define FRUGAL_ACTIVATION_HD
#endif

namespace frugal {

enum class Activation {
  sigmoid,      // 1 / (1 + e^-x)
  tanh,         // tanh x
  silu,         // x sigmoid(x)  (Swish)
  gelu,         // x Phi(x), Phi the standard normal CDF (PyTorch's exact GELU)
  gelu_tanh,    // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (gelu(approximate="tanh"))
  erf,          // the error function (torch.erf)
  sqrt,         // the square root (NaN below 0, as torch.sqrt)
  hardsigmoid,  // clamp(x / 6 + 1/2, 0, 1)
  hardswish,    // x hardsigmoid(x)
  relu6,        // clamp(x, 0, 6)
  abs,          // |x| (torch.abs; a norm's first step in PyTorch's ONNX export)
  elu,          // x > 0 ? x : e^x - 1 (nn.ELU, alpha 1)
  selu,         // scale (x > 0 ? x : alpha (e^x - 1)), PyTorch's scale and alpha (nn.SELU)
  softplus,     // x > 20 ? x : ln(1 + e^x) (nn.Softplus, beta 1, threshold 20)
  softsign,     // x / (1 + |x|)
  exp,          // e^x
  log,          // ln x (NaN below 0, -inf at 0, as torch.log)
  neg,          // -x
  reciprocal,   // 1 / x
  sign,         // 1 above 0, -1 below, else 0 (NaN too, as torch.sign); gradient 0 (nn.LPPool2d)
  sin,          // sin x
  cos,          // cos x
  atan,         // arctan x
  floor,        // the largest whole number <= x (torch.floor); gradient 0, as PyTorch's
  ceil,         // the smallest whole number >= x (torch.ceil); gradient 0
  round,        // the nearest whole number, halves to even (torch.round, ONNX's); gradient 0
};
const char* activation_name(Activation a);  // "sigmoid", ...

// Whether backward reads the output (sigmoid, tanh, sqrt, exp, reciprocal: the derivative is a
// function of y; relu6: 0 < y < 6 exactly where 0 < x < 6, clamping being exact; so the op may
// run in place), nothing (neg: dx = -dy; sign, floor, ceil, round: dx = 0; in place too,
// nothing kept for backward), or the input (the rest).
inline bool activation_backward_reads_output(Activation a) {
  return a == Activation::sigmoid || a == Activation::tanh || a == Activation::relu6 ||
         a == Activation::sqrt || a == Activation::exp || a == Activation::reciprocal;
}
inline bool activation_backward_reads_nothing(Activation a) {
  return a == Activation::neg || a == Activation::sign || a == Activation::floor ||
         a == Activation::ceil || a == Activation::round;
}

// PyTorch's ELU family (aten::elu): y = x > 0 ? scale x : alpha scale (e^(input_scale x) - 1).
// nn.ELU(alpha) is {alpha, 1, 1}, nn.CELU(alpha) {alpha, 1, 1 / alpha}, SELU {its alpha, its
// scale, 1}. (Activation::elu and ::selu are the defaults', kept as they were.)
struct EluCoefficients {
  double alpha = 1, scale = 1, input_scale = 1;
};
// Whether backward may read y instead of x: where alpha >= 0 and both scales are positive, y > 0
// exactly where x > 0 (short of x * scale underflowing to 0), so the op may run in place.
inline bool elu_backward_reads_output(const EluCoefficients& c) {
  return c.alpha >= 0 && c.scale > 0 && c.input_scale > 0;
}

namespace activation_math {

#if defined(__CUDA_ARCH__)
#define FRUGAL_MATH(f) f  // CUDA's overloads for float and double
#else
#define FRUGAL_MATH(f) std::f
#endif

// SELU's constants, as PyTorch's (Klambauer et al. 2017).
inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

template <typename T>
FRUGAL_ACTIVATION_HD inline T sigmoid(T x) {
  return T(1) / (T(1) + FRUGAL_MATH(exp)(-x));
}

template <typename T>
FRUGAL_ACTIVATION_HD inline T forward(Activation a, T x) {
  switch (a) {
    case Activation::sigmoid:
      return sigmoid(x);
    case Activation::tanh:
      return FRUGAL_MATH(tanh)(x);
    case Activation::silu:
      return x * sigmoid(x);
    case Activation::gelu:
      return T(0.5) * x * (T(1) + FRUGAL_MATH(erf)(x * T(0.70710678118654752440)));
    case Activation::gelu_tanh: {
      const T inner = T(0.79788456080286535588) * (x + T(0.044715) * (x * x * x));
      return T(0.5) * x * (T(1) + FRUGAL_MATH(tanh)(inner));
    }
    case Activation::erf:
      return FRUGAL_MATH(erf)(x);
    case Activation::sqrt:
      return FRUGAL_MATH(sqrt)(x);
    case Activation::hardsigmoid:
      return x <= T(-3) ? T(0) : x >= T(3) ? T(1) : x / T(6) + T(0.5);
    case Activation::hardswish:
      return x <= T(-3) ? T(0) : x >= T(3) ? x : x * (x + T(3)) / T(6);
    case Activation::relu6:
      return x < T(0) ? T(0) : x > T(6) ? T(6) : x;  // NaN falls through both tests
    case Activation::abs:
      return FRUGAL_MATH(fabs)(x);
    case Activation::elu:
      return x <= T(0) ? FRUGAL_MATH(expm1)(x) : x;
    case Activation::selu:
      return x <= T(0) ? FRUGAL_MATH(expm1)(x) * T(kSeluAlpha * kSeluScale) : x * T(kSeluScale);
    case Activation::softplus:
      return x > T(20) ? x : FRUGAL_MATH(log1p)(FRUGAL_MATH(exp)(x));
    case Activation::softsign:
      return x / (T(1) + FRUGAL_MATH(fabs)(x));
    case Activation::exp:
      return FRUGAL_MATH(exp)(x);
    case Activation::log:
      return FRUGAL_MATH(log)(x);
    case Activation::neg:
      return -x;
    case Activation::reciprocal:
      return T(1) / x;
    case Activation::sign:
      return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
    case Activation::sin:
      return FRUGAL_MATH(sin)(x);
    case Activation::cos:
      return FRUGAL_MATH(cos)(x);
    case Activation::atan:
      return FRUGAL_MATH(atan)(x);
    case Activation::floor:
      return FRUGAL_MATH(floor)(x);
    case Activation::ceil:
      return FRUGAL_MATH(ceil)(x);
    case Activation::round:  // the default rounding mode's nearest, halves to even
      return FRUGAL_MATH(nearbyint)(x);
  }
  return x;
}

// dx for one element: `v` is y where backward reads the output, else x. At the kinks of the
// piecewise ones the derivative is PyTorch's (0 at the ends of hardsigmoid's and relu6's
// linear piece; hardswish: 0 below -3, x/3 + 1/2 up to 3 inclusive, 1 above).
template <typename T>
FRUGAL_ACTIVATION_HD inline T backward(Activation a, T v, T dy) {
  switch (a) {
    case Activation::sigmoid:
      return dy * v * (T(1) - v);
    case Activation::tanh:
      return dy * (T(1) - v * v);
    case Activation::silu: {
      const T s = sigmoid(v);
      return dy * s * (T(1) + v * (T(1) - s));
    }
    case Activation::gelu: {
      const T cdf = T(0.5) * (T(1) + FRUGAL_MATH(erf)(v * T(0.70710678118654752440)));
      const T pdf = FRUGAL_MATH(exp)(T(-0.5) * v * v) * T(0.39894228040143267794);
      return dy * (cdf + v * pdf);
    }
    case Activation::gelu_tanh: {  // PyTorch's GeluBackward in tanh mode, term for term
      const T beta = T(0.79788456080286535588), kappa = T(0.044715);
      const T x2 = v * v;
      const T t = FRUGAL_MATH(tanh)(beta * (v + kappa * (x2 * v)));
      const T left = T(0.5) * v, right = T(1) + t;
      const T right_derivative = left * (T(1) - t * t) * (beta * (T(1) + T(3) * kappa * x2));
      return dy * (T(0.5) * right + right_derivative);
    }
    case Activation::erf:  // 2/sqrt(pi) e^(-x^2)
      return dy * T(1.12837916709551257390) * FRUGAL_MATH(exp)(-v * v);
    case Activation::sqrt:  // from y: dy / (2 y), as PyTorch
      return dy / (T(2) * v);
    case Activation::hardsigmoid:
      return v > T(-3) && v < T(3) ? dy / T(6) : (v != v ? v : T(0));
    case Activation::hardswish:
      return v < T(-3) ? T(0) : v <= T(3) ? dy * (v / T(3) + T(0.5)) : (v != v ? v : dy);
    case Activation::relu6:
      return v > T(0) && v < T(6) ? dy : (v != v ? v : T(0));
    case Activation::abs:  // sign(x) dy, 0 at 0, as PyTorch
      return v > T(0) ? dy : v < T(0) ? -dy : (v != v ? v : T(0));
    case Activation::elu:  // at 0 the left piece's e^0, as PyTorch
      return v <= T(0) ? dy * FRUGAL_MATH(exp)(v) : dy;
    case Activation::selu:
      return v <= T(0) ? dy * T(kSeluScale) * T(kSeluAlpha) * FRUGAL_MATH(exp)(v)
                       : dy * T(kSeluScale);
    case Activation::softplus: {  // dy e^x / (e^x + 1), as PyTorch
      const T z = FRUGAL_MATH(exp)(v);
      return v > T(20) ? dy : dy * z / (z + T(1));
    }
    case Activation::softsign: {  // dy / (1 + |x|)^2
      const T d = T(1) + FRUGAL_MATH(fabs)(v);
      return dy / (d * d);
    }
    case Activation::exp:  // from y
      return dy * v;
    case Activation::log:
      return dy / v;
    case Activation::neg:
      return -dy;
    case Activation::reciprocal:  // from y: -dy y^2, as PyTorch
      return -dy * (v * v);
    case Activation::sign:  // 0 everywhere, as PyTorch (v is dy: nothing is kept)
    case Activation::floor:
    case Activation::ceil:
    case Activation::round:
      return T(0);
    case Activation::sin:
      return dy * FRUGAL_MATH(cos)(v);
    case Activation::cos:  // dy * -sin x, as PyTorch
      return dy * -FRUGAL_MATH(sin)(v);
    case Activation::atan:  // dy / (x^2 + 1), as PyTorch
      return dy / (v * v + T(1));
  }
  return dy;
}

// The ELU family's element functions, as PyTorch's CPU kernels compute them, with the
// coefficients in T (EluConstants: negative = T(alpha * scale), positive = T(scale), input =
// T(input_scale)). Backward from x, or from y (elu_backward_reads_output): dy input (y +
// negative) where y <= 0.
template <typename T>
struct EluConstants {
  T negative, positive, input;
  explicit EluConstants(const EluCoefficients& c)
      : negative(static_cast<T>(c.alpha * c.scale)),
        positive(static_cast<T>(c.scale)),
        input(static_cast<T>(c.input_scale)) {}
};
template <typename T>
FRUGAL_ACTIVATION_HD inline T elu_forward(T x, const EluConstants<T>& c) {
  return x <= T(0) ? FRUGAL_MATH(expm1)(x * c.input) * c.negative : x * c.positive;
}
template <typename T>
FRUGAL_ACTIVATION_HD inline T elu_backward_input(T x, const EluConstants<T>& c, T dy) {
  return x <= T(0) ? dy * c.input * c.negative * FRUGAL_MATH(exp)(x * c.input) : dy * c.positive;
}
template <typename T>
FRUGAL_ACTIVATION_HD inline T elu_backward_output(T y, const EluConstants<T>& c, T dy) {
  return y <= T(0) ? dy * c.input * (y + c.negative) : dy * c.positive;
}

// x^e and its derivative as PyTorch computes them: pow(x, e) (NaN for a negative x and a
// fractional e), and dy e x^(e - 1), 0 for e = 0.
template <typename T>
FRUGAL_ACTIVATION_HD inline T pow_forward(T x, T e) {
  return FRUGAL_MATH(pow)(x, e);
}
template <typename T>
FRUGAL_ACTIVATION_HD inline T pow_backward(T x, T e, T dy) {
  return e == T(0) ? T(0) : dy * e * FRUGAL_MATH(pow)(x, e - T(1));
}

// clamp(x, lo, hi) and its derivative as PyTorch computes them: x below lo is lo, above hi is
// hi, NaN stays NaN; the gradient passes where lo <= x <= hi (the bounds included), 0 elsewhere
// and at NaN.
template <typename T>
FRUGAL_ACTIVATION_HD inline T clamp_forward(T x, T lo, T hi) {
  return x < lo ? lo : x > hi ? hi : x;
}
template <typename T>
FRUGAL_ACTIVATION_HD inline T clamp_backward(T x, T lo, T hi, T dy) {
  return x >= lo && x <= hi ? dy : T(0);
}

#undef FRUGAL_MATH

}  // namespace activation_math
}  // namespace frugal
