// The convolution tests' shared pieces: a geometry from sizes and Conv2dParams, and the three
// CPU passes run on NaN-filled outputs and scratch (so an element left unwritten shows).
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>

#include "check/gradcheck.h"
#include "core/backend.h"
#include "layers/conv2d.h"

namespace frugal::testing {

struct Geo {
  int64_t N, C, H, W, K, R, S;
  Conv2dParams p;
};

inline Conv2dGeometry geometry(const Geo& c) {
  Conv2dGeometry g{.N = c.N, .C = c.C, .H = c.H, .W = c.W, .K = c.K, .R = c.R, .S = c.S};
  g.stride_h = c.p.stride_h, g.stride_w = c.p.stride_w, g.pad_h = c.p.pad_top;
  g.pad_w = c.p.pad_left, g.pad_h_end = c.p.pad_bottom, g.pad_w_end = c.p.pad_right;
  g.dilation_h = c.p.dilation_h, g.dilation_w = c.p.dilation_w, g.groups = c.p.groups;
  g.P = conv_output_size(c.H, c.R, g.stride_h, g.pad_h, g.pad_h_end, g.dilation_h);
  g.Q = conv_output_size(c.W, c.S, g.stride_w, g.pad_w, g.pad_w_end, g.dilation_w);
  return g;
}

inline Tensor nan_tensor(Shape s, DType t) {
  Tensor x = Tensor::empty(std::move(s), t);
  cpu_backend().fill(x, std::numeric_limits<double>::quiet_NaN());
  return x;
}

struct ConvRun {
  Tensor y, dx, dw, db;
};
// Forward, backward data and backward filter on NaN-filled outputs and scratch.
inline ConvRun run(const Conv2dGeometry& g, const Tensor& x, const Tensor& w, const Tensor& b,
                   const Tensor& dy) {
  Backend& be = cpu_backend();
  const DType t = x.dtype();
  ConvRun r{nan_tensor({g.N, g.K, g.P, g.Q}, t), nan_tensor(x.shape(), t), nan_tensor(w.shape(), t),
            b.defined() ? nan_tensor({g.K}, t) : Tensor()};
  const size_t bytes =
      std::max<size_t>({be.conv2d_forward_scratch(g, t), be.conv2d_backward_scratch(g, t), 1});
  Tensor scratch = nan_tensor({static_cast<int64_t>(bytes)}, DType::u8);
  be.conv2d_forward(g, x, w, b, r.y, scratch);
  be.conv2d_backward_data(g, dy, w, r.dx, scratch);
  be.conv2d_backward_filter(g, x, dy, r.dw, r.db, scratch);
  return r;
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

inline Conv2dParams params(int64_t stride, int64_t pad, int64_t dilation, int64_t groups) {
  return Conv2dParams::uniform(stride, pad, dilation, groups);
}

}  // namespace frugal::testing
