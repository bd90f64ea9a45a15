// Pooling output sizes (floor and ceil mode, as PyTorch and Torch7) and option checks.
#include "layers/pool_geometry.h"

#include <algorithm>

namespace frugal {

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil) {
  const int64_t span = in + 2 * pad - kernel;  // >= 0, checked by the caller
  int64_t out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

Pool2dGeometry pool2d_geometry(const char* op, std::span<const TensorMeta> in,
                               const Pool2dOptions& o) {
  FRUGAL_CHECK(in.size() == 1, op, ": expects 1 input, got ", in.size());
  const TensorMeta& x = in[0];
  FRUGAL_CHECK(x.shape.rank() == 4, op, ": input must be (N,C,H,W), got ", x.shape);
  FRUGAL_CHECK(x.dtype == DType::f32 || x.dtype == DType::f64, op,
               ": input must be f32 or f64, got ", dtype_name(x.dtype), " (x ", x.shape, ")");
  const int64_t kw = o.kernel_w == 0 ? o.kernel : o.kernel_w;
  const int64_t stride = o.stride == 0 ? o.kernel : o.stride;
  const int64_t stride_w = o.stride_w != 0 ? o.stride_w : o.stride == 0 ? kw : o.stride;
  const int64_t pad_w = o.pad_w < 0 ? o.pad : o.pad_w;
  const auto pair = [](int64_t h, int64_t w) {
    return h == w ? detail::concat(h) : detail::concat(h, "x", w);
  };
  FRUGAL_CHECK(o.kernel >= 1 && kw >= 1 && stride >= 1 && stride_w >= 1 && o.pad >= 0, op,
               ": kernel ", pair(o.kernel, kw), ", stride ", pair(stride, stride_w), ", pad ",
               pair(o.pad, pad_w), ": expected kernel >= 1, stride >= 1, pad >= 0 (x ", x.shape,
               ")");
  FRUGAL_CHECK(2 * o.pad <= o.kernel && 2 * pad_w <= kw, op, ": pad ", pair(o.pad, pad_w),
               " must be at most half of kernel ", pair(o.kernel, kw), " (x ", x.shape, ")");
  Pool2dGeometry g;
  g.N = x.shape[0], g.C = x.shape[1], g.H = x.shape[2], g.W = x.shape[3];
  FRUGAL_CHECK(g.H + 2 * o.pad >= o.kernel && g.W + 2 * pad_w >= kw, op, ": kernel ",
               pair(o.kernel, kw), " is larger than the padded input (x ", x.shape, ", pad ",
               pair(o.pad, pad_w), ")");
  g.kernel_h = o.kernel;
  g.kernel_w = kw;
  g.stride_h = stride;
  g.stride_w = stride_w;
  g.pad_h = o.pad;
  g.pad_w = pad_w;
  g.count_include_pad = o.count_include_pad;
  g.P = pool_output_size(g.H, o.kernel, stride, o.pad, o.ceil);
  g.Q = pool_output_size(g.W, kw, stride_w, pad_w, o.ceil);
  return g;
}

}  // namespace frugal
