// Layer normalization kernels of the CUDA backend, following the CPU twin's semantics (biased
// variance, saved mean and inv_std, dx from x^ = (x - mean) inv_std). x is viewed as (R, C)
// rows: one block per row sums it in double by block_sum's fixed tree; dgamma and dbeta take
// one thread per column summing the rows in order. No atomics: the same bits on every run.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void layernorm_forward_kernel(RowDims d, const T* x, const T* gamma, const T* beta,
                                         double eps, T* y, T* mean, T* inv_std) {
  const int64_t r = blockIdx.x;
  const T* xr = x + r * d.C;
  double s = 0;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads) s += static_cast<double>(xr[j]);
  const double mu = block_sum(s) / static_cast<double>(d.C);
  double q = 0;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads) {
    const double e = xr[j] - mu;
    q += e * e;
  }
  const double var = block_sum(q) / static_cast<double>(d.C);
  const T m = static_cast<T>(mu), inv = static_cast<T>(1.0 / sqrt(var + eps));
  if (threadIdx.x == 0) {
    if (mean) mean[r] = m;
    if (inv_std) inv_std[r] = inv;
  }
  T* yr = y + r * d.C;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads)
    yr[j] = (xr[j] - m) * inv * gamma[j] + beta[j];
}

template <typename T>
__global__ void layernorm_dparams_kernel(RowDims d, const T* x, const T* dy, const T* mean,
                                         const T* inv_std, T* dgamma, T* dbeta) {
  const int64_t j = thread_index();
  if (j >= d.C) return;
  double g = 0, s = 0;
  for (int64_t r = 0; r < d.R; ++r) {
    const double mu = mean[r], inv = inv_std[r];
    const int64_t i = r * d.C + j;
    g += dy[i] * ((x[i] - mu) * inv);
    s += dy[i];
  }
  if (dgamma) dgamma[j] = static_cast<T>(g);
  if (dbeta) dbeta[j] = static_cast<T>(s);
}

// dx after the row's two sums (every thread reads its dy before any writes: block_sum
// synchronizes), so dx may alias dy.
template <typename T>
__global__ void layernorm_dx_kernel(RowDims d, const T* x, const T* dy, const T* gamma,
                                    const T* mean, const T* inv_std, T* dx) {
  const int64_t r = blockIdx.x;
  const double mu = mean[r], inv = inv_std[r];
  const T *xr = x + r * d.C, *dyr = dy + r * d.C;
  double sg = 0, sgx = 0;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads) {
    const double g = static_cast<double>(dyr[j]) * gamma[j];
    sg += g;
    sgx += g * ((xr[j] - mu) * inv);
  }
  const double a = block_sum(sg) / static_cast<double>(d.C);
  const double b = block_sum(sgx) / static_cast<double>(d.C);
  T* dxr = dx + r * d.C;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads) {
    const double g = static_cast<double>(dyr[j]) * gamma[j];
    dxr[j] = static_cast<T>(inv * (g - a - ((xr[j] - mu) * inv) * b));
  }
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

template <typename T>
void forward_t(const RowDims& d, const Tensor& x, const Tensor& gamma, const Tensor& beta,
               double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  launch_blocks(d.R, layernorm_forward_kernel<T>, d, static_cast<const T*>(ptr<T>(x)),
                static_cast<const T*>(ptr<T>(gamma)), static_cast<const T*>(ptr<T>(beta)), eps,
                ptr<T>(y), ptr<T>(mean), ptr<T>(inv_std));
}

template <typename T>
void backward_t(const RowDims& d, const Tensor& x, const Tensor& dy, const Tensor& gamma,
                const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                Tensor& dbeta) {
  const T *xp = ptr<T>(x), *dyp = ptr<T>(dy), *mp = ptr<T>(mean), *ip = ptr<T>(inv_std);
  if (dgamma.defined() || dbeta.defined())
    launch(d.C, layernorm_dparams_kernel<T>, d, xp, dyp, mp, ip, ptr<T>(dgamma), ptr<T>(dbeta));
  if (dx.defined())
    launch_blocks(d.R, layernorm_dx_kernel<T>, d, xp, dyp, static_cast<const T*>(ptr<T>(gamma)), mp,
                  ip, ptr<T>(dx));
}

}  // namespace

void CudaBackend::layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                    double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  const RowDims d = check_layernorm_forward(x, gamma, beta, y, mean, inv_std, device());
  if (x.dtype() == DType::f32)
    forward_t<float>(d, x, gamma, beta, eps, y, mean, inv_std);
  else
    forward_t<double>(d, x, gamma, beta, eps, y, mean, inv_std);
}

void CudaBackend::layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                     Tensor& dgamma, Tensor& dbeta) {
  const RowDims d =
      check_layernorm_backward(x, dy, gamma, mean, inv_std, dx, dgamma, dbeta, device());
  if (x.dtype() == DType::f32)
    backward_t<float>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
  else
    backward_t<double>(d, x, dy, gamma, mean, inv_std, dx, dgamma, dbeta);
}

}  // namespace frugal
