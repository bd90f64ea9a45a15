// Pooling output sizes (floor and ceil mode, as PyTorch and Torch7) and option checks.
#include "layers/pool_geometry.h"

#include <algorithm>
#include <string>

namespace frugal {

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil,
                         int64_t pad_end, int64_t dilation) {
  if (pad_end < 0) pad_end = pad;
  const int64_t span = in + pad + pad_end - dilation * (kernel - 1) - 1;  // >= 0, checked
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
  const int64_t pad_end = o.pad_end < 0 ? o.pad : o.pad_end;
  const int64_t pad_w_end = o.pad_w_end < 0 ? pad_w : o.pad_w_end;
  const int64_t dil = o.dilation, dil_w = o.dilation_w == 0 ? o.dilation : o.dilation_w;
  const auto pair = [](int64_t h, int64_t w) {
    return h == w ? detail::concat(h) : detail::concat(h, "x", w);
  };
  const auto pads = [&] {
    return pad_end == o.pad && pad_w_end == pad_w
               ? pair(o.pad, pad_w)
               : detail::concat(o.pad, ",", pad_w, ",", pad_end, ",", pad_w_end,
                                " (top, left, bottom, right)");
  };
  FRUGAL_CHECK(o.kernel >= 1 && kw >= 1 && stride >= 1 && stride_w >= 1 && o.pad >= 0 && dil >= 1 &&
                   dil_w >= 1,
               op, ": kernel ", pair(o.kernel, kw), ", stride ", pair(stride, stride_w),
               ", dilation ", pair(dil, dil_w), ", pad ", pads(),
               ": expected kernel, stride and dilation >= 1, pad >= 0 (x ", x.shape, ")");
  FRUGAL_CHECK(2 * std::max(o.pad, pad_end) <= o.kernel && 2 * std::max(pad_w, pad_w_end) <= kw, op,
               ": pad ", pads(), " must be at most half of kernel ", pair(o.kernel, kw), " (x ",
               x.shape, ")");
  Pool2dGeometry g;
  g.N = x.shape[0], g.C = x.shape[1], g.H = x.shape[2], g.W = x.shape[3];
  FRUGAL_CHECK(
      g.H + o.pad + pad_end >= dil * (o.kernel - 1) + 1 &&
          g.W + pad_w + pad_w_end >= dil_w * (kw - 1) + 1,
      op, ": kernel ", pair(o.kernel, kw),
      dil == 1 && dil_w == 1 ? std::string() : detail::concat(" dilated ", pair(dil, dil_w)),
      " is larger than the padded input (x ", x.shape, ", pad ", pads(), ")");
  g.kernel_h = o.kernel;
  g.kernel_w = kw;
  g.stride_h = stride;
  g.stride_w = stride_w;
  g.pad_h = o.pad;
  g.pad_w = pad_w;
  g.pad_h_end = pad_end;
  g.pad_w_end = pad_w_end;
  g.dilation_h = dil;
  g.dilation_w = dil_w;
  g.count_include_pad = o.count_include_pad;
  g.P = pool_output_size(g.H, o.kernel, stride, o.pad, o.ceil, pad_end, dil);
  g.Q = pool_output_size(g.W, kw, stride_w, pad_w, o.ceil, pad_w_end, dil_w);
  FRUGAL_CHECK(pool_windows_hold_input(g), op, ": a window of the ", g.P, "x", g.Q,
               " outputs lies in the padding only (x ", x.shape, ", kernel ", pair(o.kernel, kw),
               ", dilation ", pair(dil, dil_w), ", pad ", pads(), ")");
  return g;
}

}  // namespace frugal
