// RAII cuDNN descriptors (private to cuda/): each owns one descriptor, created on construction
// and destroyed with it; movable, never copied. The factories set them up for frugal's dense
// row-major NCHW tensors.
#pragma once

#include <cstdint>
#include <utility>

#include "core/backend.h"
#include "core/dtype.h"
#include "cuda/check.h"

namespace frugal {

template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() { FRUGAL_CUDNN_CHECK(Create(&d_)); }
  ~CudnnDescriptor() {
    if (d_) Destroy(d_);  // no throw from a destructor; destroy cannot fail on a valid handle
  }
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept {
    std::swap(d_, o.d_);
    return *this;
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  D get() const { return d_; }

 private:
  D d_ = nullptr;
};

using TensorDescriptor = CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                         cudnnDestroyTensorDescriptor>;
using FilterDescriptor = CudnnDescriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
                                         cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    CudnnDescriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                    cudnnDestroyConvolutionDescriptor>;

// CUDNN_DATA_FLOAT or CUDNN_DATA_DOUBLE; throws for other dtypes, naming `op`.
cudnnDataType_t cudnn_dtype(const char* op, DType t);
// A dense NCHW tensor (N,C,H,W).
TensorDescriptor tensor_nchw(DType t, int64_t N, int64_t C, int64_t H, int64_t W);
// Dense filters (K,C,R,S).
FilterDescriptor filter_kcrs(DType t, int64_t K, int64_t C, int64_t R, int64_t S);
// Cross-correlation (as the CPU backend), no dilation, computing in t; f32 runs with
// CUDNN_FMA_MATH so that no TF32 tensor-core math can change its results.
// cuDNN pads both sides alike: g's pad_h_end and pad_w_end must equal pad_h and pad_w.
ConvolutionDescriptor convolution(DType t, const Conv2dGeometry& g);

}  // namespace frugal
