// Group normalization kernels of the CUDA backend, following the CPU twin's semantics (biased
// variance, saved mean and inv_std per sample and group, dx from x^ = (x - mean) inv_std). x
// (N, C, S) is N x G contiguous rows of C/G channels: one block per row for the statistics and
// for dx, one block per channel for dgamma and dbeta, each summing in double by block_sum's
// fixed tree. No atomics: the same bits on every run.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void groupnorm_forward_kernel(GroupDims d, const T* x, const T* gamma, const T* beta,
                                         double eps, T* y, T* mean, T* inv_std) {
  const int64_t r = blockIdx.x, L = d.Cg * d.S, c0 = (r % d.G) * d.Cg;
  const T* xr = x + r * L;
  double s = 0;
  for (int64_t j = threadIdx.x; j < L; j += kThreads) s += static_cast<double>(xr[j]);
  const double mu = block_sum(s) / static_cast<double>(L);
  double q = 0;
  for (int64_t j = threadIdx.x; j < L; j += kThreads) {
    const double e = xr[j] - mu;
    q += e * e;
  }
  const double var = block_sum(q) / static_cast<double>(L);
  const T m = static_cast<T>(mu), inv = static_cast<T>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    if (mean) mean[r] = m;
    if (inv_std) inv_std[r] = inv;
  }
  T* yr = y + r * L;
  for (int64_t j = threadIdx.x; j < L; j += kThreads) {
    const int64_t c = c0 + j / d.S;
    yr[j] = (xr[j] - m) * inv * gamma[c] + beta[c];
  }
}

// Block c: channel c's sums of dy x^ and dy over every sample.
template <typename T>
__global__ void groupnorm_dparams_kernel(GroupDims d, const T* x, const T* dy, const T* mean,
                                         const T* inv_std, T* dgamma, T* dbeta) {
  const int64_t c = blockIdx.x, C = d.G * d.Cg;
  double g = 0, s = 0;
  for (int64_t i = threadIdx.x; i < d.N * d.S; i += kThreads) {
    const int64_t n = i / d.S, at = (n * C + c) * d.S + i % d.S, r = n * d.G + c / d.Cg;
    const double mu = mean[r], inv = inv_std[r];
    g += dy[at] * ((x[at] - mu) * inv);
    s += dy[at];
  }
  g = block_sum(g);
  s = block_sum(s);
  if (threadIdx.x == 0) {
    if (dgamma) dgamma[c] = static_cast<T>(g);
    if (dbeta) dbeta[c] = static_cast<T>(s);
  }
}

// dx after the row's two sums (every thread reads its dy before any writes: block_sum
// synchronizes), so dx may alias dy.
template <typename T>
__global__ void groupnorm_dx_kernel(GroupDims d, const T* x, const T* dy, const T* gamma,
                                    const T* mean, const T* inv_std, T* dx) {
  const int64_t r = blockIdx.x, L = d.Cg * d.S, c0 = (r % d.G) * d.Cg;
  const double mu = mean[r], inv = inv_std[r];
  const T *xr = x + r * L, *dyr = dy + r * L;
  double sg = 0, sgx = 0;
  for (int64_t j = threadIdx.x; j < L; j += kThreads) {
    const double g = static_cast<double>(dyr[j]) * gamma[c0 + j / d.S];
    sg += g;
    sgx += g * ((xr[j] - mu) * inv);
  }
  const double a = block_sum(sg) / static_cast<double>(L);
  const double b = block_sum(sgx) / static_cast<double>(L);
  T* dxr = dx + r * L;
  for (int64_t j = threadIdx.x; j < L; j += kThreads) {
    const double g = static_cast<double>(dyr[j]) * gamma[c0 + j / d.S];
    dxr[j] = static_cast<T>(inv * (g - a - ((xr[j] - mu) * inv) * b));
  }
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

template <typename T>
void forward_t(const GroupDims& d, const Tensor& x, const Tensor& gamma, const Tensor& beta,
               double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  launch_blocks(d.N * d.G, groupnorm_forward_kernel<T>, d, static_cast<const T*>(ptr<T>(x)),
                static_cast<const T*>(ptr<T>(gamma)), static_cast<const T*>(ptr<T>(beta)), eps,
                ptr<T>(y), ptr<T>(mean), ptr<T>(inv_std));
}

template <typename T>
void backward_t(const GroupDims& d, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                Tensor& dbeta) {
  const T *xp = ptr<T>(x), *dyp = ptr<T>(dy), *mp = ptr<T>(mean), *ip = ptr<T>(inv_std);
  if (dgamma.defined() || dbeta.defined())
    launch_blocks(d.G * d.Cg, groupnorm_dparams_kernel<T>, d, xp, dyp, mp, ip, ptr<T>(dgamma),
                  ptr<T>(dbeta));
  if (dx.defined())
    launch_blocks(d.N * d.G, groupnorm_dx_kernel<T>, d, xp, dyp,
                  static_cast<const T*>(ptr<T>(gamma)), mp, ip, ptr<T>(dx));
}

}  // namespace

void CudaBackend::groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    int64_t groups, double eps, Tensor& y, Tensor& mean,
                                    Tensor& inv_std) {
  const GroupDims d = check_groupnorm_forward(x, gamma, beta, groups, y, mean, inv_std, device());
  if (x.dtype() == DType::f32)
    forward_t<float>(d, x, gamma, beta, eps, y, mean, inv_std);
  else
    forward_t<double>(d, x, gamma, beta, eps, y, mean, inv_std);
}

void CudaBackend::groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                     Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                     const Tensor& /*scratch: none needed*/) {
  const GroupDims d =
      check_groupnorm_backward(x, dy, gamma, mean, inv_std, groups, dx, dgamma, dbeta, device());
  if (x.dtype() == DType::f32)
    backward_t<float>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
  else
    backward_t<double>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
}

}  // namespace frugal
