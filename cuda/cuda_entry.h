// The CUDA backend's entry points for the rest of frugal. No CUDA headers and no #ifdef: a
// build with FRUGAL_CUDA=ON defines them in cuda/cuda_entry.cpp; a CPU-only build defines them
// to report that CUDA was not built.
#pragma once

#include <memory>

#include "core/allocator.h"
#include "core/backend.h"
#include "core/communicator.h"

namespace frugal {

// Whether CUDA was built and a CUDA device is present.
bool cuda_available();
// The CUDA backend on the current device. Throws frugal::Error if CUDA was not built or no
// device is present; never falls back to the CPU.
Backend& cuda_backend();
// Memory of the current CUDA device (256-byte aligned); throws as cuda_backend() does.
Allocator& cuda_allocator();

// The driver's view of the current device's memory (cudaMemGetInfo): what every user of the
// device holds, cuDNN's and cuBLAS's own allocations and the CUDA context included.
struct CudaMemoryInfo {
  size_t free = 0, total = 0;
  size_t used() const { return total - free; }
};
CudaMemoryInfo cuda_memory_info();

// Several ranks on GPUs: NCCL between the ranks of `bootstrap` (an MPI communicator, which
// carries NCCL's unique id from rank 0), one GPU per rank, the current device
// (cuda_select_device first). Throws as cuda_backend() does where CUDA was not built.
std::unique_ptr<Communicator> nccl_communicator(Communicator& bootstrap);
// Makes device local_rank % (devices on this host) current, before the backend is first used.
void cuda_select_device(int local_rank);

}  // namespace frugal
