// The cuDNN descriptor factories of cuda/cudnn_handles.h.
#include "cuda/cudnn_handles.h"

#include <limits>

#include "core/error.h"

namespace frugal {

namespace {
// cuDNN's legacy API takes int extents.
int to_int(int64_t v) {
  FRUGAL_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), "cudnn: extent ", v,
               " does not fit an int");
  return static_cast<int>(v);
}
}  // namespace

cudnnDataType_t cudnn_dtype(const char* op, DType t) {
  FRUGAL_CHECK(t == DType::f32 || t == DType::f64, op, ": cuDNN needs f32 or f64, got ",
               dtype_name(t));
  return t == DType::f32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

TensorDescriptor tensor_nchw(DType t, int64_t N, int64_t C, int64_t H, int64_t W) {
  TensorDescriptor d;
  FRUGAL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW,
                                                cudnn_dtype("cudnn tensor", t), to_int(N),
                                                to_int(C), to_int(H), to_int(W)));
  return d;
}

FilterDescriptor filter_kcrs(DType t, int64_t K, int64_t C, int64_t R, int64_t S) {
  FilterDescriptor d;
  FRUGAL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d.get(), cudnn_dtype("cudnn filter", t),
                                                CUDNN_TENSOR_NCHW, to_int(K), to_int(C), to_int(R),
                                                to_int(S)));
  return d;
}

ConvolutionDescriptor convolution(DType t, const Conv2dGeometry& g) {
  ConvolutionDescriptor d;
  FRUGAL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      d.get(), to_int(g.pad_h), to_int(g.pad_w), to_int(g.stride_h), to_int(g.stride_w),
      to_int(g.dilation_h), to_int(g.dilation_w), CUDNN_CROSS_CORRELATION,
      cudnn_dtype("cudnn convolution", t)));
  FRUGAL_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d.get(), to_int(g.groups)));
  // f64 has no reduced-precision math to exclude; FP64 tensor cores are exact IEEE FMA.
  FRUGAL_CUDNN_CHECK(
      cudnnSetConvolutionMathType(d.get(), t == DType::f32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH));
  return d;
}

}  // namespace frugal
