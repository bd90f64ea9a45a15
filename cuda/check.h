// Checks for CUDA, cuBLAS and cuDNN calls (private to cuda/): every call is wrapped, and a
// failure throws frugal::Error naming the file, the line, the call and the library's message.
// Kernel launches are checked with FRUGAL_CUDA_CHECK(cudaGetLastError()).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>

namespace frugal {

// Throw frugal::Error("<file>:<line>: <call> failed: <message>") when status is not success.
void cuda_check(cudaError_t status, const char* call, const char* file, int line);
void cublas_check(cublasStatus_t status, const char* call, const char* file, int line);
void cudnn_check(cudnnStatus_t status, const char* call, const char* file, int line);
// An extent as cuBLAS's int; throws "<op>: extent <v> exceeds cuBLAS's int range" beyond it.
int cublas_int(int64_t v, const char* op);

}  // namespace frugal

#define FRUGAL_CUDA_CHECK(call) ::frugal::cuda_check((call), #call, __FILE__, __LINE__)
#define FRUGAL_CUBLAS_CHECK(call) ::frugal::cublas_check((call), #call, __FILE__, __LINE__)
#define FRUGAL_CUDNN_CHECK(call) ::frugal::cudnn_check((call), #call, __FILE__, __LINE__)
