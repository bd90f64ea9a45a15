// The CPU-only build's CUDA entry points: asking for CUDA where it was not built is an error,
// never a quiet CPU run. Compiled only when FRUGAL_CUDA is off (cmake/cuda.cmake has the twin).
#include "core/error.h"
#include "cuda/cuda_entry.h"

namespace frugal {

bool cuda_available() {
  return false;
}

Backend& cuda_backend() {
  throw Error("CUDA was not built (configure with -DFRUGAL_CUDA=ON)");
}

Allocator& cuda_allocator() {
  throw Error("CUDA was not built (configure with -DFRUGAL_CUDA=ON)");
}

CudaMemoryInfo cuda_memory_info() {
  throw Error("CUDA was not built (configure with -DFRUGAL_CUDA=ON)");
}

std::unique_ptr<Communicator> nccl_communicator(Communicator&) {
  throw Error(
      "NCCL was not built: it comes with the CUDA backend (configure with -DFRUGAL_CUDA=ON)");
}

void cuda_select_device(int) {
  throw Error("CUDA was not built (configure with -DFRUGAL_CUDA=ON)");
}

}  // namespace frugal
