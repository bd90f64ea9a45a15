// The simulated device's backend: every kernel is the CPU backend's, run on host views of sim
// memory that only this backend can make (core/sim/sim_allocator.h). Host code that reads or
// writes a sim tensor any other way faults at once, so a run on this backend proves that every
// byte host code touches went through a backend copy, and its results are the CPU's bit for bit.
#pragma once

#include "core/backend.h"
#include "core/sim/sim_allocator.h"

namespace frugal {

class SimBackend final : public Backend {
 public:
  // Without `optional_kernels` the device offers none of the kernels a device may lack (packing,
  // batch and layer norms from their outputs), as CUDA's does not: what asks for them is refused
  // as it would be there (sim_backend_without_optional_kernels()).
  SimBackend(Backend& cpu, SimAllocator& alloc, bool optional_kernels = true)
      : cpu_(cpu), alloc_(alloc), optional_kernels_(optional_kernels) {}

  Device device() const override { return alloc_.device(); }
  int threads() const override { return cpu_.threads(); }
  Allocator& allocator() const override { return alloc_; }

  // Every tensor argument must live in sim memory, except the host side of the two copies.
  void copy_to_device(const Tensor& host, Tensor& dev) override;
  void copy_to_host(const Tensor& dev, Tensor& host) override;
  void fill(Tensor& t, double value) override;
  void copy(const Tensor& x, Tensor& y) override;
  void accumulate(const Tensor& x, Tensor& y) override;
  int64_t first_non_finite(const Tensor& t) override;
  void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override;
  void linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override;
  size_t conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const override;
  size_t conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const override;
  std::vector<ScratchChoice> conv2d_scratch_choices(const Conv2dGeometry& g, DType t,
                                                    bool backward) const override;
  void conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, const Tensor& b,
                      Tensor& y, Tensor& scratch) override;
  void conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx,
                            Tensor& scratch) override;
  void conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                              Tensor& dw, Tensor& db, Tensor& scratch) override;
  int maxpool_index_bits(const Pool2dGeometry& g) const override {
    return cpu_.maxpool_index_bits(g);
  }
  void maxpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                         Tensor& index) override;
  void maxpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                          Tensor& dx) override;
  void avgpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) override;
  void avgpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) override;
  void upsample_nearest_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) override;
  void upsample_nearest_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) override;
  void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                         Tensor& y, Tensor& mean, Tensor& inv_std) override;
  void layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                          Tensor& dbeta) override;
  void layernorm_backward_from_output(const Tensor& y, const Tensor& dy, const Tensor& gamma,
                                      const Tensor& beta, const Tensor& inv_std, Tensor& dx,
                                      Tensor& dgamma, Tensor& dbeta) override;
  void groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups,
                         double eps, Tensor& y, Tensor& mean, Tensor& inv_std) override;
  void groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& mean, const Tensor& inv_std, int64_t groups, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta, const Tensor& scratch) override;
  size_t groupnorm_backward_scratch(const TensorMeta& x) const override;
  size_t prelu_backward_scratch(const TensorMeta& x) const override;
  void prelu_forward(const Tensor& x, const Tensor& slope, Tensor& y) override;
  void prelu_backward(const Tensor& x, const Tensor& dy, const Tensor& slope, Tensor& dx,
                      Tensor& dslope, const Tensor& scratch) override;
  void reduce_rows_forward(Reduction r, const Tensor& x, Tensor& y, Tensor& index) override;
  void reduce_rows_backward(Reduction r, const Tensor& x, const Tensor& y, const Tensor& index,
                            const Tensor& dy, Tensor& dx) override;
  void batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               Tensor& running_mean, Tensor& running_var, double momentum,
                               double eps, Tensor& y, Tensor& mean, Tensor& inv_std) override;
  void batchnorm_forward_infer(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                               const Tensor& running_mean, const Tensor& running_var, double eps,
                               Tensor& y) override;
  void batchnorm_normalize(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                           const Tensor& mean, const Tensor& inv_std, Tensor& y) override;
  void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& mean, const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                          Tensor& dbeta) override;
  void batchnorm_backward_from_output(const Tensor& y, const Tensor& dy, const Tensor& gamma,
                                      const Tensor& beta, const Tensor& inv_std, Tensor& dx,
                                      Tensor& dgamma, Tensor& dbeta) override;
  void batchnorm_sums(const Tensor& x, const Tensor& mean, const Tensor& inv_std, const Tensor& dy,
                      Tensor& sums) override;
  void batchnorm_sync_stats(const Tensor& sum, const Tensor& sq, double M, double momentum,
                            double eps, Tensor& running_mean, Tensor& running_var, Tensor& mean,
                            Tensor& inv_std) override;
  void batchnorm_backward_data(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                               const Tensor& mean, const Tensor& inv_std, const Tensor& sums,
                               double M, double scale, Tensor& dx) override;
  int64_t pack_counts(const Tensor& x, std::vector<int64_t>& counts) override;
  bool offers_packing() const override { return optional_kernels_; }
  bool offers_batchnorm_from_output() const override { return optional_kernels_; }
  bool offers_layernorm_from_output() const override { return optional_kernels_; }
  void pack(const Tensor& x, std::span<const int64_t> counts, Tensor& packed) override;
  void unpack(const Tensor& packed, Tensor& x) override;
  void relu_forward(const Tensor& x, Tensor& y, Tensor& mask) override;
  void relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) override;
  void relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) override;
  void threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                         Tensor& mask) override;
  void dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y,
                       Tensor& mask) override;
  void masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
  void subtract(const Tensor& a, const Tensor& b, Tensor& y) override;
  void concat_forward(std::span<const Tensor> xs, Tensor& y) override;
  void concat_backward(const Tensor& dy, std::span<Tensor> dxs) override;
  void strided_copy(const CopyBox& g, const Tensor& x, Tensor& y) override;
  void batched_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b,
                      Tensor& c) override;
  void resize_forward(const ResizeGeometry& g, const Tensor& x, Tensor& y) override;
  void resize_backward(const ResizeGeometry& g, const Tensor& dy, Tensor& dx) override;
  void grid_sample_forward(const GridSampleGeometry& g, const Tensor& x, const Tensor& grid,
                           Tensor& y) override;
  void grid_sample_backward(const GridSampleGeometry& g, const Tensor& x, const Tensor& grid,
                            const Tensor& dy, Tensor& dx, Tensor& dgrid) override;
  void activation_forward(Activation a, const Tensor& x, Tensor& y) override;
  void binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                      Tensor& y) override;
  void binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                       const Tensor& dy, Tensor& da, Tensor& db) override;
  void activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) override;
  void gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                      Tensor& y) override;
  void gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                       Tensor& dx) override;
  void pow_forward(const Tensor& x, double exponent, Tensor& y) override;
  void pow_backward(const Tensor& x, double exponent, const Tensor& dy, Tensor& dx) override;
  void elu_forward(const Tensor& x, const EluCoefficients& c, Tensor& y) override;
  void elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c, const Tensor& dy,
                    Tensor& dx) override;
  void clamp_forward(const Tensor& x, double lo, double hi, Tensor& y) override;
  void clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy, Tensor& dx) override;
  void leaky_relu_forward(const Tensor& x, double slope, Tensor& y, Tensor& mask) override;
  void leaky_relu_backward_mask(const Tensor& dy, const Tensor& mask, double slope,
                                Tensor& dx) override;
  void leaky_relu_backward_output(const Tensor& dy, const Tensor& y, double slope,
                                  Tensor& dx) override;
  void fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                         const std::string& who) override;
  void fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract, Tensor& y,
                       const std::string& who) override;
  void affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                      bool inverse, Tensor& y, const std::string& who) override;
  void affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                       double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                       const std::string& who) override;
  void softmax_forward(const Tensor& x, int axis, Tensor& y) override;
  void softmax_backward(const Tensor& y, const Tensor& dy, int axis, Tensor& dx) override;
  void log_softmax_forward(const Tensor& x, Tensor& y) override;
  void log_softmax_backward(const Tensor& dy, const Tensor& y, Tensor& dx) override;
  void nll_forward(const Tensor& logp, const Tensor& labels, Tensor& loss) override;
  void nll_backward(const Tensor& dloss, const Tensor& labels, Tensor& dlogp) override;
  void softmax_cross_entropy_forward(const Tensor& x, const Tensor& labels, Tensor& loss) override;
  void softmax_cross_entropy_backward(const Tensor& x, const Tensor& labels, const Tensor& dloss,
                                      Tensor& dx) override;
  void sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) override;
  void adamw_step(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v,
                  const OptimizerConfig& c) override;

 private:
  Backend& cpu_;
  SimAllocator& alloc_;
  bool optional_kernels_;
};

}  // namespace frugal
