// Log-softmax, NLL and the fused softmax cross-entropy of the CUDA backend. Rows are
// independent: one thread per row, reading it in the CPU twin's order. The mean over N runs in
// one block, each thread summing a fixed set of rows in double and block_sum combining them,
// so a loss has the same bits on every run. Labels are validated on the device first.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {
// labels (n):  *first = min over n of the samples whose label lies outside [0, C)
__global__ void find_bad_label_kernel(const int32_t* label, int64_t C, unsigned long long* first,
                                      int64_t n) {
  const int64_t i = thread_index();
  if (i < n && (label[i] < 0 || label[i] >= C))
    atomicMin(first, static_cast<unsigned long long>(i));
}

// One row x (C): its max m and log sum_c exp(x_c - m), so logsumexp(x) = m + log_sum.
template <typename T>
__device__ void row_logsumexp(const T* x, int64_t C, T& m, T& log_sum) {
  m = x[0];
  for (int64_t c = 1; c < C; ++c)
    if (x[c] > m) m = x[c];
  T s = 0;
  for (int64_t c = 0; c < C; ++c) s += device_exp(x[c] - m);
  log_sum = device_log(s);
}

// x (N,C)  y (N,C):  y = (x - m) - log sum exp(x - m); a row is read before it is written.
template <typename T>
__global__ void log_softmax_forward_kernel(const T* x, T* y, int64_t N, int64_t C) {
  const int64_t n = thread_index();
  if (n >= N) return;
  T m, log_sum;
  row_logsumexp(x + n * C, C, m, log_sum);
  for (int64_t c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) - log_sum;
}

// dy (N,C)  y (N,C)  dx (N,C):  dx = dy - exp(y) sum_c dy (the row sum comes first: dx may be dy)
template <typename T>
__global__ void log_softmax_backward_kernel(const T* dy, const T* y, T* dx, int64_t N, int64_t C) {
  const int64_t n = thread_index();
  if (n >= N) return;
  T sum = 0;
  for (int64_t c = 0; c < C; ++c) sum += dy[n * C + c];
  for (int64_t c = 0; c < C; ++c) dx[n * C + c] = dy[n * C + c] - device_exp(y[n * C + c]) * sum;
}

// logp (N,C)  labels (N)  loss (1):  loss = -mean_n logp[n, label_n]; one block.
template <typename T>
__global__ void nll_forward_kernel(const T* logp, const int32_t* label, T* loss, int64_t N,
                                   int64_t C) {
  double s = 0;
  for (int64_t n = threadIdx.x; n < N; n += kThreads) s += logp[n * C + label[n]];
  s = block_sum(s);
  if (threadIdx.x == 0) loss[0] = static_cast<T>(-s / static_cast<double>(N));
}

// dloss (1)  labels (N)  dlogp (N,C):  dlogp[n, c] = -dloss / N where c = label_n, else 0
template <typename T>
__global__ void nll_backward_kernel(const T* dloss, const int32_t* label, T* dlogp, int64_t N,
                                    int64_t C) {
  const int64_t n = thread_index();
  if (n >= N) return;
  const T g = -dloss[0] / static_cast<T>(N);
  for (int64_t c = 0; c < C; ++c) dlogp[n * C + c] = T(0);
  dlogp[n * C + label[n]] = g;
}

// x (N,C)  labels (N)  loss (1):  loss = mean_n (m_n - x[n, label_n]) + log sum exp(x_n - m_n)
template <typename T>
__global__ void softmax_cross_entropy_forward_kernel(const T* x, const int32_t* label, T* loss,
                                                     int64_t N, int64_t C) {
  double s = 0;
  for (int64_t n = threadIdx.x; n < N; n += kThreads) {
    T m, log_sum;
    row_logsumexp(x + n * C, C, m, log_sum);
    s += (m - x[n * C + label[n]]) + log_sum;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) loss[0] = static_cast<T>(s / static_cast<double>(N));
}

// x (N,C)  labels (N)  dloss (1)  dx (N,C):  dx = (softmax(x) - onehot(label)) dloss / N
template <typename T>
__global__ void softmax_cross_entropy_backward_kernel(const T* x, const int32_t* label,
                                                      const T* dloss, T* dx, int64_t N, int64_t C) {
  const int64_t n = thread_index();
  if (n >= N) return;
  const T g = dloss[0] / static_cast<T>(N);
  T m, log_sum;
  row_logsumexp(x + n * C, C, m, log_sum);
  for (int64_t c = 0; c < C; ++c) {
    const T p = device_exp((x[n * C + c] - m) - log_sum);
    dx[n * C + c] = (p - (c == label[n] ? T(1) : T(0))) * g;
  }
}
}  // namespace

void CudaBackend::check_label_values(const char* op, const Tensor& labels, const Tensor& x) {
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.device_data<int32_t>();
  FRUGAL_CUDA_CHECK(cudaMemsetAsync(status_, 0xff, sizeof *status_));
  launch(N, find_bad_label_kernel, l, C, status_, N);
  unsigned long long first = 0;
  FRUGAL_CUDA_CHECK(cudaMemcpy(&first, status_, sizeof first, cudaMemcpyDeviceToHost));
  if (first == ~0ull) return;
  int32_t label = 0;
  FRUGAL_CUDA_CHECK(cudaMemcpy(&label, l + first, sizeof label, cudaMemcpyDeviceToHost));
  throw_label_outside(op, label, static_cast<int64_t>(first), x);
}

void CudaBackend::log_softmax_forward(const Tensor& x, Tensor& y) {
  check_rows("log_softmax", x, y, device());
  const int64_t N = x.shape()[0], C = x.shape()[1];
  if (x.dtype() == DType::f32)
    launch(N, log_softmax_forward_kernel<float>, x.device_data<float>(), y.device_data<float>(), N,
           C);
  else
    launch(N, log_softmax_forward_kernel<double>, x.device_data<double>(), y.device_data<double>(),
           N, C);
}

void CudaBackend::log_softmax_backward(const Tensor& dy, const Tensor& y, Tensor& dx) {
  check_rows("log_softmax backward", y, dy, device());
  check_rows("log_softmax backward", y, dx, device());
  const int64_t N = y.shape()[0], C = y.shape()[1];
  if (y.dtype() == DType::f32)
    launch(N, log_softmax_backward_kernel<float>, dy.device_data<float>(), y.device_data<float>(),
           dx.device_data<float>(), N, C);
  else
    launch(N, log_softmax_backward_kernel<double>, dy.device_data<double>(),
           y.device_data<double>(), dx.device_data<double>(), N, C);
}

void CudaBackend::nll_forward(const Tensor& logp, const Tensor& labels, Tensor& loss) {
  check_labels("nll_loss", logp, labels, loss, device());
  check_label_values("nll_loss", labels, logp);
  const int64_t N = logp.shape()[0], C = logp.shape()[1];
  const int32_t* l = labels.device_data<int32_t>();
  if (logp.dtype() == DType::f32)
    launch_blocks(1, nll_forward_kernel<float>, logp.device_data<float>(), l,
                  loss.device_data<float>(), N, C);
  else
    launch_blocks(1, nll_forward_kernel<double>, logp.device_data<double>(), l,
                  loss.device_data<double>(), N, C);
}

void CudaBackend::nll_backward(const Tensor& dloss, const Tensor& labels, Tensor& dlogp) {
  check_labels("nll_loss backward", dlogp, labels, dloss, device());
  check_label_values("nll_loss backward", labels, dlogp);
  const int64_t N = dlogp.shape()[0], C = dlogp.shape()[1];
  const int32_t* l = labels.device_data<int32_t>();
  if (dlogp.dtype() == DType::f32)
    launch(N, nll_backward_kernel<float>, dloss.device_data<float>(), l, dlogp.device_data<float>(),
           N, C);
  else
    launch(N, nll_backward_kernel<double>, dloss.device_data<double>(), l,
           dlogp.device_data<double>(), N, C);
}

void CudaBackend::softmax_cross_entropy_forward(const Tensor& x, const Tensor& labels,
                                                Tensor& loss) {
  check_labels("softmax_cross_entropy", x, labels, loss, device());
  check_label_values("softmax_cross_entropy", labels, x);
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.device_data<int32_t>();
  if (x.dtype() == DType::f32)
    launch_blocks(1, softmax_cross_entropy_forward_kernel<float>, x.device_data<float>(), l,
                  loss.device_data<float>(), N, C);
  else
    launch_blocks(1, softmax_cross_entropy_forward_kernel<double>, x.device_data<double>(), l,
                  loss.device_data<double>(), N, C);
}

void CudaBackend::softmax_cross_entropy_backward(const Tensor& x, const Tensor& labels,
                                                 const Tensor& dloss, Tensor& dx) {
  check_labels("softmax_cross_entropy backward", x, labels, dloss, device());
  check_rows("softmax_cross_entropy backward", x, dx, device());
  check_label_values("softmax_cross_entropy backward", labels, x);
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.device_data<int32_t>();
  if (x.dtype() == DType::f32)
    launch(N, softmax_cross_entropy_backward_kernel<float>, x.device_data<float>(), l,
           dloss.device_data<float>(), dx.device_data<float>(), N, C);
  else
    launch(N, softmax_cross_entropy_backward_kernel<double>, x.device_data<double>(), l,
           dloss.device_data<double>(), dx.device_data<double>(), N, C);
}

}  // namespace frugal
