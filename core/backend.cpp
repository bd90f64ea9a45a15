// Host copies through a backend, the backends by device name, optimizer names.
#include "core/backend.h"

#include "core/error.h"
#include "cuda/cuda_entry.h"

namespace frugal {

const char* optimizer_name(OptimizerKind k) {
  return k == OptimizerKind::adamw ? "adamw" : "sgd";
}

const Tensor& to_host(Backend& be, const Tensor& t, Tensor& staging) {
  if (t.device().is_host()) return t;
  if (!staging.defined() || staging.meta() != t.meta())
    staging = Tensor::empty(t.shape(), t.dtype(), t.storage()->role());
  be.copy_to_host(t, staging);
  return staging;
}

Tensor to_host(Backend& be, const Tensor& t) {
  Tensor staging;
  return to_host(be, t, staging);
}

Tensor clone_to_host(Backend& be, const Tensor& t) {
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), t.storage()->role());
  if (t.device().is_host())
    be.copy(t, copy);
  else
    be.copy_to_host(t, copy);
  return copy;
}

Backend& backend_named(const std::string& device) {
  if (device == "cpu") return cpu_backend();
  if (device == "sim") return sim_backend();
  if (device == "cuda") return cuda_backend();
  throw Error("unknown device '" + device + "'; valid: cpu, sim, cuda");
}

}  // namespace frugal
