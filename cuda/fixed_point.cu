// Fixed-point kernels of the CUDA backend: one thread per element, the same arithmetic as the
// CPU twin (core/cpu/fixed_point.cpp). A failed check sets a device flag; the host then copies
// the tensors back and reports the element the CPU would (core/kernel_checks.h).
#include <vector>

#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

// The grid of core/kernel_checks.h on the device: t rounded to an integer, ties to even.
template <typename T>
__device__ T device_round_to_integer(T t) {
  constexpr T magic = static_cast<T>(uint64_t{1} << (sizeof(T) == 4 ? 23 : 52));
  const T m = copysign(magic, t);
  return fabs(t) < magic ? (t + m) - m : t;
}

// x (n)  y (n):  y = q(x); *bad = 1 where |y| >= limit (or NaN). y may alias x.
template <typename T>
__global__ void round_kernel(const T* x, T scale, T inv, T limit, T* y, unsigned long long* bad,
                             int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const T yi = device_round_to_integer(x[i] * scale) * inv;
  if (!(fabs(yi) < limit)) *bad = 1;
  y[i] = yi;
}

// a (n)  f (n)  y (n):  y = a + sign q(f); *bad = 1 where a is off the grid or |y| >= limit.
template <typename T>
__global__ void add_kernel(const T* a, const T* f, T sign, T scale, T inv, T limit, T* y,
                           unsigned long long* bad, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  const T ai = a[i];
  const T yi = ai + sign * (device_round_to_integer(f[i] * scale) * inv);
  const bool on = device_round_to_integer(ai * scale) == ai * scale;
  if (!on || !(fabs(yi) < limit)) *bad = 1;
  y[i] = yi;
}

template <typename T>
std::vector<T> to_host_vector(const Tensor& t) {
  std::vector<T> v(static_cast<size_t>(t.numel()));
  FRUGAL_CUDA_CHECK(cudaMemcpy(v.data(), t.device_raw(), t.bytes(), cudaMemcpyDeviceToHost));
  return v;
}

}  // namespace

void CudaBackend::fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                                    const std::string& who) {
  check_fixed_point_round(x, y, who, device());
  const int64_t n = x.numel();
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0, sizeof *status_));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const Grid<T> g(range_bits, grid_frac_bits<T>(range_bits));
    launch(n, round_kernel<T>, x.device_data<T>(), g.scale, g.inv, g.limit, y.device_data<T>(),
           status_, n);
    unsigned long long bad = 0;
    FRUGAL_CUDA_CHECK(cudaMemcpy(&bad, status_, sizeof bad, cudaMemcpyDeviceToHost));
    if (bad) {
      const std::vector<T> yh = to_host_vector<T>(y);
      throw_round_failure(yh.data(), n, g, range_bits, who);
    }
  };
  if (x.dtype() == DType::f32)
    run(0.0f);
  else
    run(0.0);
}

void CudaBackend::fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract,
                                  Tensor& y, const std::string& who) {
  check_fixed_point_add(a, f, y, who, device());
  const int64_t n = a.numel();
  const bool in_place = a.device_raw() == y.device_raw();
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0, sizeof *status_));
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const int frac = grid_frac_bits<T>(range_bits);
    const Grid<T> g(range_bits, frac);
    launch(n, add_kernel<T>, a.device_data<T>(), f.device_data<T>(), subtract ? T(-1) : T(1),
           g.scale, g.inv, g.limit, y.device_data<T>(), status_, n);
    unsigned long long bad = 0;
    FRUGAL_CUDA_CHECK(cudaMemcpy(&bad, status_, sizeof bad, cudaMemcpyDeviceToHost));
    if (!bad) return;
    const std::vector<T> yh = to_host_vector<T>(y);
    const std::vector<T> ah = in_place ? yh : to_host_vector<T>(a);
    throw_add_failure(ah.data(), yh.data(), in_place, n, g, range_bits, frac, who);
  };
  if (a.dtype() == DType::f32)
    run(0.0f);
  else
    run(0.0);
}

}  // namespace frugal
