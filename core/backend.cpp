// Host copies through a backend, the backends by device name, optimizer names, convolution sizes.
#include "core/backend.h"

#include "core/error.h"
#include "cuda/cuda_entry.h"

namespace frugal {

const char* optimizer_name(OptimizerKind k) {
  return k == OptimizerKind::adamw ? "adamw" : "sgd";
}

TensorMeta maxpool_index_meta(const Pool2dGeometry& g, int bits) {
  if (bits == 4) return {Shape{g.N * g.C, (g.P * g.Q + 1) / 2}, DType::u8};
  return {Shape{g.N, g.C, g.P, g.Q}, DType::u8};
}

int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t pad_end,
                         int64_t dilation) {
  const int64_t span = dilation * (k - 1) + 1, padded = in + pad + pad_end;
  return padded < span || stride < 1 ? 0 : (padded - span) / stride + 1;
}

bool conv_is_plain(const Conv2dGeometry& g) {
  return g.groups == 1 && g.dilation_h == 1 && g.dilation_w == 1 && g.pad_h_end == g.pad_h &&
         g.pad_w_end == g.pad_w;
}

bool pool_windows_hold_input(const Pool2dGeometry& g) {
  // Along one axis: the first tap of window o at or after 0 lies before `in`, for every o.
  // Without a loop over the windows (a file may give an axis of billions): windows that start
  // inside need only the last of them checked; of those that start in the padding, the first
  // tap inside is the i-th, i = ceil((pad - o stride) / dil), largest at o = 0, at (o stride -
  // pad) mod dil, which is below `in` wherever dil <= in and repeats with a period of at most
  // dil windows.
  auto axis = [](int64_t out, int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    if (k < 1 || stride < 1 || dil < 1) return false;
    if (out <= 0) return true;
    const int64_t before = std::min(out, (pad + stride - 1) / stride);  // start in the padding
    if (before > 0) {
      if ((pad + dil - 1) / dil >= k) return false;
      if (in < dil)
        for (int64_t o = 0; o < std::min(before, dil); ++o) {
          const int64_t start = o * stride - pad;
          if (start + (-start + dil - 1) / dil * dil >= in) return false;
        }
    }
    return before == out || (out - 1) * stride - pad < in;
  };
  return axis(g.P, g.H, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h) &&
         axis(g.Q, g.W, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w);
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

// Layer norm and reductions: devices without their kernels throw naming themselves.
void Backend::layernorm_forward(const Tensor&, const Tensor&, const Tensor&, double, Tensor&,
                                Tensor&, Tensor&) {
  throw Error("layer_norm: no layer norm kernels on " + device().str());
}
void Backend::layernorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, Tensor&, Tensor&, Tensor&) {
  throw Error("layer_norm backward: no layer norm kernels on " + device().str());
}
void Backend::groupnorm_forward(const Tensor&, const Tensor&, const Tensor&, int64_t, double,
                                Tensor&, Tensor&, Tensor&) {
  throw Error("group_norm: no group norm kernels on " + device().str());
}
void Backend::groupnorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                 const Tensor&, int64_t, Tensor&, Tensor&, Tensor&, const Tensor&) {
  throw Error("group_norm backward: no group norm kernels on " + device().str());
}
int64_t Backend::pack_counts(const Tensor&, std::vector<int64_t>&) {
  throw Error("pack: no packing kernels on " + device().str());
}
void Backend::pack(const Tensor&, std::span<const int64_t>, Tensor&) {
  throw Error("pack: no packing kernels on " + device().str());
}
void Backend::unpack(const Tensor&, Tensor&) {
  throw Error("unpack: no packing kernels on " + device().str());
}
void Backend::prelu_forward(const Tensor&, const Tensor&, Tensor&) {
  throw Error("prelu: no PReLU kernels on " + device().str());
}
void Backend::prelu_backward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&,
                             const Tensor&) {
  throw Error("prelu backward: no PReLU kernels on " + device().str());
}
void Backend::reduce_rows_forward(Reduction r, const Tensor&, Tensor&, Tensor&) {
  throw Error(std::string(reduction_name(r)) + ": no reduction kernels on " + device().str());
}
void Backend::reduce_rows_backward(Reduction r, const Tensor&, const Tensor&, const Tensor&,
                                   const Tensor&, Tensor&) {
  throw Error(std::string(reduction_name(r)) + " backward: no reduction kernels on " +
              device().str());
}
void Backend::gather_forward(const Tensor&, std::span<const int64_t>, int64_t, Tensor&) {
  throw Error("gather: no gather kernels on " + device().str());
}
void Backend::gather_backward(const Tensor&, std::span<const int64_t>, int64_t, Tensor&) {
  throw Error("gather backward: no gather kernels on " + device().str());
}
void Backend::pow_forward(const Tensor&, double, Tensor&) {
  throw Error("pow: no pow kernels on " + device().str());
}
void Backend::pow_backward(const Tensor&, double, const Tensor&, Tensor&) {
  throw Error("pow backward: no pow kernels on " + device().str());
}
void Backend::elu_forward(const Tensor&, const EluCoefficients&, Tensor&) {
  throw Error("elu: no ELU-family kernels on " + device().str());
}
void Backend::elu_backward(const Tensor&, bool, const EluCoefficients&, const Tensor&, Tensor&) {
  throw Error("elu backward: no ELU-family kernels on " + device().str());
}
void Backend::clamp_forward(const Tensor&, double, double, Tensor&) {
  throw Error("clamp: no clamp kernels on " + device().str());
}
void Backend::clamp_backward(const Tensor&, double, double, const Tensor&, Tensor&) {
  throw Error("clamp backward: no clamp kernels on " + device().str());
}
void Backend::batchnorm_backward_from_output(const Tensor&, const Tensor&, const Tensor&,
                                             const Tensor&, const Tensor&, Tensor&, Tensor&,
                                             Tensor&) {
  throw Error("batch_norm backward from its output (--bn-from-output) does not run on " +
              device().str());
}
void Backend::layernorm_backward_from_output(const Tensor&, const Tensor&, const Tensor&,
                                             const Tensor&, const Tensor&, Tensor&, Tensor&,
                                             Tensor&) {
  throw Error("layer_norm backward from its output (--ln-from-output) does not run on " +
              device().str());
}
// Synchronized batch norm: only devices that run several ranks implement it.
void Backend::batchnorm_sums(const Tensor&, const Tensor&, const Tensor&, const Tensor&, Tensor&) {
  throw Error("batchnorm_sums: synchronized batch norm (--sync-bn) does not run on " +
              device().str());
}
void Backend::batchnorm_sync_stats(const Tensor&, const Tensor&, double, double, double, Tensor&,
                                   Tensor&, Tensor&, Tensor&) {
  throw Error("batchnorm_sync_stats: synchronized batch norm (--sync-bn) does not run on " +
              device().str());
}
void Backend::batchnorm_backward_data(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                      const Tensor&, const Tensor&, double, double, Tensor&) {
  throw Error("batchnorm_backward_data: synchronized batch norm (--sync-bn) does not run on " +
              device().str());
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
