// The checked form of an ONNX graph: what models/onnx.cpp reads out of the file and
// models/onnx_record.cpp records, with nothing of protobuf in it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/activation.h"
#include "core/broadcast.h"
#include "core/reduce.h"
#include "core/tensor.h"
#include "layers/conv2d.h"
#include "layers/grid_sample.h"
#include "layers/pad.h"
#include "models/onnx_ints.h"
#include "models/onnx_lstm.h"
#include "models/onnx_resize.h"

namespace frugal {

// The frugal op a node becomes.
enum class OnnxKind {
  conv,
  conv_transpose,
  upsample_nearest,  // Resize in nearest mode by whole factors
  resize,            // Resize in linear or cubic mode (resize_method, cubic_a)
  batch_norm,
  gemm,
  max_pool,
  avg_pool,
  global_avg_pool,
  reduce_mean,  // ints: the axes; squeeze: without keepdims
  reduce,       // the other reductions: as reduce_mean, or int_inputs[0]: the axes; reduction
  layer_norm,   // axis: the first normalized axis (negative: from the end); eps
  // InstanceNormalization (and GroupNorm's export): eps; ints {scale read, bias read}, a fixed
  // scale of ones or bias of zeros being left out of the inputs
  instance_norm,
  flatten,
  // Add (same shapes: the residual add), Sub, Mul, Div with broadcasting; comparisons (masks of
  // 0s and 1s), And (mul), Or, Xor and Not (equal to 0) of masks
  binary,
  concat,
  relu,
  leaky_relu,
  prelu,  // inputs {x, slope}: the slope one value per channel (axis 1) or one for all
  activation,
  elu,    // Elu, Celu and Selu with other constants than the defaults: elu (its coefficients)
  pow,    // by the constant alpha (Pow by 2, 0.5 and 1 are mul, sqrt and identity)
  clamp,  // Clip to [clip_lo, clip_hi] (to [0, 6] and [0, inf): relu6 and relu)
  // BatchNorm in training mode over a weight (1, C, L): inputs {w, scale, bias}; eps
  weight_standardize,
  identity,
  dropout,       // a training-mode export's Dropout; alpha holds the ratio
  transpose,     // ints: perm (empty: reversed)
  reshape,       // int_inputs[0]: the target shape
  reshape_axes,  // Unsqueeze or Squeeze of an activation: int_node (its axes)
  matmul,        // MatMul or Einsum between two activations; ints: {swap a, swap b} (Einsum)
  einsum,        // any other Einsum of one or two operands (models/onnx_einsum.h): equation
  slice,         // int_inputs: starts, ends[, axes[, steps]]
  split,         // outputs; int_inputs[0] (or ints): sizes, else equal parts
  gather,        // int_inputs[0]: indices (a scalar drops the axis); axis
  embedding,     // Gather of a weight table's rows (axis 0) at an activation's values: inputs
                 // {table, indices} (nn.Embedding of an int64 input, carried as floats)
  expand,        // int_inputs[0]: the shape an activation broadcasts to
  tile,          // int_inputs[0]: the repeat counts, one per axis
  pad,           // int_inputs[0]: pads (begins, then ends); pad_value
  softmax,       // axis; legacy: opset < 13's flattening form
  log_softmax,   // LogSoftmax: as softmax
  // DepthToSpace (nn.PixelShuffle) and SpaceToDepth: kernel the blocksize; column_row_depth:
  // DepthToSpace's CRD mode (PixelShuffle's), else DCR
  depth_to_space,
  space_to_depth,
  lrn,          // LRN (nn.LocalResponseNorm): kernel its size; alpha, lrn_beta, lrn_bias
  grid_sample,  // GridSample (F.grid_sample): inputs {x, grid}; grid_sample its options
  lstm,         // LSTM, GRU or RNN (lstm.cell); outputs Y, Y_h(, Y_c) (empty: not read)
  // Where over activations: inputs {c, a, b}, or {a, b} with int_inputs[0] the condition, computed
  // from shapes and constants
  select,
  // ScatterND into an activation: inputs {data, updates}, int_inputs[0] the indices (each
  // sample's positions written from its own updates, the same positions in every sample)
  scatter,
  // If (its condition computed from shapes and constants, so known while recording): inputs
  // {then branch's output, else branch's}, int_inputs[0] the condition; the output names the
  // one the condition picks (an activation or a shape value). The branches' nodes come before it
  // in the graph, guarded (OnnxNode::guards).
  choose,
  // Integer shape arithmetic (models/onnx_ints.h: torch.onnx.export's dynamic batch, F.pad),
  // evaluated while recording, when every shape is known: int_node (inputs: the activation a
  // Shape reads).
  integer,
};

struct OnnxNode {
  OnnxKind kind = OnnxKind::identity;
  std::string name, op_type;
  std::vector<std::string> inputs;  // the ones the frugal op reads, in its order
  std::string output;
  int64_t kernel = 1;   // lrn: its size; depth_to_space, space_to_depth: the blocksize
  Conv2dParams conv{};  // Conv, and its kernel_shape (0 where absent); pools' windows alike
  int unit_axis = 0;    // Conv with a 3-D window: its axis (2 to 4) 1 wide, `conv` the others'
  // Conv with a 3-D window 1 wide along no axis (depth_kernel > 0): its depth (axis 2)
  // window, `conv` the window of H and W (models/onnx_conv3d.h; pools: record_pool).
  int64_t depth_kernel = 0, depth_stride = 1, depth_dilation = 1, depth_pad_begin = 0,
          depth_pad_end = 0, depth_output_padding = 0;  // the last: ConvTranspose
  int64_t kernel_h = 0, kernel_w = 0;
  int64_t output_padding_h = 0, output_padding_w = 0;  // ConvTranspose
  // Conv, ConvTranspose and pools with auto_pad SAME_UPPER or SAME_LOWER, and ConvTranspose
  // with output_shape (its spatial sizes): pads computed from the input's sizes while recording
  // (padded_window in models/onnx_record.cpp).
  enum class AutoPad { none, same_upper, same_lower } auto_pad = AutoPad::none;
  std::vector<int64_t> output_shape;
  // Resize in nearest mode by whole scales (upsample_nearest2d), or 0: by gathers of the
  // rows and columns `nearest` picks (models/onnx_resize.h), or its sizes by whole factors
  // where nearest_whole (the pixels picked are upsample_nearest2d's);
  int64_t scale_h = 0, scale_w = 0, scale_d = 0;  // scale_d: along depth, of (N, C, D, H, W)
  NearestMode nearest = NearestMode::floor;
  bool nearest_whole = false;
  ResizeCoordinates resize_mode = ResizeCoordinates::half_pixel;  // Resize in any mode
  ResizeMethod resize_method = ResizeMethod::linear;              // or cubic mode,
  double cubic_a = -0.75;                                         // its cubic_coeff_a
  double resize_scale_h = 0, resize_scale_w = 0;                  // scales, or 0: sizes
  double resize_scale_d = 0;  // along depth, of (N, C, D, H, W): 1 for other ranks
  bool ceil = false, count_include_pad = true;
  double eps = 1e-5, momentum = 0.1, alpha = 0;
  double clip_lo = 0, clip_hi = 0;       // clamp
  double lrn_beta = 0.75, lrn_bias = 1;  // lrn
  Activation activation = Activation::sigmoid;
  EluCoefficients elu;  // kind elu
  Reduction reduction = Reduction::sum;
  BinaryKind binary = BinaryKind::add;
  int64_t flatten_features = -1;  // Reshape to (N, F): F, or -1
  bool squeeze = false;           // a reduction without keepdims: the axes dropped
  // transpose's perm, split's sizes (opsets < 13), ReduceMean's axes; pools: {the window's rank}
  std::vector<int64_t> ints;
  std::vector<std::string> int_inputs;  // integer operands, read while recording
  IntNode int_node;                     // kind integer
  std::vector<std::string> outputs;     // split: every output (`output` is the first)
  int64_t axis = 1;                     // concat, split, softmax, gather (negative: from the end)
  double pad_value = 0;
  std::string equation;  // einsum
  PadMode pad_mode = PadMode::constant;
  bool legacy = false;            // softmax of opset < 13
  OnnxLstm lstm;                  // LSTM: its direction, hidden size and optional inputs
  bool allow_zero = false;        // reshape's allowzero
  bool empty_axes_noop = false;   // reduce: noop_with_empty_axes (empty axes: x itself)
  bool global = false;            // reduce: over every axis from 2 on (GlobalMaxPool)
  bool column_row_depth = false;  // depth_to_space: CRD mode
  GridSampleOptions grid_sample;  // grid_sample: mode, padding, align_corners
  bool transpose_weight = false;  // gemm: the weight is (in, out) (Gemm transB = 0, MatMul)
  // gather, split, squeeze: of a value whose axis 0 a Transpose made not the batch
  bool batch_moved = false;
  bool of_weight = false;  // reshape_axes, reshape, gather, tile: of weights or constants
  // expand: read only by Add/Sub/Mul/Div, which broadcast its input themselves where that gives
  // their output's shape (fuse_onnx_graph marks it; recording decides per reader)
  bool broadcast_only = false;
  int concat_pieces = 0;  // batch_norm: of its first this many inputs joined (fused)
  // GroupNorm's export (fuse_onnx_graph): its first four nodes wait (deferred) for the Add
  // that ends it, which names them in order (Reshape, InstanceNormalization, Reshape, Mul).
  bool deferred = false;
  std::vector<std::string> group_norm_chain;
  // A node of an If's branch: recorded only where every (condition, branch) holds, the
  // condition's value nonzero for the then branch (nested Ifs: one pair per level, outermost
  // first). Empty for the graph's own nodes.
  std::vector<std::pair<std::string, bool>> guards;
};

struct OnnxGraph {
  std::vector<OnnxNode> nodes;
  std::map<std::string, Tensor> initializers;      // f32, host (weights gone if weights_dropped)
  std::map<std::string, TensorMeta> metas;         // every initializer's shape and dtype
  bool weights_dropped = false;                    // load_onnx(path, keep_weights = false)
  std::map<std::string, bool> params;              // initializer -> trainable, for those ops read
  std::map<std::string, IntTensor> int_constants;  // int64 initializers and Constants
  std::string input, output;
  // The graph's other outputs, in the file's order (auxiliary heads).
  std::vector<std::string> extra_outputs;
  // The graph's other inputs, in the file's order (a timestep, a second image, a mask).
  std::vector<std::string> extra_inputs;
  int64_t export_batch = 0;  // the inputs' batch where the file fixes it, else 0 (dynamic)
};

// Fuses patterns into frugal's ops after checking: x * sigmoid(x) into SiLU,
// x * 0.5 * (1 + erf(x / sqrt(2))) (PyTorch's nn.GELU export) into GELU, its tanh form into
// gelu_tanh, LayerNorm's nine nodes below opset 17 into layer_norm, and marks GroupNorm's
// five nodes for one group_norm op (recorded as such where the shapes confirm it). Constants
// only those patterns read leave the graph.
void fuse_onnx_graph(OnnxGraph& graph);

}  // namespace frugal
