// Reduction kernels of the CUDA backend, following the CPU twin's semantics (core/reduce.h):
// x is viewed as (R, C) rows; one block per row sums it in double by block_sum's fixed tree,
// the extremes (max, min, log-sum-exp's shift) by one thread scanning the row in order so the
// first extreme (the first NaN) wins as on the CPU. No atomics: the same bits on every run.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

// The column of the row's first maximum (`max`) or minimum; the first NaN wins.
template <typename T>
__device__ int64_t extreme(const T* xr, int64_t C, bool max) {
  int64_t at = 0;
  for (int64_t j = 0; j < C; ++j) {
    if (isnan(static_cast<double>(xr[j]))) return j;
    if (max ? xr[j] > xr[at] : xr[j] < xr[at]) at = j;
  }
  return at;
}

template <typename T>
__global__ void reduce_forward_kernel(Reduction r, RowDims d, const T* x, T* y, int32_t* index) {
  const int64_t i = blockIdx.x;
  const T* xr = x + i * d.C;
  __shared__ double shift;
  __shared__ int64_t at;
  if (threadIdx.x == 0 && (reduction_keeps_index(r) || r == Reduction::log_sum_exp)) {
    at = extreme(xr, d.C, r != Reduction::min);
    shift = xr[at];
  }
  __syncthreads();
  if (r == Reduction::max || r == Reduction::min) {
    if (threadIdx.x == 0) {
      if (index) index[i] = static_cast<int32_t>(at);
      y[i] = xr[at];
    }
    return;
  }
  if (r == Reduction::log_sum_exp && !isfinite(shift)) {
    if (threadIdx.x == 0) y[i] = static_cast<T>(shift);
    return;
  }
  double s = 0;
  for (int64_t j = threadIdx.x; j < d.C; j += kThreads) {
    const double e = xr[j];
    switch (r) {
      case Reduction::sum_square:
      case Reduction::l2:
        s += e * e;
        break;
      case Reduction::l1:
        s += fabs(e);
        break;
      case Reduction::log_sum_exp:
        s += exp(e - shift);
        break;
      default:
        s += e;
    }
  }
  double v = block_sum(s);
  if (r == Reduction::mean) v /= static_cast<double>(d.C);
  if (r == Reduction::l2) v = sqrt(v);
  if (r == Reduction::log_sum_exp) v = shift + log(v);
  if (threadIdx.x == 0) y[i] = static_cast<T>(v);
}

template <typename T>
__global__ void reduce_backward_kernel(Reduction r, RowDims d, const T* x, const T* y,
                                       const int32_t* index, const T* dy, T* dx) {
  const int64_t k = thread_index();
  if (k >= d.R * d.C) return;
  const int64_t i = k / d.C, j = k % d.C;
  dx[k] =
      reduce_math::grad<T>(r, dy[i], x ? x[k] : T(0), y ? y[i] : T(0), d.C, index && j == index[i]);
}

template <typename T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.device_data<T>() : nullptr;
}

template <typename T>
void forward_t(Reduction r, const RowDims& d, const Tensor& x, Tensor& y, Tensor& index) {
  launch_blocks(d.R, reduce_forward_kernel<T>, r, d, static_cast<const T*>(ptr<T>(x)), ptr<T>(y),
                ptr<int32_t>(index));
}

template <typename T>
void backward_t(Reduction r, const RowDims& d, const Tensor& x, const Tensor& y,
                const Tensor& index, const Tensor& dy, Tensor& dx) {
  const T* xp = reduction_reads_input(r) ? ptr<T>(x) : nullptr;
  const T* yp = reduction_reads_output(r) ? ptr<T>(y) : nullptr;
  const int32_t* ip = reduction_keeps_index(r) ? ptr<int32_t>(index) : nullptr;
  launch(d.R * d.C, reduce_backward_kernel<T>, r, d, xp, yp, ip, static_cast<const T*>(ptr<T>(dy)),
         ptr<T>(dx));
}

}  // namespace

void CudaBackend::reduce_rows_forward(Reduction r, const Tensor& x, Tensor& y, Tensor& index) {
  const RowDims d = check_reduce_forward(r, x, y, index, device());
  if (x.dtype() == DType::f32)
    forward_t<float>(r, d, x, y, index);
  else
    forward_t<double>(r, d, x, y, index);
}

void CudaBackend::reduce_rows_backward(Reduction r, const Tensor& x, const Tensor& y,
                                       const Tensor& index, const Tensor& dy, Tensor& dx) {
  const RowDims d = check_reduce_backward(r, x, y, index, dy, dx, device());
  if (dx.dtype() == DType::f32)
    backward_t<float>(r, d, x, y, index, dy, dx);
  else
    backward_t<double>(r, d, x, y, index, dy, dx);
}

}  // namespace frugal
