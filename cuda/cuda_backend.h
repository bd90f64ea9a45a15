// The CUDA backend: Backend over cuBLAS, cuDNN and a few custom kernels, on one device and its
// default stream. Each kernel family lives in the file named as its CPU twin in core/cpu/
// (conv2d.cu, linear.cu, pool.cu, batchnorm.cu, relu.cu, leaky_relu.cu, fixed_point.cu,
// affine.cu, pointwise.cu, loss.cu, memory.cu, resize.cu, grid_sample.cu, ...).
// Deterministic: no atomics in sums, fixed reduction trees, deterministic cuDNN algorithms only.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "cuda/check.h"

namespace frugal {

// The cuDNN algorithms, workspace sizes and descriptors of one convolution (cuda/conv2d.cu).
struct ConvPlan;
// A gather's index on the device, with the inverse lists its backward reads (cuda/gather.cu).
struct GatherIndex;

class CudaBackend final : public Backend {
 public:
  // Creates the cuBLAS and cuDNN handles on the current device; throws if there is none.
  CudaBackend();
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  Device device() const override { return {DeviceKind::cuda, device_}; }
  int threads() const override { return 1; }  // one stream; results do not depend on it

  // Memory of the current device (cuda_allocator()).
  Allocator& allocator() const override;
  // cudaMemcpy: they return when the host may read or reuse its side.
  void copy_to_device(const Tensor& host, Tensor& dev) override;
  void copy_to_host(const Tensor& dev, Tensor& host) override;
  void fill(Tensor& t, double value) override;
  // Copies across host and device too (cudaMemcpyDefault).
  void copy(const Tensor& x, Tensor& y) override;
  void accumulate(const Tensor& x, Tensor& y) override;
  int64_t first_non_finite(const Tensor& t) override;  // one host synchronization
  void synchronize() override;
  void subtract(const Tensor& a, const Tensor& b, Tensor& y) override;

  void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) override;
  void linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) override;
  void linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db) override;

  // The least cuDNN workspace among the geometry's usable algorithms.
  size_t conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const override;
  size_t conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const override;
  // Every deterministic algorithm, timed once per geometry (cudnnFind*): see cuda/conv2d.cu.
  std::vector<ScratchChoice> conv2d_scratch_choices(const Conv2dGeometry& g, DType t,
                                                    bool backward) const override;
  void conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, const Tensor& b,
                      Tensor& y, Tensor& scratch) override;
  void conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w, Tensor& dx,
                            Tensor& scratch) override;
  void conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                              Tensor& dw, Tensor& db, Tensor& scratch) override;

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
  void groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, int64_t groups,
                         double eps, Tensor& y, Tensor& mean, Tensor& inv_std) override;
  void groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& mean, const Tensor& inv_std, int64_t groups, Tensor& dx,
                          Tensor& dgamma, Tensor& dbeta, const Tensor& scratch) override;
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

  void relu_forward(const Tensor& x, Tensor& y, Tensor& mask) override;
  void relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) override;
  void relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) override;
  void threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                         Tensor& mask) override;
  void dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y,
                       Tensor& mask) override;
  void masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) override;
  void add(const Tensor& a, const Tensor& b, Tensor& y) override;
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
  // The index is copied to the device on first use and kept (gather_index).
  void gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                      Tensor& y) override;
  void gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                       Tensor& dx) override;
  // The rows uploaded on each call into device memory kept for the next (grown where too small),
  // nothing kept per set of rows.
  void embedding_forward(const Tensor& table, std::span<const int64_t> rows, Tensor& y) override;
  void embedding_backward(const Tensor& dy, std::span<const int64_t> rows, Tensor& dtable) override;

  void binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                      Tensor& y) override;
  void binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                       const Tensor& dy, Tensor& da, Tensor& db) override;
  void activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) override;
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

  // A failed check copies what the message needs to the host (one synchronization per call).
  void fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                         const std::string& who) override;
  void fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract, Tensor& y,
                       const std::string& who) override;
  void affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                      bool inverse, Tensor& y, const std::string& who) override;
  void affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                       double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                       const std::string& who) override;

  // Labels are validated on the device first; a bad one throws (one host synchronization).
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
  // The plan for (g, t), made on first use and kept: planning and running agree on the bytes.
  const ConvPlan& conv_plan(const Conv2dGeometry& g, DType t) const;
  // The device copy of (index into an axis of D), made on first use and kept.
  const GatherIndex& gather_index(std::span<const int64_t> index, int64_t D);
  // (rows into an axis of D) uploaded into embedding_rows_ (cudaMemcpy on the default stream,
  // after the kernels that read the last rows).
  const GatherIndex& embedding_index(std::span<const int64_t> rows, int64_t D);
  // Throws (op, sample, label, x's shape) if a label lies outside [0, C) (cuda/loss.cu).
  void check_label_values(const char* op, const Tensor& labels, const Tensor& x);
  void release() noexcept;

  int device_ = 0;
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  // 8 device bytes for kernels that report to the host (the first bad label, the first
  // non-finite element); made once here, so no kernel allocates.
  unsigned long long* status_ = nullptr;
  // Device memory for per-channel sums (launch.cuh's channel_sums: BatchNorm, bias gradients):
  // kPartialDoubles partials then kSumDoubles sums, made once here (4.1 MiB).
  double* reduce_ = nullptr;
  double* partials() const { return reduce_; }
  double* sums() const;

  mutable std::mutex plans_mutex_;
  mutable std::map<std::array<int64_t, 19>, std::shared_ptr<const ConvPlan>> plans_;

  // The device copies by (axis extent, index), found from the op's span with no copy of the
  // index per call (a transparent order: the lookup runs in every step's forward and backward).
  using GatherKey = std::pair<int64_t, std::vector<int64_t>>;
  using GatherView = std::pair<int64_t, std::span<const int64_t>>;
  struct GatherKeyLess {
    using is_transparent = void;
    static GatherView view(const GatherView& v) { return v; }
    static GatherView view(const GatherKey& k) { return {k.first, k.second}; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      const GatherView x = view(a), y = view(b);
      if (x.first != y.first) return x.first < y.first;
      return std::lexicographical_compare(x.second.begin(), x.second.end(), y.second.begin(),
                                          y.second.end());
    }
  };
  std::mutex gather_mutex_;
  std::map<GatherKey, std::shared_ptr<const GatherIndex>, GatherKeyLess> gather_indexes_;
  std::shared_ptr<GatherIndex> embedding_rows_;  // with room for embedding_room_ (K, D)
  std::pair<int64_t, int64_t> embedding_room_{0, 0};
};

}  // namespace frugal
