// Direct f32 convolution for stride-1 layers on CPUs with AVX and FMA: no im2col columns. The
// input is copied into a zero-padded tile of output rows, and a register block of 8 output
// channels (4 without AVX-512) by 3 vectors of 8 output pixels sums every (c, r, s) tap
// straight from that tile.
// The data gradient is the same kernel run over dy with the filters flipped and transposed;
// the filter gradient sums dy times shifted inputs in 8 lanes per (filter, tap) over a batch
// of samples, then adds the lanes into dw.
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

// Where applies(), whether the filter gradient is better taken by the direct kernel too: rows
// of whole vectors (Q a multiple of 8; the masked loads of short ones cost more than im2col's
// copies) and the dy of one sample within 1 MiB (it is read again for every input channel).
// Measured with bench_conv: 87-110% of the SGEMM rate on the ResNet and 56x56 layers, against
// 54-62% on AlexNet's 27x27 and 13x13 and VGG's 28x28 layers, where im2col + GEMM gives 88-91%.
bool filter_applies(const Conv2dGeometry& g);

// Scratch bytes of each pass with `threads` threads (only where applies(), filter_applies()).
size_t forward_scratch(const Conv2dGeometry& g, int threads);
size_t data_scratch(const Conv2dGeometry& g, int threads);
size_t filter_scratch_bytes(const Conv2dGeometry& g, int threads);

// x (N,C,H,W)  w (K,C,R,S)  b (K) or null  ->  y (N,K,P,Q)
void forward(const Conv2dGeometry& g, int threads, const float* x, const float* w, const float* b,
             float* y, float* scratch);
// dy (N,K,P,Q)  w (K,C,R,S)  ->  dx (N,C,H,W), overwritten
void backward_data(const Conv2dGeometry& g, int threads, const float* dy, const float* w, float* dx,
                   float* scratch);
// x (N,C,H,W)  dy (N,K,P,Q)  ->  dw (K,C,R,S), overwritten; only where filter_applies()
void backward_filter(const Conv2dGeometry& g, int threads, const float* x, const float* dy,
                     float* dw, float* scratch);

}  // namespace frugal::direct_conv
