// The CUDA backend's gather along one axis and its backward, the CPU twin's arithmetic
// (core/cpu/gather.cpp): forward copies, one thread per output element; backward gives each
// element of dx one thread that adds, from +0, the dy elements gathered from it in ascending k,
// so a repeated index sums in the CPU's order and no atomics are needed. The index lives on the
// host (the op's attribute); its device copy, with the inverse lists backward reads, is made on
// first use and kept by the backend, as the convolution plans are. An embedding's rows change
// every step: they are uploaded on each call into device memory kept for the next.
#include <numeric>

#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

// An index on the device: index[K], and for each position d of the gathered axis the k with
// index[k] == d, ascending, at order[offsets[d] .. offsets[d + 1]).
struct GatherIndex {
  int64_t* index = nullptr;
  int64_t* offsets = nullptr;
  int64_t* order = nullptr;
  GatherIndex() = default;
  GatherIndex(const GatherIndex&) = delete;
  GatherIndex& operator=(const GatherIndex&) = delete;
  ~GatherIndex() {  // errors ignored: at process exit the runtime may be shutting down
    if (index) cudaFree(index);
    if (offsets) cudaFree(offsets);
    if (order) cudaFree(order);
  }
};

namespace {

// y (O, K, I) from x (O, D, I): y[o, k, i] = x[o, index[k], i].
template <typename T>
__global__ void gather_kernel(const T* x, const int64_t* index, int64_t D, int64_t K, int64_t I,
                              T* y, int64_t n) {
  const int64_t e = thread_index();
  if (e >= n) return;
  const int64_t i = e % I, k = (e / I) % K, o = e / (I * K);
  y[e] = x[(o * D + index[k]) * I + i];
}

// dx[o, d, i] = 0 + dy[o, k1, i] + dy[o, k2, i] + ... over the k with index[k] == d, ascending.
template <typename T>
__global__ void gather_backward_kernel(const T* dy, const int64_t* offsets, const int64_t* order,
                                       int64_t D, int64_t K, int64_t I, T* dx, int64_t n) {
  const int64_t e = thread_index();
  if (e >= n) return;
  const int64_t i = e % I, d = (e / I) % D, o = e / (I * D);
  T acc = T(0);
  for (int64_t j = offsets[d]; j < offsets[d + 1]; ++j) acc += dy[(o * K + order[j]) * I + i];
  dx[e] = acc;
}

template <typename T>
void copy_up(T*& to, const std::vector<T>& from) {
  FRUGAL_CUDA_CHECK(cudaMalloc(&to, sizeof(T) * std::max<size_t>(from.size(), 1)));
  FRUGAL_CUDA_CHECK(cudaMemcpy(to, from.data(), sizeof(T) * from.size(), cudaMemcpyHostToDevice));
}

// For each d in [0, D), the k with index[k] == d, ascending, at order[offsets[d] ..
// offsets[d + 1]): a counting sort of k by index[k], stable.
void backward_lists(std::span<const int64_t> index, int64_t D, std::vector<int64_t>& offsets,
                    std::vector<int64_t>& order) {
  offsets.assign(static_cast<size_t>(D) + 1, 0);
  order.resize(index.size());
  for (int64_t d : index) ++offsets[static_cast<size_t>(d) + 1];
  std::partial_sum(offsets.begin(), offsets.end(), offsets.begin());
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t k = 0; k < index.size(); ++k)
    order[static_cast<size_t>(next[static_cast<size_t>(index[k])]++)] = static_cast<int64_t>(k);
}

void copy_into(int64_t* to, std::span<const int64_t> from) {
  FRUGAL_CUDA_CHECK(
      cudaMemcpy(to, from.data(), sizeof(int64_t) * from.size(), cudaMemcpyHostToDevice));
}

}  // namespace

const GatherIndex& CudaBackend::gather_index(std::span<const int64_t> index, int64_t D) {
  std::lock_guard<std::mutex> lock(gather_mutex_);
  if (auto it = gather_indexes_.find(GatherView{D, index}); it != gather_indexes_.end())
    return *it->second;
  GatherKey key{D, {index.begin(), index.end()}};
  std::vector<int64_t> offsets, order;
  backward_lists(index, D, offsets, order);
  auto g = std::make_shared<GatherIndex>();
  copy_up(g->index, key.second);
  copy_up(g->offsets, offsets);
  copy_up(g->order, order);
  return *gather_indexes_.emplace(std::move(key), std::move(g)).first->second;
}

// Called from one thread at a time, as every kernel of this backend (the executor runs one op
// at a time): the rows it returns are in use until the next call.
const GatherIndex& CudaBackend::embedding_index(std::span<const int64_t> rows, int64_t D) {
  const auto K = static_cast<int64_t>(rows.size());
  if (!embedding_rows_ || K > embedding_room_.first || D > embedding_room_.second) {
    embedding_room_ = {std::max(K, embedding_room_.first), std::max(D, embedding_room_.second)};
    embedding_rows_ = std::make_shared<GatherIndex>();
    const std::vector<int64_t> k_room(static_cast<size_t>(embedding_room_.first)),
        d_room(static_cast<size_t>(embedding_room_.second) + 1);
    copy_up(embedding_rows_->index, k_room);
    copy_up(embedding_rows_->order, k_room);
    copy_up(embedding_rows_->offsets, d_room);
  }
  std::vector<int64_t> offsets, order;
  backward_lists(rows, D, offsets, order);
  copy_into(embedding_rows_->index, rows);
  copy_into(embedding_rows_->offsets, offsets);
  copy_into(embedding_rows_->order, order);
  return *embedding_rows_;
}

namespace {

// y (O, K, I) from x (O, D, I) at g's index, and dx from dy through g's backward lists.
void run_gather(const Tensor& x, const GatherIndex& g, int64_t outer, int64_t D, int64_t K,
                int64_t I, Tensor& y) {
  const int64_t n = outer * K * I;
  if (x.dtype() == DType::f32)
    launch(n, gather_kernel<float>, x.device_data<float>(), g.index, D, K, I,
           y.device_data<float>(), n);
  else
    launch(n, gather_kernel<double>, x.device_data<double>(), g.index, D, K, I,
           y.device_data<double>(), n);
}

void run_gather_backward(const Tensor& dy, const GatherIndex& g, int64_t outer, int64_t D,
                         int64_t K, int64_t I, Tensor& dx) {
  const int64_t n = outer * D * I;
  if (dx.dtype() == DType::f32)
    launch(n, gather_backward_kernel<float>, dy.device_data<float>(), g.offsets, g.order, D, K, I,
           dx.device_data<float>(), n);
  else
    launch(n, gather_backward_kernel<double>, dy.device_data<double>(), g.offsets, g.order, D, K, I,
           dx.device_data<double>(), n);
}

}  // namespace

void CudaBackend::gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                                 Tensor& y) {
  const auto [D, I] = check_gather("gather", x, index, outer, y, device());
  run_gather(x, gather_index(index, D), outer, D, static_cast<int64_t>(index.size()), I, y);
}

void CudaBackend::gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                                  Tensor& dx) {
  const auto [D, I] = check_gather("gather backward", dx, index, outer, dy, device());
  run_gather_backward(dy, gather_index(index, D), outer, D, static_cast<int64_t>(index.size()), I,
                      dx);
}

void CudaBackend::embedding_forward(const Tensor& table, std::span<const int64_t> rows, Tensor& y) {
  const auto [D, I] = check_gather("embedding", table, rows, 1, y, device());
  run_gather(table, embedding_index(rows, D), 1, D, static_cast<int64_t>(rows.size()), I, y);
}

void CudaBackend::embedding_backward(const Tensor& dy, std::span<const int64_t> rows,
                                     Tensor& dtable) {
  const auto [D, I] = check_gather("embedding backward", dtable, rows, 1, dy, device());
  run_gather_backward(dy, embedding_index(rows, D), 1, D, static_cast<int64_t>(rows.size()), I,
                      dtable);
}

}  // namespace frugal
