// The host side of the kernel contracts that every backend shares, worded once: argument checks
// (shapes, dtypes, placement on the backend's device) with messages that name the op, the shapes
// and what was expected; and the fixed-point grid's arithmetic and the errors of the fixed-point
// and affine kernels, found again over host copies so a device reports exactly what the CPU does.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "core/backend.h"

namespace frugal {

// Every check below also requires its defined tensors to live on `device`, the backend's.

// Every defined tensor in ts lives on `device`.
void check_device(const char* op, std::initializer_list<const Tensor*> ts, const Device& device);
// x and y: the same shape and dtype, f32 or f64.
void check_same(const char* op, const Tensor& x, const Tensor& y, const Device& device);
// mask, if defined, is u8 of ceil(n/8) bytes.
void check_mask(const char* op, const Tensor& mask, int64_t n, const Device& device);
// mask is defined ("<op>: no mask") and as check_mask says.
void check_required_mask(const char* op, const Tensor& mask, int64_t n, const Device& device);
// t is defined ("<op>: missing <what>").
void check_defined(const char* op, const char* what, const Tensor& t);
// Packing (Backend::pack): x f32 or f64 on the device.
void check_packable(const char* op, const Tensor& x, const Device& device);
// pack: x packable, one count per block of x, each at most packed_block_max_words of its
// block, and packed u8 of packed_bytes(x's elements, the counts' sum); returns that sum.
int64_t check_pack(const Tensor& x, std::span<const int64_t> counts, const Tensor& packed,
                   const Device& device);
// unpack: x packable, and packed u8 of the size a packed form of x's elements and dtype has;
// returns the words that size says.
int64_t check_unpack(const Tensor& packed, const Tensor& x, const Device& device);
// Dropout's probability p lies in [0, 1).
void check_dropout_p(double p);
// The ELU family's backward: v, dy and dx one shape and float dtype; reading the output
// (from_output) only where elu_backward_reads_output(c).
void check_elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                        const Tensor& dy, const Tensor& dx, const Device& device);

// Batched matrix products: a, b, c defined, one float dtype, each holding batch x its matrix.
void check_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, const Tensor& c,
                  const Device& device);
// Bilinear resizing: x (N,C,H,W) and y (N,C,P,Q) of g, one float dtype, sizes >= 1.
// x (N,C,H,W), grid (N,P,Q,2), y (N,C,P,Q) (or their gradients; an undefined dx or dgrid is
// not checked), one float dtype, the geometry's sizes >= 1 (N and C >= 0).
void check_grid_sample(const char* op, const GridSampleGeometry& g, const Tensor& x,
                       const Tensor& grid, const Tensor& y, const Device& device);
void check_resize(const char* op, const ResizeGeometry& g, const Tensor& x, const Tensor& y,
                  const Device& device);
// Gather along an axis: x (O, D, I) and y (O, K, I), one float dtype, K = index.size() with O
// and I whole, every index in [0, D); returns {D, I}.
std::pair<int64_t, int64_t> check_gather(const char* op, const Tensor& x,
                                         std::span<const int64_t> index, int64_t outer,
                                         const Tensor& y, const Device& device);
// x and y: defined, one dtype, the box inside both (every index it reaches), y not x's memory.
void check_strided_copy(const CopyBox& g, const Tensor& x, const Tensor& y, const Device& device);
// Softmax: x and y (and dy) one shape and float dtype, axis inside the rank; returns the sizes
// before, along and after the axis.
struct AxisDims {
  int64_t outer, C, inner;
};
AxisDims check_softmax(const char* op, const Tensor& x, const Tensor& y, const Tensor& dy, int axis,
                       const Device& device);
// a, b, y: one shape and float dtype (y may be a or b).
void check_add(const Tensor& a, const Tensor& b, const Tensor& y, const Device& device);
void check_subtract(const Tensor& a, const Tensor& b, const Tensor& y, const Device& device);
// w, dw, v (the momentum): one shape and float dtype.
void check_sgd(const Tensor& w, const Tensor& dw, const Tensor& v, const Device& device);
void check_adamw(const Tensor& w, const Tensor& dw, const Tensor& m, const Tensor& v,
                 const OptimizerConfig& c, const Device& device);
// x and y hold the same number of bytes (either may be on the host: no placement check).
void check_copy(const Tensor& x, const Tensor& y);
// Broadcast arithmetic: y (or dy) holds g.numel() elements, each defined operand (or its
// gradient) as many as g gives it; all one float dtype, on the device.
void check_binary(const char* op, const Broadcast& g, const Tensor& a, const Tensor& b,
                  const Tensor& y, const Device& device);
// Backend::binary_forward's and binary_backward's arguments (the operands defined where read).
void check_binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                          const Tensor& y, const Device& device);
void check_binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                           const Tensor& dy, const Tensor& da, const Tensor& db,
                           const Device& device);

// x (N,I)  w (O,I) or undefined  b (O) or undefined  y (N,O)
struct LinearDims {
  int64_t N, I, O;
};
LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& y, const Device& device);

// x (N,C,H,W)  w (K,C,R,S) or undefined  y (N,K,P,Q), one float dtype, P,Q from the geometry.
void check_conv(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y, const Device& device);
// b, if defined: K elements of x's dtype (`name`: "bias" or "bias gradient").
void check_conv_bias(const char* op, const char* name, const Conv2dGeometry& g, const Tensor& b,
                     const Tensor& x, const Device& device);
// x (N,C,H,W) and y (N,C,P,Q) (or their gradients), one float dtype.
void check_pool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                const Device& device);
// Nearest upsampling: as check_pool, with P = H kernel_h and Q = W kernel_w, both factors >= 1.
void check_upsample(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                    const Device& device);
// Average pooling, forward (x, y) or backward (dx, dy): as check_pool; pads at most half the
// kernel, no dilation, and every window holds an input element.
void check_avgpool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                   const Device& device);
// Max pooling forward: as check_pool; pads at most half the kernel, dilations >= 1, every
// window holds an input element; index, if defined,
// maxpool_index_meta(g, bits), and the window fits `bits`.
void check_maxpool_forward(const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                           const Tensor& index, const Device& device, int bits = 8);
// Max pooling backward: as check_pool over dx and dy; index maxpool_index_meta(g, bits).
void check_maxpool_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                            const Tensor& dx, const Device& device, int bits = 8);

// x (N,C), (N,C,L), (N,C,H,W) or (N,C,D,H,W) viewed as (N,C,S); y like x; per-channel tensors
// (C) in x's dtype.
struct ChannelDims {
  int64_t N, C, S;
};
ChannelDims check_batchnorm(const char* op, const Tensor& x, const Tensor& y,
                            std::initializer_list<const Tensor*> per_channel, const Device& device);
// Training: as check_batchnorm, and more than one value per channel.
ChannelDims check_batchnorm_train(const Tensor& x, const Tensor& y,
                                  std::initializer_list<const Tensor*> per_channel,
                                  const Device& device);
// Backward: x, dy, gamma, mean, inv_std, and dx (like x), dgamma, dbeta (C) where defined.
ChannelDims check_batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta,
                                     const Device& device);
// A norm from its output (x^ = (y - beta) / gamma): every weight of `gamma` (host memory)
// finite and nonzero; the error names `who` (the norm), the first `unit` (channel, element of
// a layer norm's weight) that is not, and the command-line `flag` that asked for it.
void check_invertible_weights(const std::string& who, const Tensor& gamma,
                              const char* unit = "channel", const char* flag = "--bn-from-output");

// Layer norm: x f32/f64 viewed as (R, C) rows, C = gamma's numel (x's trailing axes); y and,
// where defined, dy and dx like x; gamma, beta, dgamma, dbeta (C) and mean, inv_std (R) where
// defined, all of x's dtype on the device. Returns {R, C}.
struct RowDims {
  int64_t R, C;
};
RowDims check_layernorm(const char* op, const Tensor& x, const Tensor& y,
                        std::initializer_list<const Tensor*> per_column,
                        std::initializer_list<const Tensor*> per_row, const Device& device);
// Backend::layernorm_forward's arguments (y and beta defined).
RowDims check_layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                const Tensor& y, const Tensor& mean, const Tensor& inv_std,
                                const Device& device);
// Backend::layernorm_backward's (dy, mean and inv_std defined; dx like x where defined).
RowDims check_layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                 const Tensor& mean, const Tensor& inv_std, const Tensor& dx,
                                 const Tensor& dgamma, const Tensor& dbeta, const Device& device);

// Group norm: x f32/f64 (N, C, ...) of rank >= 2 viewed as (N, C, S), C divisible by groups
// >= 1; y and, where defined, dy and dx like x; gamma, beta, dgamma, dbeta (C) and mean,
// inv_std (N * groups) where defined, all of x's dtype on the device.
struct GroupDims {
  int64_t N, G, Cg, S;  // samples, groups, channels per group, values per channel
  int64_t row() const { return Cg * S; }
};
// Backend::groupnorm_forward's arguments (y and beta defined).
GroupDims check_groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  int64_t groups, const Tensor& y, const Tensor& mean,
                                  const Tensor& inv_std, const Device& device);
// Backend::groupnorm_backward's (dy, mean and inv_std defined; dx like x where defined).
GroupDims check_groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                   const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                                   const Device& device);

// PReLU: x f32/f64 (N, C, ...) of rank >= 2 viewed as (N, C, S); slope (C) or (1) and, where
// defined, dslope like slope; y, dy and dx like x where defined; all of x's dtype on the
// device. Returns (N, C, S).
ChannelDims check_prelu(const char* op, const Tensor& x, const Tensor& slope,
                        std::initializer_list<const Tensor*> like_x, const Tensor& dslope,
                        const Device& device);

// A kernel's scratch as `bytes` of doubles on the device: defined, at least that large.
double* scratch_doubles(const char* op, const Tensor& scratch, size_t bytes, const Device& device);

// Backend::reduce_rows_forward's arguments: x f32/f64 of R x C elements (R, C >= 1), y (R) of
// x's dtype, index (R) i32 where defined. Returns (R, C).
RowDims check_reduce_forward(Reduction r, const Tensor& x, const Tensor& y, const Tensor& index,
                             const Device& device);
// Backend::reduce_rows_backward's: dy (R) and dx (R x C elements) of one float dtype, and what
// the reduction reads (x like dx, y like dy, index (R) i32) defined.
RowDims check_reduce_backward(Reduction r, const Tensor& x, const Tensor& y, const Tensor& index,
                              const Tensor& dy, const Tensor& dx, const Device& device);

// x (N,C) f32/f64 with N, C >= 1; y, if defined, the same.
void check_rows(const char* op, const Tensor& x, const Tensor& y, const Device& device);
// x (N,C)  labels (N) i32  loss (1) of x's dtype (the label values: throw_label_outside).
void check_labels(const char* op, const Tensor& x, const Tensor& labels, const Tensor& loss,
                  const Device& device);
// Label `label` of sample n is outside [0, C) for scores x (N,C).
[[noreturn]] void throw_label_outside(const char* op, int32_t label, int64_t n, const Tensor& x);
// xs[i] (N,Ci,H,W) or (N,Ci)  y (N,sum Ci,H,W) or (N,sum Ci)
void check_concat(const char* op, std::span<const Tensor> xs, const Tensor& y,
                  const Device& device);
// Forward: as check_concat, every part defined.
void check_concat_forward(std::span<const Tensor> xs, const Tensor& y, const Device& device);

// Fixed point: x and y (round), or a, f and y (add), one shape, f32 or f64.
void check_fixed_point_round(const Tensor& x, const Tensor& y, const std::string& who,
                             const Device& device);
void check_fixed_point_add(const Tensor& a, const Tensor& f, const Tensor& y,
                           const std::string& who, const Device& device);
// Affine: forward x, y alike and h; backward y, dy, dx alike, h and dh alike, x (if defined)
// like y.
void check_affine_forward(const Tensor& x, const Tensor& h, const Tensor& y, const Device& device);
void check_affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, const Tensor& dx,
                           const Tensor& dh, const Tensor& x, const Device& device);

// t rounded to an integer, ties to even. For |t| < 2^(digits-1), t ± 2^(digits-1) keeps no
// fraction bits, so the addition rounds t (in the default rounding mode) and the subtraction is
// exact; a larger |t| is an integer already. NaN stays NaN. (Rather than std::nearbyint, which
// the baseline x86-64 build would call once per element.)
template <typename T>
T round_to_integer(T t) {
  constexpr T magic = static_cast<T>(uint64_t{1} << (std::numeric_limits<T>::digits - 1));
  const T m = std::copysign(magic, t);
  return std::abs(t) < magic ? (t + m) - m : t;
}

// The grid of `range_bits` with `frac` fraction bits, in T.
template <typename T>
struct Grid {
  T scale, inv, limit;  // 2^frac, 2^-frac, 2^range
  Grid(int range_bits, int frac)
      : scale(std::ldexp(T(1), frac)),
        inv(std::ldexp(T(1), -frac)),
        limit(std::ldexp(T(1), range_bits)) {}
  T round(T x) const { return round_to_integer(x * scale) * inv; }
  bool on(T x) const { return round_to_integer(x * scale) == x * scale; }  // false for NaN
  bool inside(T y) const { return std::abs(y) < limit; }                   // false for NaN
};

// Fraction bits of the grid in T (24 or 53 minus range_bits); range_bits is checked by the layer.
template <typename T>
int grid_frac_bits(int range_bits) {
  return std::numeric_limits<T>::digits - range_bits;
}

[[noreturn]] void throw_fixed_point_range(double y, int64_t i, int range_bits,
                                          const std::string& who);

// After a rounding whose range check failed somewhere: throws for the first y[i] outside.
template <typename T>
void throw_round_failure(const T* y, int64_t n, const Grid<T>& grid, int range_bits,
                         const std::string& who) {
  for (int64_t i = 0; i < n; ++i)
    if (!grid.inside(y[i])) throw_fixed_point_range(static_cast<double>(y[i]), i, range_bits, who);
}

[[noreturn]] void throw_off_grid(int64_t i, int frac, bool in_place, double a,
                                 const std::string& who);
[[noreturn]] void throw_off_grid(int frac, const std::string& who);

// After a grid addition whose checks failed somewhere: throws for the first element outside the
// range or with an input off the grid. In place (a is y), an input off the grid shows as a
// result off it.
template <typename T>
[[noreturn]] void throw_add_failure(const T* a, const T* y, bool in_place, int64_t n,
                                    const Grid<T>& grid, int range_bits, int frac,
                                    const std::string& who) {
  for (int64_t i = 0; i < n; ++i) {
    if (!grid.inside(y[i])) throw_fixed_point_range(static_cast<double>(y[i]), i, range_bits, who);
    const bool off = in_place ? !grid.on(y[i]) : !grid.on(a[i]);
    if (off) throw_off_grid(i, frac, in_place, static_cast<double>(a[i]), who);
  }
  throw_off_grid(frac, who);
}

// The affine scale s (computed in the kernel's type from h_s) of element i of a tensor of
// `shape` is below min_scale or not finite.
[[noreturn]] void throw_affine_scale(double hs, double s, int64_t i, const Shape& shape,
                                     double clamp, double min_scale, const std::string& who);

}  // namespace frugal
