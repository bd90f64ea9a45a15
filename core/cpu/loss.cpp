// Log-softmax, NLL and the fused softmax cross-entropy of the CPU backend. Rows are
// independent (parallel over N); the mean over N is summed in fixed chunks of rows combined
// in order, so a loss has the same bits for any thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {
constexpr int64_t kRowsPerChunk = 64;

// sum_{n<N} row(n) in double, in an order fixed by N alone.
template <typename Row>
double ordered_sum(int64_t N, Row row) {
  std::vector<double> partial(static_cast<size_t>((N + kRowsPerChunk - 1) / kRowsPerChunk));
  const int64_t chunks = static_cast<int64_t>(partial.size());
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunks; ++k) {
    double s = 0;
    const int64_t end = std::min(N, (k + 1) * kRowsPerChunk);
    for (int64_t n = k * kRowsPerChunk; n < end; ++n) s += static_cast<double>(row(n));
    partial[static_cast<size_t>(k)] = s;
  }
  double s = 0;
  for (double p : partial) s += p;
  return s;
}

// labels (N) in [0, C) for x (N,C) (their shapes checked by check_labels).
void check_label_values(const char* op, const Tensor& labels, const Tensor& x) {
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.data<int32_t>();
  for (int64_t n = 0; n < N; ++n)
    if (l[n] < 0 || l[n] >= C) throw_label_outside(op, l[n], n, x);
}

// One row x (C): its max m and log sum_c exp(x_c - m), so logsumexp(x) = m + log_sum.
template <typename T>
void row_logsumexp(const T* x, int64_t C, T& m, T& log_sum) {
  m = *std::max_element(x, x + C);
  T s = 0;
  for (int64_t c = 0; c < C; ++c) s += std::exp(x[c] - m);
  log_sum = std::log(s);
}

// x (N,C)  y (N,C):  y = (x - m) - log sum exp(x - m); in place: a row is read before written.
template <typename T>
void log_softmax_forward_t(const T* x, T* y, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T m, log_sum;
    row_logsumexp(x + n * C, C, m, log_sum);
    for (int64_t c = 0; c < C; ++c) y[n * C + c] = (x[n * C + c] - m) - log_sum;
  }
}

// dy (N,C)  y (N,C)  dx (N,C):  dx = dy - exp(y) sum_c dy, since d log p_c / d x_k =
// [c = k] - p_k and p = exp(y). In place on dy: a row's sum is taken before dx is written.
template <typename T>
void log_softmax_backward_t(const T* dy, const T* y, T* dx, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += dy[n * C + c];
    for (int64_t c = 0; c < C; ++c) dx[n * C + c] = dy[n * C + c] - std::exp(y[n * C + c]) * sum;
  }
}

// logp (N,C)  labels (N)  loss (1):  loss = -mean_n logp[n, label_n]
template <typename T>
void nll_forward_t(const T* logp, const int32_t* label, T* loss, int64_t N, int64_t C) {
  double s = ordered_sum(N, [&](int64_t n) { return logp[n * C + label[n]]; });
  loss[0] = static_cast<T>(-s / static_cast<double>(N));
}

// dloss (1)  labels (N)  dlogp (N,C):  dlogp[n, c] = -dloss / N where c = label_n, else 0
template <typename T>
void nll_backward_t(const T* dloss, const int32_t* label, T* dlogp, int64_t N, int64_t C) {
  const T g = -dloss[0] / static_cast<T>(N);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) dlogp[n * C + c] = T(0);
    dlogp[n * C + label[n]] = g;
  }
}

// x (N,C)  labels (N)  loss (1):  loss = mean_n (m_n - x[n, label_n]) + log sum exp(x_n - m_n)
template <typename T>
void softmax_cross_entropy_forward_t(const T* x, const int32_t* label, T* loss, int64_t N,
                                     int64_t C) {
  double s = ordered_sum(N, [&](int64_t n) {
    T m, log_sum;
    row_logsumexp(x + n * C, C, m, log_sum);
    return (m - x[n * C + label[n]]) + log_sum;
  });
  loss[0] = static_cast<T>(s / static_cast<double>(N));
}

// x (N,C)  labels (N)  dloss (1)  dx (N,C):  dx = (softmax(x) - onehot(label)) dloss / N,
// with softmax recomputed from x (shifted by the row max, so large logits do not overflow).
template <typename T>
void softmax_cross_entropy_backward_t(const T* x, const int32_t* label, const T* dloss, T* dx,
                                      int64_t N, int64_t C) {
  const T g = dloss[0] / static_cast<T>(N);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T m, log_sum;
    row_logsumexp(x + n * C, C, m, log_sum);
    for (int64_t c = 0; c < C; ++c) {
      const T p = std::exp((x[n * C + c] - m) - log_sum);
      dx[n * C + c] = (p - (c == label[n] ? T(1) : T(0))) * g;
    }
  }
}
}  // namespace

void CpuBackend::log_softmax_forward(const Tensor& x, Tensor& y) {
  check_rows("log_softmax", x, y, device());
  const int64_t N = x.shape()[0], C = x.shape()[1];
  if (x.dtype() == DType::f32)
    log_softmax_forward_t(x.data<float>(), y.data<float>(), N, C);
  else
    log_softmax_forward_t(x.data<double>(), y.data<double>(), N, C);
}

void CpuBackend::log_softmax_backward(const Tensor& dy, const Tensor& y, Tensor& dx) {
  check_rows("log_softmax backward", y, dy, device());
  check_rows("log_softmax backward", y, dx, device());
  const int64_t N = y.shape()[0], C = y.shape()[1];
  if (y.dtype() == DType::f32)
    log_softmax_backward_t(dy.data<float>(), y.data<float>(), dx.data<float>(), N, C);
  else
    log_softmax_backward_t(dy.data<double>(), y.data<double>(), dx.data<double>(), N, C);
}

void CpuBackend::nll_forward(const Tensor& logp, const Tensor& labels, Tensor& loss) {
  check_labels("nll_loss", logp, labels, loss, device());
  check_label_values("nll_loss", labels, logp);
  const int64_t N = logp.shape()[0], C = logp.shape()[1];
  const int32_t* l = labels.data<int32_t>();
  if (logp.dtype() == DType::f32)
    nll_forward_t(logp.data<float>(), l, loss.data<float>(), N, C);
  else
    nll_forward_t(logp.data<double>(), l, loss.data<double>(), N, C);
}

void CpuBackend::nll_backward(const Tensor& dloss, const Tensor& labels, Tensor& dlogp) {
  check_labels("nll_loss backward", dlogp, labels, dloss, device());
  check_label_values("nll_loss backward", labels, dlogp);
  const int64_t N = dlogp.shape()[0], C = dlogp.shape()[1];
  const int32_t* l = labels.data<int32_t>();
  if (dlogp.dtype() == DType::f32)
    nll_backward_t(dloss.data<float>(), l, dlogp.data<float>(), N, C);
  else
    nll_backward_t(dloss.data<double>(), l, dlogp.data<double>(), N, C);
}

void CpuBackend::softmax_cross_entropy_forward(const Tensor& x, const Tensor& labels,
                                               Tensor& loss) {
  check_labels("softmax_cross_entropy", x, labels, loss, device());
  check_label_values("softmax_cross_entropy", labels, x);
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.data<int32_t>();
  if (x.dtype() == DType::f32)
    softmax_cross_entropy_forward_t(x.data<float>(), l, loss.data<float>(), N, C);
  else
    softmax_cross_entropy_forward_t(x.data<double>(), l, loss.data<double>(), N, C);
}

void CpuBackend::softmax_cross_entropy_backward(const Tensor& x, const Tensor& labels,
                                                const Tensor& dloss, Tensor& dx) {
  check_labels("softmax_cross_entropy backward", x, labels, dloss, device());
  check_label_values("softmax_cross_entropy backward", labels, x);
  check_rows("softmax_cross_entropy backward", x, dx, device());
  const int64_t N = x.shape()[0], C = x.shape()[1];
  const int32_t* l = labels.data<int32_t>();
  if (x.dtype() == DType::f32)
    softmax_cross_entropy_backward_t(x.data<float>(), l, dloss.data<float>(), dx.data<float>(), N,
                                     C);
  else
    softmax_cross_entropy_backward_t(x.data<double>(), l, dloss.data<double>(), dx.data<double>(),
                                     N, C);
}

}  // namespace frugal
