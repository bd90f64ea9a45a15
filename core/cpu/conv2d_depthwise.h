// Depthwise convolution on the CPU: one group per input channel (K = m*C filters, m per
// channel), as MobileNet and EfficientNet use. An im2col per group would copy every input
// pixel R*S times to multiply it by a 1-row matrix; these loops instead add each filter tap's
// weight times a shifted input plane into the output. The padded input plane is split into a
// phase plane per position in the stride (one at stride 1), where every tap is a shift of one
// phase plane, and the outputs are taken over rows as wide as a phase plane (the extra columns
// dropped): forward in blocks of two vectors whose sums stay in registers over every tap (at
// stride 1, 5x5 and, on AVX-512, 3x3 filters two rows at once, each input vector loaded once for
// both); the data gradient the same way over each phase of dx with the taps that reach it (a
// gather: each element's terms in the order a tap-by-tap scatter adds them); the filter gradient
// a group of taps at a time with their sums in registers (on AVX-512 a 5x5 filter's row of taps
// from one load, shifted across lanes; where padded rows are whole vectors, columns of taps that
// share each load of x). Every pass gives its tap-by-tap loop's bits. Any stride, dilation and
// padding; f32 and f64. Forward and the data gradient are split over output (resp. input)
// planes, the filter gradient over filters, each summed by one thread in a fixed order: the
// bits do not depend on the thread count. Private to the CPU backend (core/cpu/conv2d.cpp
// picks it).
#pragma once

#include "core/backend.h"

namespace frugal::depthwise_conv {

// True for a convolution with one group per input channel and more than one channel.
bool applies(const Conv2dGeometry& g);

// Scratch of the forward pass with `threads` threads: the phase planes of a padded input plane
// and a wide output plane per thread.
size_t scratch_bytes(const Conv2dGeometry& g, DType t, int threads);
// The backward passes': the filter gradient's as the forward's, or the data gradient's widened
// dy plane between zeros, dx's phase planes and one phase's weights, whichever is more.
size_t backward_scratch_bytes(const Conv2dGeometry& g, DType t, int threads);

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
