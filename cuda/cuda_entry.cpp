// Entry points of a build with CUDA: the process-wide CUDA backend and device allocator, made on
// first use. Both are deliberately never destroyed, so that no handle or device pointer is
// released after the CUDA runtime has begun to shut down at exit.
#include "cuda/cuda_entry.h"

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/cuda_allocator.h"
#include "cuda/cuda_backend.h"

namespace frugal {

namespace {
// Throws unless a CUDA device is present, naming `what` and the runtime's reason.
void require_device(const char* what) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw Error(detail::concat(what, ": no usable CUDA device: ", cudaGetErrorString(status)));
  }
  FRUGAL_CHECK(count > 0, what, ": no CUDA device is present");
}
}  // namespace

bool cuda_available() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

Backend& cuda_backend() {
  static CudaBackend* backend = [] {
    require_device("cuda_backend");
    return new CudaBackend();
  }();
  return *backend;
}

Allocator& cuda_allocator() {
  static CudaAllocator* allocator = [] {
    require_device("cuda_allocator");
    return new CudaAllocator();
  }();
  return *allocator;
}

CudaMemoryInfo cuda_memory_info() {
  require_device("cuda_memory_info");
  CudaMemoryInfo m;
  FRUGAL_CUDA_CHECK(cudaMemGetInfo(&m.free, &m.total));
  return m;
}

}  // namespace frugal
