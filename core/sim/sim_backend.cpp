// SimBackend: each call checks that its tensors are sim memory, views their bytes from the host
// (views made here and dropped when the call returns) and runs the CPU kernel on the views.
// One short forwarding function per Backend kernel: past 400 lines as the Backend grows.
#include "core/sim/sim_backend.h"

#include <deque>
#include <vector>

#include "core/error.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// Host views of one call's sim tensors, alive until the call returns. A view keeps the
// tensor's offset inside its storage's host block, so two views of one storage alias exactly
// where the tensors do (kernels compare addresses to tell an in-place call).
class Views {
 public:
  Views(const SimAllocator& alloc, const char* op) : alloc_(alloc), op_(op) {}

  // The host view of t (undefined for an undefined t); throws unless t is sim memory.
  Tensor& operator()(const Tensor& t) {
    views_.push_back(view(t));
    return views_.back();
  }
  std::span<Tensor> span(std::span<const Tensor> ts) {
    std::vector<Tensor>& v = spans_.emplace_back();
    for (const Tensor& t : ts) v.push_back(view(t));
    return v;
  }

 private:
  Tensor view(const Tensor& t) const {
    if (!t.defined()) return t;
    check_device(op_, {&t}, alloc_.device());
    const Storage& s = *t.storage();
    auto host =
        std::make_shared<Storage>(alloc_.host_address(s.data()), s.bytes(), Device{}, s.role());
    return Tensor(std::move(host), t.offset(), t.shape(), t.dtype());
  }

  const SimAllocator& alloc_;
  const char* op_;
  std::deque<Tensor> views_;
  std::deque<std::vector<Tensor>> spans_;
};

void check_host_side(const char* op, const Tensor& host) {
  FRUGAL_CHECK(host.device().is_host(), "sim backend: ", op, ": the host side ", host.shape(),
               " lives on ", host.device().str(), ", not in host memory");
}

}  // namespace

Backend& sim_backend() {
  static SimBackend b(cpu_backend(), sim_allocator());
  return b;
}

Backend& sim_backend_without_optional_kernels() {
  static SimBackend b(cpu_backend(), sim_allocator(), false);
  return b;
}

void SimBackend::copy_to_device(const Tensor& host, Tensor& dev) {
  check_host_side("copy_to_device", host);
  Views view(alloc_, "copy_to_device");
  copy_bytes(host, view(dev));
}

void SimBackend::copy_to_host(const Tensor& dev, Tensor& host) {
  check_host_side("copy_to_host", host);
  Views view(alloc_, "copy_to_host");
  copy_bytes(view(dev), host);
}

void SimBackend::fill(Tensor& t, double value) {
  Views view(alloc_, "fill");
  cpu_.fill(view(t), value);
}

void SimBackend::copy(const Tensor& x, Tensor& y) {
  Views view(alloc_, "copy");
  cpu_.copy(view(x), view(y));
}

void SimBackend::accumulate(const Tensor& x, Tensor& y) {
  Views view(alloc_, "accumulate");
  cpu_.accumulate(view(x), view(y));
}

int64_t SimBackend::first_non_finite(const Tensor& t) {
  Views view(alloc_, "first_non_finite");
  return cpu_.first_non_finite(view(t));
}

void SimBackend::linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) {
  Views view(alloc_, "linear_forward");
  cpu_.linear_forward(view(x), view(w), view(b), view(y));
}

void SimBackend::linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) {
  Views view(alloc_, "linear_backward_data");
  cpu_.linear_backward_data(view(dy), view(w), view(dx));
}

void SimBackend::linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) {
  Views view(alloc_, "linear_backward_weight");
  cpu_.linear_backward_weight(view(x), view(dy), view(dw), view(db));
}

size_t SimBackend::conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const {
  return cpu_.conv2d_forward_scratch(g, t);
}

size_t SimBackend::conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const {
  return cpu_.conv2d_backward_scratch(g, t);
}

namespace {
bool g_scratch_choices = false;  // set_sim_scratch_choices
}  // namespace

void set_sim_scratch_choices(bool enabled) {
  g_scratch_choices = enabled;
}

std::vector<ScratchChoice> SimBackend::conv2d_scratch_choices(const Conv2dGeometry& g, DType t,
                                                              bool backward) const {
  if (!g_scratch_choices) return {};
  const size_t least = backward ? conv2d_backward_scratch(g, t) : conv2d_forward_scratch(g, t);
  const size_t in = static_cast<size_t>(g.N * g.C * g.H * g.W) * dtype_size(t);
  const size_t out = static_cast<size_t>(g.N * g.K * g.P * g.Q) * dtype_size(t);
  // A made-up rate: what matters is that each choice is faster than the one before.
  const double flops = 2.0 * static_cast<double>(g.N * g.K * g.P * g.Q) *
                       static_cast<double>(g.C / g.groups * g.R * g.S) * (backward ? 2 : 1);
  const double seconds = flops / 1e12;
  return {{least, seconds, "sim: least"},
          {least + in, 0.6 * seconds, "sim: one input more"},
          {least + 4 * (in + out), 0.35 * seconds, "sim: FFT-sized"}};
}

void SimBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                const Tensor& b, Tensor& y, Tensor& scratch) {
  Views view(alloc_, "conv2d_forward");
  cpu_.conv2d_forward(g, view(x), view(w), view(b), view(y), view(scratch));
}

void SimBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                      Tensor& dx, Tensor& scratch) {
  Views view(alloc_, "conv2d_backward_data");
  cpu_.conv2d_backward_data(g, view(dy), view(w), view(dx), view(scratch));
}

void SimBackend::conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                        Tensor& dw, Tensor& db, Tensor& scratch) {
  Views view(alloc_, "conv2d_backward_filter");
  cpu_.conv2d_backward_filter(g, view(x), view(dy), view(dw), view(db), view(scratch));
}

void SimBackend::maxpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                   Tensor& index) {
  Views view(alloc_, "maxpool2d_forward");
  cpu_.maxpool2d_forward(g, view(x), view(y), view(index));
}

void SimBackend::maxpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                                    Tensor& dx) {
  Views view(alloc_, "maxpool2d_backward");
  cpu_.maxpool2d_backward(g, view(dy), view(index), view(dx));
}

void SimBackend::avgpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  Views view(alloc_, "avgpool2d_forward");
  cpu_.avgpool2d_forward(g, view(x), view(y));
}

void SimBackend::avgpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "avgpool2d_backward");
  cpu_.avgpool2d_backward(g, view(dy), view(dx));
}

void SimBackend::upsample_nearest_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) {
  Views view(alloc_, "upsample_nearest_forward");
  cpu_.upsample_nearest_forward(g, view(x), view(y));
}

void SimBackend::upsample_nearest_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "upsample_nearest_backward");
  cpu_.upsample_nearest_backward(g, view(dy), view(dx));
}

void SimBackend::batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         Tensor& running_mean, Tensor& running_var, double momentum,
                                         double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  Views view(alloc_, "batchnorm_forward_train");
  cpu_.batchnorm_forward_train(view(x), view(gamma), view(beta), view(running_mean),
                               view(running_var), momentum, eps, view(y), view(mean),
                               view(inv_std));
}

void SimBackend::batchnorm_forward_infer(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                         const Tensor& running_mean, const Tensor& running_var,
                                         double eps, Tensor& y) {
  Views view(alloc_, "batchnorm_forward_infer");
  cpu_.batchnorm_forward_infer(view(x), view(gamma), view(beta), view(running_mean),
                               view(running_var), eps, view(y));
}

void SimBackend::batchnorm_normalize(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                     const Tensor& mean, const Tensor& inv_std, Tensor& y) {
  Views view(alloc_, "batchnorm_normalize");
  cpu_.batchnorm_normalize(view(x), view(gamma), view(beta), view(mean), view(inv_std), view(y));
}

void SimBackend::batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  Views view(alloc_, "batchnorm_backward");
  cpu_.batchnorm_backward(view(x), view(dy), view(gamma), view(mean), view(inv_std), view(dx),
                          view(dgamma), view(dbeta));
}

void SimBackend::batchnorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                                const Tensor& gamma, const Tensor& beta,
                                                const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                                Tensor& dbeta) {
  if (!optional_kernels_)
    return Backend::batchnorm_backward_from_output(y, dy, gamma, beta, inv_std, dx, dgamma, dbeta);
  Views view(alloc_, "batchnorm_backward_from_output");
  cpu_.batchnorm_backward_from_output(view(y), view(dy), view(gamma), view(beta), view(inv_std),
                                      view(dx), view(dgamma), view(dbeta));
}

void SimBackend::layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   double eps, Tensor& y, Tensor& mean, Tensor& inv_std) {
  Views view(alloc_, "layernorm_forward");
  cpu_.layernorm_forward(view(x), view(gamma), view(beta), eps, view(y), view(mean), view(inv_std));
}

void SimBackend::layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                    Tensor& dgamma, Tensor& dbeta) {
  Views view(alloc_, "layernorm_backward");
  cpu_.layernorm_backward(view(x), view(dy), view(gamma), view(mean), view(inv_std), view(dx),
                          view(dgamma), view(dbeta));
}

void SimBackend::layernorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                                const Tensor& gamma, const Tensor& beta,
                                                const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                                Tensor& dbeta) {
  if (!optional_kernels_)
    return Backend::layernorm_backward_from_output(y, dy, gamma, beta, inv_std, dx, dgamma, dbeta);
  Views view(alloc_, "layernorm_backward_from_output");
  cpu_.layernorm_backward_from_output(view(y), view(dy), view(gamma), view(beta), view(inv_std),
                                      view(dx), view(dgamma), view(dbeta));
}

void SimBackend::groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   int64_t groups, double eps, Tensor& y, Tensor& mean,
                                   Tensor& inv_std) {
  Views view(alloc_, "groupnorm_forward");
  cpu_.groupnorm_forward(view(x), view(gamma), view(beta), groups, eps, view(y), view(mean),
                         view(inv_std));
}

size_t SimBackend::groupnorm_backward_scratch(const TensorMeta& x) const {
  return cpu_.groupnorm_backward_scratch(x);
}

void SimBackend::groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                    const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                    Tensor& dx, Tensor& dgamma, Tensor& dbeta,
                                    const Tensor& scratch) {
  Views view(alloc_, "groupnorm_backward");
  cpu_.groupnorm_backward(view(x), view(dy), view(gamma), view(mean), view(inv_std), groups,
                          view(dx), view(dgamma), view(dbeta), view(scratch));
}

void SimBackend::prelu_forward(const Tensor& x, const Tensor& slope, Tensor& y) {
  Views view(alloc_, "prelu_forward");
  cpu_.prelu_forward(view(x), view(slope), view(y));
}

size_t SimBackend::prelu_backward_scratch(const TensorMeta& x) const {
  return cpu_.prelu_backward_scratch(x);
}

void SimBackend::prelu_backward(const Tensor& x, const Tensor& dy, const Tensor& slope, Tensor& dx,
                                Tensor& dslope, const Tensor& scratch) {
  Views view(alloc_, "prelu_backward");
  cpu_.prelu_backward(view(x), view(dy), view(slope), view(dx), view(dslope), view(scratch));
}

void SimBackend::reduce_rows_forward(Reduction r, const Tensor& x, Tensor& y, Tensor& index) {
  Views view(alloc_, "reduce_rows_forward");
  cpu_.reduce_rows_forward(r, view(x), view(y), view(index));
}

void SimBackend::reduce_rows_backward(Reduction r, const Tensor& x, const Tensor& y,
                                      const Tensor& index, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "reduce_rows_backward");
  cpu_.reduce_rows_backward(r, view(x), view(y), view(index), view(dy), view(dx));
}

void SimBackend::batchnorm_sums(const Tensor& x, const Tensor& mean, const Tensor& inv_std,
                                const Tensor& dy, Tensor& sums) {
  Views view(alloc_, "batchnorm_sums");
  cpu_.batchnorm_sums(view(x), view(mean), view(inv_std), view(dy), view(sums));
}

void SimBackend::batchnorm_sync_stats(const Tensor& sum, const Tensor& sq, double M,
                                      double momentum, double eps, Tensor& running_mean,
                                      Tensor& running_var, Tensor& mean, Tensor& inv_std) {
  Views view(alloc_, "batchnorm_sync_stats");
  cpu_.batchnorm_sync_stats(view(sum), view(sq), M, momentum, eps, view(running_mean),
                            view(running_var), view(mean), view(inv_std));
}

void SimBackend::batchnorm_backward_data(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                         const Tensor& mean, const Tensor& inv_std,
                                         const Tensor& sums, double M, double scale, Tensor& dx) {
  Views view(alloc_, "batchnorm_backward_data");
  cpu_.batchnorm_backward_data(view(x), view(dy), view(gamma), view(mean), view(inv_std),
                               view(sums), M, scale, view(dx));
}

int64_t SimBackend::pack_counts(const Tensor& x, std::vector<int64_t>& counts) {
  if (!optional_kernels_) return Backend::pack_counts(x, counts);
  Views view(alloc_, "pack_counts");
  return cpu_.pack_counts(view(x), counts);
}

void SimBackend::pack(const Tensor& x, std::span<const int64_t> counts, Tensor& packed) {
  if (!optional_kernels_) return Backend::pack(x, counts, packed);
  Views view(alloc_, "pack");
  cpu_.pack(view(x), counts, view(packed));
}

void SimBackend::unpack(const Tensor& packed, Tensor& x) {
  if (!optional_kernels_) return Backend::unpack(packed, x);
  Views view(alloc_, "unpack");
  cpu_.unpack(view(packed), view(x));
}

void SimBackend::relu_forward(const Tensor& x, Tensor& y, Tensor& mask) {
  Views view(alloc_, "relu_forward");
  cpu_.relu_forward(view(x), view(y), view(mask));
}

void SimBackend::relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) {
  Views view(alloc_, "relu_backward_mask");
  cpu_.relu_backward_mask(view(dy), view(mask), view(dx));
}

void SimBackend::relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) {
  Views view(alloc_, "relu_backward_output");
  cpu_.relu_backward_output(view(dy), view(y), view(dx));
}

void SimBackend::threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                                   Tensor& mask) {
  Views view(alloc_, "threshold_forward");
  cpu_.threshold_forward(view(x), threshold, value, view(y), view(mask));
}

void SimBackend::dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream,
                                 Tensor& y, Tensor& mask) {
  Views view(alloc_, "dropout_forward");
  cpu_.dropout_forward(view(x), p, seed, stream, view(y), view(mask));
}

void SimBackend::masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) {
  Views view(alloc_, "masked_scale");
  cpu_.masked_scale(view(dy), view(mask), scale, view(dx));
}

void SimBackend::add(const Tensor& a, const Tensor& b, Tensor& y) {
  Views view(alloc_, "add");
  cpu_.add(view(a), view(b), view(y));
}

void SimBackend::subtract(const Tensor& a, const Tensor& b, Tensor& y) {
  Views view(alloc_, "subtract");
  cpu_.subtract(view(a), view(b), view(y));
}

void SimBackend::concat_forward(std::span<const Tensor> xs, Tensor& y) {
  Views view(alloc_, "concat_forward");
  cpu_.concat_forward(view.span(xs), view(y));
}

void SimBackend::concat_backward(const Tensor& dy, std::span<Tensor> dxs) {
  Views view(alloc_, "concat_backward");
  cpu_.concat_backward(view(dy), view.span(dxs));
}

void SimBackend::strided_copy(const CopyBox& g, const Tensor& x, Tensor& y) {
  Views view(alloc_, "strided_copy");
  cpu_.strided_copy(g, view(x), view(y));
}

void SimBackend::resize_forward(const ResizeGeometry& g, const Tensor& x, Tensor& y) {
  Views view(alloc_, "resize_forward");
  cpu_.resize_forward(g, view(x), view(y));
}

void SimBackend::resize_backward(const ResizeGeometry& g, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "resize_backward");
  cpu_.resize_backward(g, view(dy), view(dx));
}

void SimBackend::grid_sample_forward(const GridSampleGeometry& g, const Tensor& x,
                                     const Tensor& grid, Tensor& y) {
  Views view(alloc_, "grid_sample_forward");
  cpu_.grid_sample_forward(g, view(x), view(grid), view(y));
}

void SimBackend::grid_sample_backward(const GridSampleGeometry& g, const Tensor& x,
                                      const Tensor& grid, const Tensor& dy, Tensor& dx,
                                      Tensor& dgrid) {
  Views view(alloc_, "grid_sample_backward");
  cpu_.grid_sample_backward(g, view(x), view(grid), view(dy), view(dx), view(dgrid));
}

void SimBackend::batched_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b,
                                Tensor& c) {
  Views view(alloc_, "batched_matmul");
  cpu_.batched_matmul(g, view(a), view(b), view(c));
}

void SimBackend::softmax_forward(const Tensor& x, int axis, Tensor& y) {
  Views view(alloc_, "softmax_forward");
  cpu_.softmax_forward(view(x), axis, view(y));
}

void SimBackend::softmax_backward(const Tensor& y, const Tensor& dy, int axis, Tensor& dx) {
  Views view(alloc_, "softmax_backward");
  cpu_.softmax_backward(view(y), view(dy), axis, view(dx));
}

void SimBackend::leaky_relu_forward(const Tensor& x, double slope, Tensor& y, Tensor& mask) {
  Views view(alloc_, "leaky_relu_forward");
  cpu_.leaky_relu_forward(view(x), slope, view(y), view(mask));
}

void SimBackend::leaky_relu_backward_mask(const Tensor& dy, const Tensor& mask, double slope,
                                          Tensor& dx) {
  Views view(alloc_, "leaky_relu_backward_mask");
  cpu_.leaky_relu_backward_mask(view(dy), view(mask), slope, view(dx));
}

void SimBackend::leaky_relu_backward_output(const Tensor& dy, const Tensor& y, double slope,
                                            Tensor& dx) {
  Views view(alloc_, "leaky_relu_backward_output");
  cpu_.leaky_relu_backward_output(view(dy), view(y), slope, view(dx));
}

void SimBackend::fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                                   const std::string& who) {
  Views view(alloc_, "fixed_point_round");
  cpu_.fixed_point_round(view(x), range_bits, view(y), who);
}

void SimBackend::fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract,
                                 Tensor& y, const std::string& who) {
  Views view(alloc_, "fixed_point_add");
  cpu_.fixed_point_add(view(a), view(f), range_bits, subtract, view(y), who);
}

void SimBackend::affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                                bool inverse, Tensor& y, const std::string& who) {
  Views view(alloc_, "affine_forward");
  cpu_.affine_forward(view(x), view(h), clamp, min_scale, inverse, view(y), who);
}

void SimBackend::affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                                 double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                                 const std::string& who) {
  Views view(alloc_, "affine_backward");
  cpu_.affine_backward(view(y), view(h), view(dy), clamp, min_scale, inverse, view(dx), view(dh),
                       view(x), who);
}

void SimBackend::log_softmax_forward(const Tensor& x, Tensor& y) {
  Views view(alloc_, "log_softmax_forward");
  cpu_.log_softmax_forward(view(x), view(y));
}

void SimBackend::log_softmax_backward(const Tensor& dy, const Tensor& y, Tensor& dx) {
  Views view(alloc_, "log_softmax_backward");
  cpu_.log_softmax_backward(view(dy), view(y), view(dx));
}

void SimBackend::nll_forward(const Tensor& logp, const Tensor& labels, Tensor& loss) {
  Views view(alloc_, "nll_forward");
  cpu_.nll_forward(view(logp), view(labels), view(loss));
}

void SimBackend::nll_backward(const Tensor& dloss, const Tensor& labels, Tensor& dlogp) {
  Views view(alloc_, "nll_backward");
  cpu_.nll_backward(view(dloss), view(labels), view(dlogp));
}

void SimBackend::softmax_cross_entropy_forward(const Tensor& x, const Tensor& labels,
                                               Tensor& loss) {
  Views view(alloc_, "softmax_cross_entropy_forward");
  cpu_.softmax_cross_entropy_forward(view(x), view(labels), view(loss));
}

void SimBackend::softmax_cross_entropy_backward(const Tensor& x, const Tensor& labels,
                                                const Tensor& dloss, Tensor& dx) {
  Views view(alloc_, "softmax_cross_entropy_backward");
  cpu_.softmax_cross_entropy_backward(view(x), view(labels), view(dloss), view(dx));
}

void SimBackend::sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) {
  Views view(alloc_, "sgd_step");
  cpu_.sgd_step(view(w), view(dw), view(v), c);
}

void SimBackend::adamw_step(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v,
                            const OptimizerConfig& c) {
  Views view(alloc_, "adamw_step");
  cpu_.adamw_step(view(w), view(dw), view(m), view(v), c);
}

void SimBackend::binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                Tensor& y) {
  Views view(alloc_, "binary_forward");
  cpu_.binary_forward(k, g, view(a), view(b), view(y));
}

void SimBackend::binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                                 const Tensor& dy, Tensor& da, Tensor& db) {
  Views view(alloc_, "binary_backward");
  cpu_.binary_backward(k, g, view(a), view(b), view(dy), view(da), view(db));
}

void SimBackend::activation_forward(Activation a, const Tensor& x, Tensor& y) {
  Views view(alloc_, "activation_forward");
  cpu_.activation_forward(a, view(x), view(y));
}

void SimBackend::activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "activation_backward");
  cpu_.activation_backward(a, view(v), view(dy), view(dx));
}

void SimBackend::gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                                Tensor& y) {
  Views view(alloc_, "gather_forward");
  cpu_.gather_forward(view(x), index, outer, view(y));
}

void SimBackend::gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                                 Tensor& dx) {
  Views view(alloc_, "gather_backward");
  cpu_.gather_backward(view(dy), index, outer, view(dx));
}

void SimBackend::elu_forward(const Tensor& x, const EluCoefficients& c, Tensor& y) {
  Views view(alloc_, "elu_forward");
  cpu_.elu_forward(view(x), c, view(y));
}

void SimBackend::elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                              const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "elu_backward");
  cpu_.elu_backward(view(v), from_output, c, view(dy), view(dx));
}

void SimBackend::pow_forward(const Tensor& x, double exponent, Tensor& y) {
  Views view(alloc_, "pow_forward");
  cpu_.pow_forward(view(x), exponent, view(y));
}

void SimBackend::pow_backward(const Tensor& x, double exponent, const Tensor& dy, Tensor& dx) {
  Views view(alloc_, "pow_backward");
  cpu_.pow_backward(view(x), exponent, view(dy), view(dx));
}

void SimBackend::clamp_forward(const Tensor& x, double lo, double hi, Tensor& y) {
  Views view(alloc_, "clamp_forward");
  cpu_.clamp_forward(view(x), lo, hi, view(y));
}

void SimBackend::clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy,
                                Tensor& dx) {
  Views view(alloc_, "clamp_backward");
  cpu_.clamp_backward(view(x), lo, hi, view(dy), view(dx));
}

}  // namespace frugal
