// Depthwise convolution on the CPU: one group per input channel (K = m*C filters, m per
// channel), as MobileNet and EfficientNet use. An im2col per group would copy every input
// pixel R*S times to multiply it by a 1-row matrix; these loops instead add each filter tap's
// weight times a shifted input plane into the output. At stride 1 the planes are padded and the
// outputs taken over rows as wide as the padded input (the extra columns dropped): forward in
// blocks of two vectors whose sums stay in registers over every tap, the filter gradient (on
// AVX-512) a group of taps at a time with their sums in registers, each term added as the
// tap-by-tap loops add it, so the bits are theirs; the data gradient tap by tap. At other
// strides tap by tap, row by row. Any stride, dilation and padding; f32 and f64.
// Forward and the data gradient are split over output (resp. input) planes, the filter gradient
// over filters, each summed by one thread in a fixed order: the bits do not depend on the
// thread count. Private to the CPU backend (core/cpu/conv2d.cpp picks it).
#pragma once

#include "core/backend.h"

namespace frugal::depthwise_conv {

// True for a convolution with one group per input channel and more than one channel.
bool applies(const Conv2dGeometry& g);

// Scratch of each pass with `threads` threads: at stride 1, a padded input plane and a wide
// output plane per thread; none at other strides.
size_t scratch_bytes(const Conv2dGeometry& g, DType t, int threads);

// x (N,C,H,W)  w (K,1,R,S)  b (K) or undefined  y (N,K,P,Q).
void forward(const Conv2dGeometry& g, int threads, const Tensor& x, const Tensor& w,
             const Tensor& b, Tensor& y, Tensor& scratch);
// dx (N,C,H,W) from dy (N,K,P,Q) and w, overwritten.
void backward_data(const Conv2dGeometry& g, int threads, const Tensor& dy, const Tensor& w,
                   Tensor& dx, Tensor& scratch);
// dw (K,1,R,S) from x and dy, overwritten. (The bias gradient is the plain convolution's.)
void backward_filter(const Conv2dGeometry& g, int threads, const Tensor& x, const Tensor& dy,
                     Tensor& dw, Tensor& scratch);

}  // namespace frugal::depthwise_conv
