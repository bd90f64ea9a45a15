// The CUDA backend's strided copy: one thread per element of the simplified box, its index
// split over the box's axes (at most CopyBox::kMaxRank), the box passed by value.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__global__ void strided_copy_kernel(CopyBox b, const T* x, T* y, int64_t n) {
  const int64_t i = thread_index();
  if (i >= n) return;
  int64_t rest = i, ox = b.x_offset, oy = b.y_offset;
  for (int k = b.rank - 1; k >= 0; --k) {
    const int64_t j = rest % b.size[k];
    rest /= b.size[k];
    ox += j * b.x_stride[k];
    oy += j * b.y_stride[k];
  }
  y[oy] = x[ox];
}

template <typename T>
void run_copy(const CopyBox& b, const Tensor& x, Tensor& y) {
  launch(b.numel(), strided_copy_kernel<T>, b, static_cast<const T*>(x.device_raw()),
         static_cast<T*>(y.device_raw()), b.numel());
}

}  // namespace

void CudaBackend::strided_copy(const CopyBox& g, const Tensor& x, Tensor& y) {
  check_strided_copy(g, x, y, device());
  const CopyBox b = g.simplified();
  if (b.numel() == 0) return;
  switch (dtype_size(x.dtype())) {
    case 1:
      return run_copy<uint8_t>(b, x, y);
    case 2:
      return run_copy<uint16_t>(b, x, y);
    case 4:
      return run_copy<uint32_t>(b, x, y);
    case 8:
      return run_copy<uint64_t>(b, x, y);
    default:
      throw Error("strided_copy: elements of " + std::to_string(dtype_size(x.dtype())) + " bytes");
  }
}

}  // namespace frugal
