// Activation, ELU-family, pow and clamp kernels of the CPU backend: one element function per
// activation (core/activation.h, shared with the CUDA kernels), applied over static OpenMP
// splits.
#include "core/activation.h"

#include <type_traits>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/expf_avx2.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

#if defined(FRUGAL_EXPF8)
// The activations made of e^x, 8 floats at a time with expf8 (std::exp's bits) and the scalar
// loop's other operations in its order, so the scalar loop's bits: sigmoid's 1 / (1 + e^-x),
// SiLU's x times that, e^x; SiLU's derivative dy * s * (1 + v (1 - s)), whose v (1 - s) + 1
// GCC fuses in the scalar loop too. The scalar loops called expf once per element
// (EfficientNet-B0's SiLUs took over a third of its step).
bool vector_forward(Activation a) {
  return a == Activation::sigmoid || a == Activation::silu || a == Activation::exp;
}
inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = cpu_math::expf8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));  // e^-x
  return _mm256_div_ps(one, _mm256_add_ps(one, e));
}
inline __m256 forward8(Activation a, __m256 x) {
  if (a == Activation::exp) return cpu_math::expf8(x);
  const __m256 s = sigmoid8(x);
  return a == Activation::silu ? _mm256_mul_ps(x, s) : s;
}
inline __m256 silu_backward8(__m256 v, __m256 dy) {
  const __m256 one = _mm256_set1_ps(1.0f), s = sigmoid8(v);
  return _mm256_mul_ps(_mm256_mul_ps(dy, s), _mm256_fmadd_ps(v, _mm256_sub_ps(one, s), one));
}
#endif

// Element i of n by `scalar`, or 8 at a time by `vector` from the first element up to the last
// whole 8 (a thread's share a multiple of 8).
template <typename Scalar, typename Vector>
void over_elements(int64_t n, bool vectors, const Scalar& scalar, const Vector& vector) {
  if (!vectors) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; ++i) scalar(i);
    return;
  }
  const int64_t blocks = n / 8;
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t b = 0; b < blocks; ++b) vector(8 * b);
  for (int64_t i = 8 * blocks; i < n; ++i) scalar(i);
}

template <typename T>
void forward_t(Activation a, const T* x, T* y, int64_t n) {
  auto scalar = [&](int64_t i) { y[i] = activation_math::forward(a, x[i]); };
#if defined(FRUGAL_EXPF8)
  if constexpr (std::is_same_v<T, float>) {
    return over_elements(n, vector_forward(a), scalar, [&](int64_t i) {
      _mm256_storeu_ps(y + i, forward8(a, _mm256_loadu_ps(x + i)));
    });
  }
#endif
  over_elements(n, false, scalar, scalar);
}

template <typename T>
void backward_t(Activation a, const T* v, const T* dy, T* dx, int64_t n) {
  auto scalar = [&](int64_t i) { dx[i] = activation_math::backward(a, v[i], dy[i]); };
#if defined(FRUGAL_EXPF8)
  if constexpr (std::is_same_v<T, float>) {
    return over_elements(n, a == Activation::silu, scalar, [&](int64_t i) {
      _mm256_storeu_ps(dx + i, silu_backward8(_mm256_loadu_ps(v + i), _mm256_loadu_ps(dy + i)));
    });
  }
#endif
  over_elements(n, false, scalar, scalar);
}

template <typename T>
void pow_forward_t(const T* x, T e, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::pow_forward(x[i], e);
}

template <typename T>
void pow_backward_t(const T* x, T e, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::pow_backward(x[i], e, dy[i]);
}

template <typename T>
void clamp_forward_t(const T* x, T lo, T hi, T* y, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::clamp_forward(x[i], lo, hi);
}

template <typename T>
void clamp_backward_t(const T* x, T lo, T hi, const T* dy, T* dx, int64_t n) {
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::clamp_backward(x[i], lo, hi, dy[i]);
}

template <typename T>
void elu_forward_t(const T* x, const EluCoefficients& coefficients, T* y, int64_t n) {
  const activation_math::EluConstants<T> c(coefficients);
#pragma omp parallel for schedule(static) if (n > 16384)
  for (int64_t i = 0; i < n; ++i) y[i] = activation_math::elu_forward(x[i], c);
}

template <typename T>
void elu_backward_t(const T* v, bool from_output, const EluCoefficients& coefficients, const T* dy,
                    T* dx, int64_t n) {
  const activation_math::EluConstants<T> c(coefficients);
  if (from_output) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::elu_backward_output(v[i], c, dy[i]);
  } else {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t i = 0; i < n; ++i) dx[i] = activation_math::elu_backward_input(v[i], c, dy[i]);
  }
}

}  // namespace

void CpuBackend::elu_forward(const Tensor& x, const EluCoefficients& c, Tensor& y) {
  check_same("elu", x, y, device());
  if (x.dtype() == DType::f32)
    elu_forward_t(x.data<float>(), c, y.data<float>(), x.numel());
  else
    elu_forward_t(x.data<double>(), c, y.data<double>(), x.numel());
}

void CpuBackend::elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                              const Tensor& dy, Tensor& dx) {
  check_elu_backward(v, from_output, c, dy, dx, device());
  if (v.dtype() == DType::f32)
    elu_backward_t(v.data<float>(), from_output, c, dy.data<float>(), dx.data<float>(), v.numel());
  else
    elu_backward_t(v.data<double>(), from_output, c, dy.data<double>(), dx.data<double>(),
                   v.numel());
}

void CpuBackend::clamp_forward(const Tensor& x, double lo, double hi, Tensor& y) {
  check_same("clamp", x, y, device());
  if (x.dtype() == DType::f32)
    clamp_forward_t(x.data<float>(), static_cast<float>(lo), static_cast<float>(hi),
                    y.data<float>(), x.numel());
  else
    clamp_forward_t(x.data<double>(), lo, hi, y.data<double>(), x.numel());
}

void CpuBackend::clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy,
                                Tensor& dx) {
  check_same("clamp backward", dy, dx, device());
  check_same("clamp backward", x, dx, device());
  if (x.dtype() == DType::f32)
    clamp_backward_t(x.data<float>(), static_cast<float>(lo), static_cast<float>(hi),
                     dy.data<float>(), dx.data<float>(), x.numel());
  else
    clamp_backward_t(x.data<double>(), lo, hi, dy.data<double>(), dx.data<double>(), x.numel());
}

void CpuBackend::pow_forward(const Tensor& x, double e, Tensor& y) {
  check_same("pow", x, y, device());
  if (x.dtype() == DType::f32)
    pow_forward_t(x.data<float>(), static_cast<float>(e), y.data<float>(), x.numel());
  else
    pow_forward_t(x.data<double>(), e, y.data<double>(), x.numel());
}

void CpuBackend::pow_backward(const Tensor& x, double e, const Tensor& dy, Tensor& dx) {
  check_same("pow backward", dy, dx, device());
  check_same("pow backward", x, dx, device());
  if (x.dtype() == DType::f32)
    pow_backward_t(x.data<float>(), static_cast<float>(e), dy.data<float>(), dx.data<float>(),
                   x.numel());
  else
    pow_backward_t(x.data<double>(), e, dy.data<double>(), dx.data<double>(), x.numel());
}

void CpuBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  check_same(activation_name(a), x, y, device());
  if (x.dtype() == DType::f32)
    forward_t(a, x.data<float>(), y.data<float>(), x.numel());
  else
    forward_t(a, x.data<double>(), y.data<double>(), x.numel());
}

void CpuBackend::activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) {
  check_same(activation_name(a), dy, dx, device());
  check_same(activation_name(a), v, dx, device());
  if (v.dtype() == DType::f32)
    backward_t(a, v.data<float>(), dy.data<float>(), dx.data<float>(), v.numel());
  else
    backward_t(a, v.data<double>(), dy.data<double>(), dx.data<double>(), v.numel());
}

}  // namespace frugal
