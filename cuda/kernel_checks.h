// Argument checks of the CUDA backend (host code, no CUDA headers): shapes, dtypes and device
// placement, with messages that read as the CPU backend's (op, shapes, what was expected).
// Every check also requires its defined tensors to live in CUDA memory.
#pragma once

#include <initializer_list>
#include <span>

#include "core/backend.h"

namespace frugal {

// Every defined tensor in ts is in CUDA memory.
void check_on_device(const char* op, std::initializer_list<const Tensor*> ts);
// x and y: the same shape and dtype, f32 or f64.
void check_same(const char* op, const Tensor& x, const Tensor& y);
// mask, if defined, is u8 of ceil(n/8) bytes.
void check_mask(const char* op, const Tensor& mask, int64_t n);

// x (N,I)  w (O,I) or undefined  b (O) or undefined  y (N,O)
struct LinearDims {
  int64_t N, I, O;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& y);

// x (N,C,H,W)  w (K,C,R,S) or undefined  y (N,K,P,Q), one float dtype, P,Q from the geometry.
void check_conv(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y);
// x (N,C,H,W) and y (N,C,P,Q) (or their gradients), one float dtype.
void check_pool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y);

// x (N,C,H,W) or (N,C) viewed as (N,C,S); y like x; per-channel tensors (C) in x's dtype.
struct ChannelDims {
  int64_t N, C, S;
};
ChannelDims check_batchnorm(const char* op, const Tensor& x, const Tensor& y,
                            std::initializer_list<const Tensor*> per_channel);
void check_channel(const char* op, const Tensor& t, const Tensor& x, int64_t C);

// x (N,C) f32/f64 with N, C >= 1; y, if defined, the same.
void check_rows(const char* op, const Tensor& x, const Tensor& y);
// x (N,C)  labels (N) i32  loss (1) of x's dtype (the label values are checked on the device).
void check_labels(const char* op, const Tensor& x, const Tensor& labels, const Tensor& loss);
// xs[i] (N,Ci,H,W) or (N,Ci)  y (N,sum Ci,H,W) or (N,sum Ci)
void check_concat(const char* op, std::span<const Tensor> xs, const Tensor& y);

}  // namespace frugal
