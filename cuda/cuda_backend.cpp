// Construction of the CUDA backend: the cuBLAS and cuDNN handles on the current device, set up
// so that results are deterministic and computed in full precision.
#include "cuda/cuda_backend.h"

#include "cuda/channel.h"
#include "cuda/cuda_entry.h"

namespace frugal {

CudaBackend::CudaBackend() {
  try {
    FRUGAL_CUDA_CHECK(cudaGetDevice(&device_));
    FRUGAL_CUBLAS_CHECK(cublasCreate(&cublas_));
    // Default math computes f32 GEMMs in f32 (TF32 only on request); no atomics in reductions.
    FRUGAL_CUBLAS_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
    FRUGAL_CUBLAS_CHECK(cublasSetAtomicsMode(cublas_, CUBLAS_ATOMICS_NOT_ALLOWED));
    FRUGAL_CUDNN_CHECK(cudnnCreate(&cudnn_));
    FRUGAL_CUDA_CHECK(cudaMalloc(&status_, sizeof *status_));
    FRUGAL_CUDA_CHECK(cudaMalloc(&reduce_, sizeof(double) * (kPartialDoubles + kSumDoubles)));
  } catch (...) {
    release();
    throw;
  }
}

CudaBackend::~CudaBackend() {
  release();
}

Allocator& CudaBackend::allocator() const {
  return cuda_allocator();
}

double* CudaBackend::sums() const {
  return reduce_ + kPartialDoubles;
}

void CudaBackend::synchronize() {
  FRUGAL_CUDA_CHECK(cudaDeviceSynchronize());
}

// Errors are ignored here: at process exit the CUDA runtime may already be shutting down.
void CudaBackend::release() noexcept {
  if (status_) cudaFree(status_);
  if (reduce_) cudaFree(reduce_);
  reduce_ = nullptr;
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  status_ = nullptr;
  cudnn_ = nullptr;
  cublas_ = nullptr;
}

}  // namespace frugal
