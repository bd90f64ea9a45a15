// Direct f32 convolution for stride-1 layers on CPUs with AVX and FMA: no im2col columns. The
// input is copied into a zero-padded tile of output rows, and a register block of 4 output
// channels by 3 vectors of 8 output pixels sums every (c, r, s) tap straight from that tile.
// The data gradient is the same kernel run over dy with the filters flipped and transposed;
// the filter gradient keeps 8 partial sums per tap in lanes and adds them up once, at the end.
// Every output is summed by one thread in one fixed order, so the bits do not depend on the
// thread count. Private to the CPU backend (core/cpu/conv2d.cpp picks it).
#pragma once

#include <cstddef>

#include "core/backend.h"

namespace frugal::direct_conv {

// True where the direct kernels take this convolution: f32, stride 1, a filter larger than
// 1x1 (a 1x1 conv is a plain GEMM), padding smaller than the filter, and a build for a CPU
// with AVX and FMA. False otherwise, and always in a build for the baseline x86-64.
bool applies(const Conv2dGeometry& g, DType t);

// Scratch bytes of each pass with `threads` threads (only where applies()).
size_t forward_scratch(const Conv2dGeometry& g, int threads);
size_t backward_scratch(const Conv2dGeometry& g, int threads);  // data and filter alike

// x (N,C,H,W)  w (K,C,R,S)  b (K) or null  ->  y (N,K,P,Q)
void forward(const Conv2dGeometry& g, int threads, const float* x, const float* w, const float* b,
             float* y, float* scratch);
// dy (N,K,P,Q)  w (K,C,R,S)  ->  dx (N,C,H,W), overwritten
void backward_data(const Conv2dGeometry& g, int threads, const float* dy, const float* w,
                   float* dx, float* scratch);
// x (N,C,H,W)  dy (N,K,P,Q)  ->  dw (K,C,R,S), overwritten
void backward_filter(const Conv2dGeometry& g, int threads, const float* x, const float* dy,
                     float* dw, float* scratch);

}  // namespace frugal::direct_conv
