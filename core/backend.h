// The Backend: every kernel a device provides, in one place. Kernels receive their output and
// scratch memory as arguments and never allocate. An output may alias an input only where the
// op declared that alias, and a kernel gives identical bits whether or not it does.
// All float kernels work in f32 and f64 (the dtype of their tensors). One declaration with its
// contract per kernel, in one interface, so this file runs past 400 lines as kernels are added.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/activation.h"
#include "core/broadcast.h"
#include "core/copy_box.h"
#include "core/device.h"
#include "core/grid_sample.h"
#include "core/reduce.h"
#include "core/resize.h"
#include "core/roles.h"
#include "core/tensor.h"

namespace frugal {

// x (N,C,H,W)  w (K,C/groups,R,S)  y (N,K,P,Q). Padding is pad_h rows above and pad_h_end
// below (pad_w, pad_w_end: left and right); a filter tap r reads input row p*stride_h - pad_h +
// r*dilation_h. Output channel k sees the input channels of its group, k / (K/groups).
struct Conv2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t K = 0, R = 0, S = 0;         // filters: count, height, width
  int64_t P = 0, Q = 0;                // output height, width
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t pad_h_end = 0, pad_w_end = 0, dilation_h = 1, dilation_w = 1, groups = 1;
};
// Output length along one axis: (in + pad + pad_end - dilation*(k-1) - 1) / stride + 1, or 0
// when the dilated kernel does not fit the padded input.
int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t pad_end,
                         int64_t dilation);
// Symmetric padding, no dilation, one group: the convolution every backend ran before groups.
bool conv_is_plain(const Conv2dGeometry& g);

// x (N,C,H,W)  y (N,C,P,Q); padding counts as -inf for max and as 0 for average, whose
// divisor counts it (count_include_pad, as Torch's SpatialAveragePooling) unless
// count_include_pad is false (then the window's elements inside the input only); ceil mode is
// folded into P,Q. Padding is pad_h rows above and pad_h_end below (pad_w, pad_w_end: left and
// right); window tap (i, j) of output (p, q) reads input (p*stride_h - pad_h + i*dilation_h,
// q*stride_w - pad_w + j*dilation_w). Average pools take no dilation.
struct Pool2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t P = 0, Q = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  bool count_include_pad = true;
  int64_t pad_h_end = 0, pad_w_end = 0, dilation_h = 1, dilation_w = 1;
};
// Whether every window of g holds at least one input element (its taps are not all padding).
bool pool_windows_hold_input(const Pool2dGeometry& g);

// The argmax index of a max pool in `bits` (8: (N,C,P,Q) u8; 4: (N*C, ceil(P*Q/2)) u8).
TensorMeta maxpool_index_meta(const Pool2dGeometry& g, int bits);

enum class OptimizerKind { sgd, adamw };
const char* optimizer_name(OptimizerKind k);  // "sgd", "adamw"

// The update fused into backward: SGD with momentum, or AdamW (beta1, beta2, eps and the
// 1-based `step` its bias correction counts; momentum unused). weight_decay is L2 added to the
// gradient for SGD, decoupled (w *= 1 - lr wd) for AdamW, as PyTorch's two optimizers.
// Batched matrix products (layers/matmul.h): `batch` independent products, each
// C (M,N) = op(A) op(B) with op(A) (M,K), op(B) (K,N); A stored (M,K), or (K,M) when trans_a,
// B stored (K,N), or (N,K) when trans_b; all row-major and packed batch after batch.
struct MatmulGeometry {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
};

struct OptimizerConfig {
  double lr = 0.01, momentum = 0.0, weight_decay = 0.0;
  OptimizerKind kind = OptimizerKind::sgd;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int64_t step = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual int threads() const = 0;

  // --- memory -----------------------------------------------------------------------------
  // The memory of this backend's device: where executors bind tensors for its kernels.
  virtual Allocator& allocator() const = 0;
  // The only paths between host and device: `host` is host memory, `dev` (`dev` in
  // copy_to_device, the source in copy_to_host) lives on this backend's device; same bytes().
  // On the CPU both sides are host memory and they are plain copies. Either returns when the
  // host may read or reuse its side.
  virtual void copy_to_device(const Tensor& host, Tensor& dev) = 0;
  virtual void copy_to_host(const Tensor& dev, Tensor& host) = 0;
  virtual void fill(Tensor& t, double value) = 0;     // f32/f64/i32/u8
  virtual void copy(const Tensor& x, Tensor& y) = 0;  // same bytes; y may alias x
  // y += x, elementwise (gradient accumulation in a fixed order)
  virtual void accumulate(const Tensor& x, Tensor& y) = 0;
  // Index of the first NaN or +-inf element of t (row-major), -1 if there is none or t is not
  // a float tensor. The answer reaches the host (a device synchronizes): for checks, not kernels.
  virtual int64_t first_non_finite(const Tensor& t) = 0;
  // Returns when every kernel and copy issued so far has finished (timing, measurements). The
  // CPU's kernels finish before they return: nothing to wait for.
  virtual void synchronize() {}

  // --- dense ------------------------------------------------------------------------------
  // x (N,I)  w (O,I)  b (O) or undefined  y (N,O):  y = x w^T + b
  virtual void linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y) = 0;
  // dx = dy w
  virtual void linear_backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  // dw = dy^T x; db = sum_n dy (db may be undefined)
  virtual void linear_backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw,
                                      Tensor& db) = 0;

  // --- convolution --------------------------------------------------------------------------
  // Scratch bytes each conv kernel needs (im2col columns for a bounded chunk of the batch).
  virtual size_t conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const = 0;
  virtual size_t conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const = 0;
  // Where more scratch buys speed (cuDNN's algorithms): each choice's scratch and measured time,
  // scratch ascending and time descending, the first being conv2d_*_scratch's; backward covers
  // the data and filter gradients together. Given scratch of any of these sizes, the kernels
  // run the fastest way that fits it. Empty (the default): one way, with the least scratch.
  virtual std::vector<ScratchChoice> conv2d_scratch_choices(const Conv2dGeometry& g, DType t,
                                                            bool backward) const {
    (void)g, (void)t, (void)backward;
    return {};
  }
  virtual void conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                              const Tensor& b, Tensor& y, Tensor& scratch) = 0;
  // dx from dy and w
  virtual void conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                    Tensor& dx, Tensor& scratch) = 0;
  // dw (and db if defined) from x and dy; overwrites dw, db
  virtual void conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                      Tensor& dw, Tensor& db, Tensor& scratch) = 0;

  // --- pooling ------------------------------------------------------------------------------
  // index: the position of the max inside its window (row-major in the window), in
  // maxpool_index_bits(g) bits, laid out as maxpool_index_meta (below) says: 8, one u8 per
  // output (N,C,P,Q); 4 (windows of at most 16 positions, where the device packs them), two
  // per byte, each plane of P*Q outputs in its own ceil(P*Q/2) bytes, the even output in the
  // low nibble.
  virtual int maxpool_index_bits(const Pool2dGeometry& /*g*/) const { return 8; }
  virtual void maxpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y,
                                 Tensor& index) = 0;
  virtual void maxpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                                  Tensor& dx) = 0;
  virtual void avgpool2d_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) = 0;
  virtual void avgpool2d_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) = 0;

  // --- nearest upsampling by whole factors (g: input H, W; output P = H kernel_h, Q = W
  // kernel_w) ---------------------------------------------------------------------------------
  // y[n,c,p,q] = x[n,c,p / kernel_h, q / kernel_w]
  virtual void upsample_nearest_forward(const Pool2dGeometry& g, const Tensor& x, Tensor& y) = 0;
  // dx[n,c,h,w] = the sum of dy's kernel_h x kernel_w block, row by row: a fixed order
  virtual void upsample_nearest_backward(const Pool2dGeometry& g, const Tensor& dy, Tensor& dx) = 0;

  // --- resizing (core/resize.h): x (N,C,H,W) -> y (N,C,P,Q), each output the two by two
  // neighbours of resize_tap (g.method linear) or the four by four of resize_cubic_tap (cubic)
  // weighted; backward adds each dy into those dx, plane by plane in output order (the same
  // bits on any thread count).
  virtual void resize_forward(const ResizeGeometry& g, const Tensor& x, Tensor& y) = 0;
  virtual void resize_backward(const ResizeGeometry& g, const Tensor& dy, Tensor& dx) = 0;

  // --- sampling at a grid's points (core/grid_sample.h): x (N,C,H,W), grid (N,P,Q,2) -> y
  // (N,C,P,Q), each output the neighbours grid_taps (bilinear) or grid_index (nearest) pick.
  // Backward: dx (if defined) adds each dy into those inputs, plane by plane in output order;
  // dgrid (if defined) the derivative by each point's two coordinates, its channels summed in
  // order (0 for nearest). The same bits on any thread count.
  virtual void grid_sample_forward(const GridSampleGeometry& g, const Tensor& x, const Tensor& grid,
                                   Tensor& y) = 0;
  virtual void grid_sample_backward(const GridSampleGeometry& g, const Tensor& x,
                                    const Tensor& grid, const Tensor& dy, Tensor& dx,
                                    Tensor& dgrid) = 0;

  // c = op(a) op(b) for each batch of g (MatmulGeometry above); c overlaps neither operand.
  // One batch's product has the same bits whatever the batch count or the thread count.
  virtual void batched_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b,
                              Tensor& c) = 0;

  // --- batch norm (x (N,C,H,W) or (N,C); per-channel tensors (C)) -----------------------------
  // Batch statistics; writes mean, inv_std = 1/sqrt(var_biased + eps), and updates running
  // stats with the unbiased variance: r = (1 - momentum) r + momentum * stat.
  virtual void batchnorm_forward_train(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       Tensor& running_mean, Tensor& running_var, double momentum,
                                       double eps, Tensor& y, Tensor& mean, Tensor& inv_std) = 0;
  virtual void batchnorm_forward_infer(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       const Tensor& running_mean, const Tensor& running_var,
                                       double eps, Tensor& y) = 0;
  // y = (x - mean) (inv_std gamma) + beta from statistics a training forward saved: the bits
  // batchnorm_forward_train wrote (a rebuild in backward). y may be x.
  virtual void batchnorm_normalize(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   const Tensor& mean, const Tensor& inv_std, Tensor& y) = 0;
  // dgamma, dbeta overwritten; dx may be undefined (input needs no gradient)
  virtual void batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                  const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                  Tensor& dgamma, Tensor& dbeta) = 0;
  // The same gradients from the output y = gamma x^ + beta instead of x (a batch norm that
  // keeps its output, not its input: BatchNormOptions::from_output), x^ = (y - beta) times
  // 1 / gamma in double; every gamma must be finite and nonzero (an error names the first that
  // is not). Devices without the kernel (offers_batchnorm_from_output) throw naming themselves.
  virtual void batchnorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                              const Tensor& gamma, const Tensor& beta,
                                              const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                              Tensor& dbeta);

  // --- layer norm (x viewed as (R, C) rows, C = gamma's numel; gamma, beta (C); mean,
  // inv_std (R)) ------------------------------------------------------------------------------
  // Each row's mean and inv_std = 1/sqrt(var_biased + eps), then
  // y = (x - mean) inv_std gamma + beta. y may be x; mean and inv_std may be undefined
  // (inference). Devices without these kernels throw naming themselves.
  virtual void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 double eps, Tensor& y, Tensor& mean, Tensor& inv_std);
  // With x^ = (x - mean) inv_std and g = dy gamma: dx = inv_std (g - mean(g) - x^ mean(g x^))
  // per row, dgamma = sum over rows of dy x^, dbeta = sum of dy, each overwritten where defined
  // (dx may alias dy). Sums run in double in an order the shape alone fixes.
  virtual void layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                  const Tensor& mean, const Tensor& inv_std, Tensor& dx,
                                  Tensor& dgamma, Tensor& dbeta);
  // The same gradients from the output y = x^ gamma + beta instead of x (a layer norm that keeps
  // its output, not its input: LayerNormOptions::from_output), x^ = (y - beta) times 1 / gamma
  // in double per column; every gamma must be finite and nonzero (an error names the first that
  // is not). Devices without the kernel (offers_layernorm_from_output) throw naming themselves.
  virtual void layernorm_backward_from_output(const Tensor& y, const Tensor& dy,
                                              const Tensor& gamma, const Tensor& beta,
                                              const Tensor& inv_std, Tensor& dx, Tensor& dgamma,
                                              Tensor& dbeta);

  // --- group norm (x (N, C, S...) viewed as N x G rows of C/G channels x S, one row per
  // sample and group; gamma, beta (C); mean, inv_std (N*G)) ---------------------------------
  // Each row's mean and inv_std = 1/sqrt(var_biased + eps), then
  // y = (x - mean) inv_std gamma[c] + beta[c]. y may be x; mean and inv_std may be undefined
  // (inference). Devices without these kernels throw naming themselves.
  virtual void groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                 int64_t groups, double eps, Tensor& y, Tensor& mean,
                                 Tensor& inv_std);
  // With x^ = (x - mean) inv_std and g = dy gamma[c]: dx = inv_std (g - mean(g) - x^ mean(g x^))
  // per row, dgamma[c] = sum over the channel of dy x^, dbeta[c] = sum of dy, each overwritten
  // where defined (dx may alias dy). Sums run in double in an order the shape alone fixes.
  // scratch: groupnorm_backward_scratch(x) bytes of the op's backward scratch.
  virtual void groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                  const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                  Tensor& dx, Tensor& dgamma, Tensor& dbeta, const Tensor& scratch);
  // The scratch groupnorm_backward needs for x (N, C, ...): the CPU's per (sample, channel) sums.
  virtual size_t groupnorm_backward_scratch(const TensorMeta& /*x*/) const { return 0; }

  // --- PReLU (x (N, C, ...) viewed as (N, C, S); slope (C), or (1): one for every channel) ---
  // y = x > 0 ? x : slope[c] x. y may be x. Devices without these kernels throw naming
  // themselves.
  virtual void prelu_forward(const Tensor& x, const Tensor& slope, Tensor& y);
  // dx = x > 0 ? dy : slope[c] dy (dx may alias dy); dslope[c] = the sum of x dy where x <= 0
  // over the channel (over every value with one slope), in double in an order the shape alone
  // fixes; each overwritten where defined. scratch: prelu_backward_scratch(x) bytes.
  virtual void prelu_backward(const Tensor& x, const Tensor& dy, const Tensor& slope, Tensor& dx,
                              Tensor& dslope, const Tensor& scratch);
  // The scratch prelu_backward needs for x (N, C, ...): the CPU's per-channel sums.
  virtual size_t prelu_backward_scratch(const TensorMeta& /*x*/) const { return 0; }

  // --- reductions (x viewed as (R, C) rows; y (R) of x's dtype; index (R) i32) -------------
  // y = each row's reduction (core/reduce.h), sums in double in an order the shape alone fixes;
  // for max and min, index = the column of the first extreme (of the first NaN, which wins),
  // where defined. Devices without these kernels throw naming themselves.
  virtual void reduce_rows_forward(Reduction r, const Tensor& x, Tensor& y, Tensor& index);
  // dx (R, C), overwritten, = reduce_math::grad of each element from dy (R), x, y and index
  // (each defined where the reduction reads it: reduction_reads_input, _output, _keeps_index).
  virtual void reduce_rows_backward(Reduction r, const Tensor& x, const Tensor& y,
                                    const Tensor& index, const Tensor& dy, Tensor& dx);

  // Batch norm synchronized over ranks (data parallel, --sync-bn): the local sums, and what is
  // computed from the ranks' sums. sums are f64, per channel, in a fixed order as above:
  // with mean undefined, sums (C) = sum x; with mean, sums (C) = sum (x - mean)^2; with mean,
  // inv_std and dy, sums (2C) = [sum dy, sum dy x^] with x^ = (x - mean) inv_std. Devices
  // without these kernels throw naming themselves.
  virtual void batchnorm_sums(const Tensor& x, const Tensor& mean, const Tensor& inv_std,
                              const Tensor& dy, Tensor& sums);
  // From all ranks' sums over M values: with sq undefined, mean = sum / M; otherwise
  // inv_std = 1/sqrt(sq/M + eps) and the running statistics updated from mean and sq/M
  // (unbiased: sq/(M-1)) with `momentum`.
  virtual void batchnorm_sync_stats(const Tensor& sum, const Tensor& sq, double M, double momentum,
                                    double eps, Tensor& running_mean, Tensor& running_var,
                                    Tensor& mean, Tensor& inv_std);
  // dx = gamma inv_std / M (M dy - (sums[0] + x^ sums[1]) / scale), sums (2C) the ranks'
  // [sum dy, sum dy x^] each weighted by its rank's scale (this rank's dy weighs `scale` in
  // the loss). dx may alias dy.
  virtual void batchnorm_backward_data(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                       const Tensor& mean, const Tensor& inv_std,
                                       const Tensor& sums, double M, double scale, Tensor& dx);

  // --- pointwise ----------------------------------------------------------------------------
  // Bit masks are u8 tensors of ceil(numel/8) bytes, bit i%8 of byte i/8, set where x > 0.
  // NaN propagates forward as in PyTorch (x is kept unless x <= threshold); its mask bit is
  // clear, so backward gives 0 there (dy * [x > 0]; PyTorch's threshold_backward passes dy).
  // y = x <= 0 ? +0 : x (max(x, 0), NaN kept); writes mask if defined.
  virtual void relu_forward(const Tensor& x, Tensor& y, Tensor& mask) = 0;
  // dx = dy where the mask bit is set, else 0
  virtual void relu_backward_mask(const Tensor& dy, const Tensor& mask, Tensor& dx) = 0;
  // dx = dy where y > 0, else 0
  virtual void relu_backward_output(const Tensor& dy, const Tensor& y, Tensor& dx) = 0;
  // --- packing: a tensor that backward reads, held losslessly outside the arena between
  // forward and backward (ExecutorOptions::pack): a ReLU's output (mostly zeros) or any f32
  // activation (values that share a narrow range of exponents). Its packed form, u8 of
  // packed_bytes(n, words, dtype) bytes: per block of kPackBlock elements an int64 header,
  // where the block's words start (in elements of x's dtype), bit 62 (kPackMaskBit) set where
  // the block keeps a mask; then the blocks' words, each block's
  //  - where a mask and its nonzero elements take fewer words than all of its elements, the
  //    mask over its elements (bit i % 8 of byte i / 8, set where an element's bits are not
  //    all zero: -0.0 and NaN count as nonzero, so every bit comes back) in
  //    packed_mask_words(block size, dtype) words, and its nonzero elements in order; else
  //    all of its elements (zeros too);
  //  - those elements as they are in f64; in f32 whole groups of kPackGroup first, each a
  //    header word (pack_group_header: a base exponent b, e exponent bits, s sign bits) and
  //    then each value in w = 23 + e + s bits (mantissa, exponent - b, sign from the low bit
  //    up; value i of the group in lane i % 8, each lane's 32 values one bit stream over w
  //    words, word k of lane l at word 1 + 8 k + l of the group), then the rest as they are;
  // then kPackSpare spare elements (zeros: a kernel may read past the last word). x is f32 or
  // f64. The words each block takes into `counts` (host memory, resized to packed_blocks(n));
  // returns their sum.
  virtual int64_t pack_counts(const Tensor& x, std::vector<int64_t>& counts);
  // Whether the three packing kernels are offered (the CPU and the simulated device).
  virtual bool offers_packing() const { return false; }
  // Whether batchnorm_backward_from_output runs here.
  virtual bool offers_batchnorm_from_output() const { return false; }
  // Whether layernorm_backward_from_output runs here.
  virtual bool offers_layernorm_from_output() const { return false; }
  // Writes x's packed form into `packed`, given pack_counts's counts of this x.
  virtual void pack(const Tensor& x, std::span<const int64_t> counts, Tensor& packed);
  // x = the tensor `packed` holds (packed from a tensor of x's element count and dtype).
  virtual void unpack(const Tensor& packed, Tensor& x);

  // y = x <= threshold ? value : x (NaN kept); mask bit set where x > threshold.
  virtual void threshold_forward(const Tensor& x, double threshold, double value, Tensor& y,
                                 Tensor& mask) = 0;
  // keep where random_uniform(seed, stream, i) >= p; mask = keep; y = x * (1 / (1 - p)) where
  // kept, else +0, or NaN where x is NaN or +-inf (PyTorch's x * 0, up to the sign of zero)
  virtual void dropout_forward(const Tensor& x, double p, uint64_t seed, uint64_t stream, Tensor& y,
                               Tensor& mask) = 0;
  // dx = dy * mask * scale (threshold backward uses scale 1, dropout 1/(1-p))
  virtual void masked_scale(const Tensor& dy, const Tensor& mask, double scale, Tensor& dx) = 0;
  // y = a + b (y may alias a or b)
  virtual void add(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // y = a - b (y may alias a or b)
  virtual void subtract(const Tensor& a, const Tensor& b, Tensor& y) = 0;
  // Channel concatenation of (N,Ci,H,W) inputs into y (N,sum Ci,H,W) and its inverse;
  // undefined entries of dxs are skipped.
  virtual void concat_forward(std::span<const Tensor> xs, Tensor& y) = 0;
  virtual void concat_backward(const Tensor& dy, std::span<Tensor> dxs) = 0;

  // The copy g describes (core/copy_box.h), element by element, from x into y (one dtype, any;
  // y not overlapping x): transposes, slices, splits, pads, concats on any axis.
  virtual void strided_copy(const CopyBox& g, const Tensor& x, Tensor& y) = 0;

  // --- gather along one axis (x viewed as (O, D, I), y as (O, K, I), K = index.size()) -------
  // y[o, k, i] = x[o, index[k], i], each index in [0, D). Devices without these kernels throw
  // naming themselves.
  virtual void gather_forward(const Tensor& x, std::span<const int64_t> index, int64_t outer,
                              Tensor& y);
  // dx (O, D, I), overwritten: zero, then each dy[o, k, i] added at dx[o, index[k], i] in
  // ascending k (a repeated index sums in that order).
  virtual void gather_backward(const Tensor& dy, std::span<const int64_t> index, int64_t outer,
                               Tensor& dx);
  // The same with outer 1 for rows that change from call to call (an embedding's indices, read
  // each step), which a backend must not keep: by default gather_forward and gather_backward;
  // the CUDA backend, which keeps a device copy of each gather's fixed index, overrides them.
  virtual void embedding_forward(const Tensor& table, std::span<const int64_t> rows, Tensor& y) {
    gather_forward(table, rows, 1, y);
  }
  virtual void embedding_backward(const Tensor& dy, std::span<const int64_t> rows, Tensor& dtable) {
    gather_backward(dy, rows, 1, dtable);
  }

  // --- broadcast arithmetic (core/broadcast.h) ------------------------------------------------
  // y = a op b over g: y holds g.numel() elements, a and b are read through g's strides. y may
  // alias an operand with as many elements.
  virtual void binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                              Tensor& y) = 0;
  // da and db, each undefined where not wanted: binary_math::reduce_grad at every element. a
  // and b are read by mul and div only (undefined will do for add and sub), and only for the
  // gradients that need them: a for db; b for da, and for div's db (an operand no wanted
  // gradient reads may be undefined: x * c with a constant c needs only c). A reduced gradient
  // is written before a full-sized one, and db before da when both are full-sized: the one
  // written last (da, or db where only b is full-sized) may alias dy.
  virtual void binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                               const Tensor& dy, Tensor& da, Tensor& db) = 0;

  // --- leaky relu (slope >= 0, so y > 0 exactly where x > 0) ---------------------------------
  // y = x > 0 ? x : slope * x; mask bit set where x > 0 (if defined). y may alias x.
  virtual void leaky_relu_forward(const Tensor& x, double slope, Tensor& y, Tensor& mask) = 0;
  // dx = dy where the mask bit is set, else slope * dy. dx may alias dy.
  virtual void leaky_relu_backward_mask(const Tensor& dy, const Tensor& mask, double slope,
                                        Tensor& dx) = 0;
  // dx = dy where y > 0, else slope * dy. dx may alias dy.
  virtual void leaky_relu_backward_output(const Tensor& dy, const Tensor& y, double slope,
                                          Tensor& dx) = 0;

  // --- activations (core/activation.h) -------------------------------------------------------
  // y = f(x) elementwise (f32 or f64); y may alias x.
  virtual void activation_forward(Activation a, const Tensor& x, Tensor& y) = 0;
  // dx = dy f'(.) from `v`: y where activation_backward_reads_output(a), else x. dx may alias dy.
  virtual void activation_backward(Activation a, const Tensor& v, const Tensor& dy, Tensor& dx) = 0;
  // y = x^exponent elementwise (activation_math::pow_forward); y may alias x. Devices without
  // it throw naming themselves.
  virtual void pow_forward(const Tensor& x, double exponent, Tensor& y);
  // dx = dy exponent x^(exponent - 1) (0 for exponent 0); dx may alias dy.
  virtual void pow_backward(const Tensor& x, double exponent, const Tensor& dy, Tensor& dx);
  // The ELU family (activation_math::elu_forward; nn.ELU and nn.CELU with any alpha, SELU with
  // other constants); y may alias x. Devices without it throw naming themselves.
  virtual void elu_forward(const Tensor& x, const EluCoefficients& c, Tensor& y);
  // dx = dy f'(x) from `v`: y where from_output (elu_backward_reads_output(c) must hold), else x.
  // dx may alias dy.
  virtual void elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                            const Tensor& dy, Tensor& dx);
  // y = clamp(x, lo, hi) elementwise (activation_math::clamp_forward; lo <= hi, either may be
  // infinite); y may alias x. Devices without it throw naming themselves.
  virtual void clamp_forward(const Tensor& x, double lo, double hi, Tensor& y);
  // dx = dy where lo <= x <= hi, else 0; dx may alias dy.
  virtual void clamp_backward(const Tensor& x, double lo, double hi, const Tensor& dy, Tensor& dx);

  // --- fixed-point grid (layers/fixed_point.h): multiples of 2^-frac below 2^range_bits, with
  // frac = 24 - range_bits in f32, 53 - range_bits in f64 (1 <= range_bits < those) --------------
  // y = q(x), x rounded to the grid, ties to even; y may alias x. Throws naming `who` and the
  // first element where |q(x)| >= 2^range_bits or x is not finite.
  virtual void fixed_point_round(const Tensor& x, int range_bits, Tensor& y,
                                 const std::string& who) = 0;
  // y = a + q(f), or a - q(f) when `subtract`; y may alias a. Throws naming `who` and the
  // first element where a is off the grid or |y| >= 2^range_bits.
  virtual void fixed_point_add(const Tensor& a, const Tensor& f, int range_bits, bool subtract,
                               Tensor& y, const std::string& who) = 0;

  // --- affine coupling (layers/affine.h): x (N,c,...)  h (N,2c,...) = [h_s, t] per row,
  // s = exp(clamp tanh(h_s / clamp)) ------------------------------------------------------------
  // y = x s + t, or (x - t) / s when `inverse`; y may alias x. Throws naming `who` and the
  // first element whose s is below min_scale or not finite.
  virtual void affine_forward(const Tensor& x, const Tensor& h, double clamp, double min_scale,
                              bool inverse, Tensor& y, const std::string& who) = 0;
  // From y, h and dy: dx (may alias dy) and dh = [dh_s, dt]; in the forward direction also
  // x = (y - t) / s where x is defined (x may be y's memory). Throws as affine_forward.
  virtual void affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, double clamp,
                               double min_scale, bool inverse, Tensor& dx, Tensor& dh, Tensor& x,
                               const std::string& who) = 0;

  // --- softmax over one axis of x (any rank >= 1): y = exp(x - max) / sum exp(x - max) along
  // `axis`, sums in f64; y may alias x. Backward from y: dx = y (dy - sum_axis dy y); dx may
  // alias dy.
  virtual void softmax_forward(const Tensor& x, int axis, Tensor& y) = 0;
  virtual void softmax_backward(const Tensor& y, const Tensor& dy, int axis, Tensor& dx) = 0;

  // --- losses (x (N,C), labels (N) i32, loss (1)) ----------------------------------------------
  virtual void log_softmax_forward(const Tensor& x, Tensor& y) = 0;
  // dx = dy - exp(y) * sum_c dy
  virtual void log_softmax_backward(const Tensor& dy, const Tensor& y, Tensor& dx) = 0;
  // loss = -mean_n logp[n, label_n]; throws if a label is outside [0, C)
  virtual void nll_forward(const Tensor& logp, const Tensor& labels, Tensor& loss) = 0;
  virtual void nll_backward(const Tensor& dloss, const Tensor& labels, Tensor& dlogp) = 0;
  // loss = mean_n (logsumexp(x_n) - x[n, label_n])
  virtual void softmax_cross_entropy_forward(const Tensor& x, const Tensor& labels,
                                             Tensor& loss) = 0;
  // dx = (softmax(x) - onehot(label)) * dloss / N
  virtual void softmax_cross_entropy_backward(const Tensor& x, const Tensor& labels,
                                              const Tensor& dloss, Tensor& dx) = 0;

  // --- optimizer ------------------------------------------------------------------------------
  // g = dw + wd w;  v = momentum v + g;  w -= lr v   (PyTorch's SGD; v starts at zero)
  virtual void sgd_step(Tensor& w, const Tensor& dw, Tensor& v, const OptimizerConfig& c) = 0;
  // PyTorch's AdamW (torch.optim.AdamW, its single-tensor loop, in this order): w *= 1 - lr wd;
  // m += (1 - beta1)(dw - m);  v = beta2 v + (1 - beta2) dw^2;
  // w -= lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps).  m, v start at 0.
  virtual void adamw_step(Tensor& w, const Tensor& dw, Tensor& m, Tensor& v,
                          const OptimizerConfig& c) = 0;
};

// Bytes of a bit mask over n elements (bit i % 8 of byte i / 8), as the mask kernels take it.
inline int64_t mask_bytes(int64_t n) {
  return (n + 7) / 8;
}

// Packing (Backend::pack): elements per block, blocks of n elements, and the bytes of the
// packed form of n elements whose blocks take `words` elements (pack_counts's sum).
constexpr int64_t kPackBlock = 16384;
constexpr int64_t kPackSpare = 8;    // spare elements after the words
constexpr int64_t kPackGroup = 256;  // f32 values that share a header word and a width
constexpr int64_t kPackMaskBit = int64_t{1} << 62;  // a block header's: the block has a mask
inline int64_t packed_blocks(int64_t n) {
  return (n + kPackBlock - 1) / kPackBlock;
}
inline int64_t packed_block_size(int64_t n, int64_t block) {  // elements in block `block`
  return std::min(kPackBlock, n - block * kPackBlock);
}
// Words of a block of m elements' mask (mask_bytes(m) rounded up to whole elements).
inline int64_t packed_mask_words(int64_t m, DType t) {
  const int64_t size = static_cast<int64_t>(dtype_size(t));
  return (mask_bytes(m) + size - 1) / size;
}
// The most words a block of m elements takes: every element a value, in f32 in groups of
// 32-bit values (a header word more per group); a mask is kept only where it takes fewer.
inline int64_t packed_block_max_words(int64_t m, DType t) {
  return m + (t == DType::f32 ? m / kPackGroup : 0);
}
inline int64_t packed_bytes(int64_t n, int64_t words, DType t) {
  return 8 * packed_blocks(n) + (words + kPackSpare) * static_cast<int64_t>(dtype_size(t));
}
// A group's header word: its values take 23 + e + s bits, their exponents base + [0, 2^e).
constexpr uint32_t kPackGroupTag = 0xa5c30000u;
inline uint32_t pack_group_header(uint32_t base, uint32_t e, uint32_t s) {
  return kPackGroupTag | s << 12 | e << 8 | base;
}

// `t` readable on the host: t itself where it is host memory, else its bytes copied through
// `be` into `staging` (made in host memory on first use, reused while the shape matches).
const Tensor& to_host(Backend& be, const Tensor& t, Tensor& staging);
// A host copy of t through `be` (t itself where it is host memory).
Tensor to_host(Backend& be, const Tensor& t);
// A new host tensor holding t's bytes, wherever t lives (detached from t's memory).
Tensor clone_to_host(Backend& be, const Tensor& t);

// The CPU backend over Eigen, using `threads` OpenMP threads (0: all cores).
Backend& cpu_backend();
// The simulated device (core/sim/): the CPU's kernels over memory host code cannot touch.
Backend& sim_backend();
// The same device offering none of the optional kernels (packing, norms from their outputs), as
// a GPU without them: to test what refuses them, on any machine.
Backend& sim_backend_without_optional_kernels();
// Whether the simulated device offers each convolution pass three scratch choices as cuDNN's
// algorithms do (its least, one input more, and an FFT-sized one, each faster by a factor the
// geometry fixes), so that the workspace choice (memory/workspace.h) runs at a network's scale
// without a GPU. Off by default; the kernels, the CPU's, ignore the extra scratch, so results
// keep their bits. Set it before planning.
void set_sim_scratch_choices(bool enabled);
// The backend of a device named "cpu", "sim" or "cuda" (CUDA where built and present: an error
// otherwise, never a quiet CPU run). Throws naming the valid names for anything else.
Backend& backend_named(const std::string& device);
void set_cpu_threads(int threads);
// Whether the CPU backend takes stride-1 f32 convolutions through its direct kernels (true, the
// default, where the library is built for a CPU with AVX and FMA) or through im2col + GEMM like
// every other convolution (false): for benchmarks and tests that set the two side by side. Set
// it before planning: the two ask for different scratch.
void set_cpu_direct_conv(bool enabled);
bool cpu_direct_conv();
// Whether the direct kernels take this convolution when enabled.
bool cpu_conv2d_direct_applies(const Conv2dGeometry& g, DType t);

}  // namespace frugal
