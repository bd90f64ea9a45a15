// The device allocator: cudaMalloc and cudaFree, whose pointers are 256-byte aligned.
#include "cuda/cuda_allocator.h"

#include "cuda/check.h"

namespace frugal {

CudaAllocator::CudaAllocator() {
  FRUGAL_CUDA_CHECK(cudaGetDevice(&device_));
}

void* CudaAllocator::raw_allocate(size_t bytes) {
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    return nullptr;
  }
  FRUGAL_CUDA_CHECK(status);
  return p;
}

// Errors are ignored: a release at process exit may come after the runtime has shut down.
void CudaAllocator::raw_release(void* p) {
  cudaFree(p);
}

}  // namespace frugal
