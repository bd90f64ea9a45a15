// Error reporting for the CUDA, cuBLAS and cuDNN checks of cuda/check.h.
#include "cuda/check.h"

#include <limits>

#include "core/error.h"

namespace frugal {

void cuda_check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that later calls do not report it again
  throw Error(detail::concat(file, ":", line, ": ", call, " failed: ", cudaGetErrorString(status),
                             " (", cudaGetErrorName(status), ")"));
}

void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw Error(detail::concat(file, ":", line, ": ", call,
                             " failed: ", cublasGetStatusString(status), " (",
                             cublasGetStatusName(status), ")"));
}

int cublas_int(int64_t v, const char* op) {
  FRUGAL_CHECK(v <= std::numeric_limits<int>::max(), op, ": extent ", v,
               " exceeds cuBLAS's int range");
  return static_cast<int>(v);
}

void cudnn_check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw Error(detail::concat(file, ":", line, ": ", call, " failed: ", cudnnGetErrorString(status),
                             " (status ", static_cast<int>(status), ")"));
}

}  // namespace frugal
