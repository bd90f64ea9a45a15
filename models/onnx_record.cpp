// ONNX import, recording: a checked graph (models/onnx_graph.h) onto a tape, the file's weights
// into the store, and the registry entry per file. One switch, a case per kind of node (the
// reason this file runs past 400 lines).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "core/error.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/binary.h"
#include "layers/clamp.h"
#include "layers/concat.h"
#include "layers/concat_batch_norm.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/conv_transpose2d.h"
#include "layers/dropout.h"
#include "layers/elu.h"
#include "layers/embedding.h"
#include "layers/flatten.h"
#include "layers/gather.h"
#include "layers/grid_sample.h"
#include "layers/group_norm.h"
#include "layers/layer_norm.h"
#include "layers/leaky_relu.h"
#include "layers/linear.h"
#include "layers/log_softmax.h"
#include "layers/matmul.h"
#include "layers/maxpool2d.h"
#include "layers/pad.h"
#include "layers/pow.h"
#include "layers/prelu.h"
#include "layers/reduce.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/resize.h"
#include "layers/select.h"
#include "layers/slice.h"
#include "layers/softmax.h"
#include "layers/split.h"
#include "layers/transpose.h"
#include "layers/upsample2d.h"
#include "models/onnx.h"
#include "models/onnx_conv3d.h"
#include "models/onnx_einsum.h"
#include "models/onnx_graph.h"
#include "models/onnx_layout.h"
#include "models/onnx_scatter.h"
#include "models/step.h"

namespace frugal {

using Kind = OnnxKind;

namespace {

using Ints = std::vector<int64_t>;

std::string str(const Ints& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << ")";
  return os.str();
}

// An axis of a rank-`rank` value, negative counting from the end.
int64_t axis_of(int64_t axis, int rank) {
  FRUGAL_CHECK(axis >= -rank && axis < rank, "axis ", axis, " is outside a rank-", rank, " value");
  return axis < 0 ? axis + rank : axis;
}

// ONNX's Slice bounds on an extent `dim`, negative from the end: clamped into [0, dim] for a
// positive step; for a negative one, start into [0, dim - 1] and end into [-1, dim - 1].
std::pair<int64_t, int64_t> slice_range(int64_t start, int64_t end, int64_t dim, int64_t step) {
  const int64_t high = step > 0 ? dim : dim - 1;
  auto clamp = [&](int64_t v, int64_t low) {
    if (v < 0) v = v < -dim ? low : v + dim;
    return std::clamp(v, low, high);
  };
  return {clamp(start, 0), clamp(end, step > 0 ? 0 : -1)};
}

// Slice of an activation: one SliceOp per axis that is cut (the batch axis only whole).
Value record_slice(const OnnxNode& n, const std::map<std::string, IntTensor>& ints, Value x) {
  auto in = [&](size_t i) -> const Ints& { return ints.at(n.int_inputs.at(i)).values; };
  const Ints &starts = in(0), &ends = in(1);
  const int rank = x.shape().rank();
  Ints axes;
  if (n.int_inputs.size() > 2) {
    axes = in(2);
  } else {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  FRUGAL_CHECK(starts.size() == ends.size() && axes.size() == starts.size(), "starts ", str(starts),
               ", ends ", str(ends), " and axes ", str(axes), " differ in length");
  const Ints steps = n.int_inputs.size() > 3 ? in(3) : Ints(starts.size(), 1);
  FRUGAL_CHECK(steps.size() == starts.size(), "steps ", str(steps), " and starts ", str(starts),
               " differ in length");
  for (int64_t step : steps) FRUGAL_CHECK(step != 0, "steps ", str(steps), ": a step of 0");
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axis_of(axes[i], rank);
    const int64_t dim = x.shape()[static_cast<int>(a)];
    const auto [b, e] = slice_range(starts[i], ends[i], dim, steps[i]);
    if (b == 0 && e == dim && steps[i] == 1) continue;
    FRUGAL_CHECK(a != 0 || n.batch_moved, "slicing the batch axis is not imported");
    FRUGAL_CHECK(steps[i] > 0 ? b < e : e < b, "slice [", starts[i], ", ", ends[i], ") step ",
                 steps[i], " of axis ", a, " of ", x.shape(), " is empty");
    // (an axis 0 that is not the batch's: an LSTM's layers, a weight's rows)
    x = a == 0 ? slice_leading(x, b, e, steps[i]) : slice(x, a, b, e, steps[i]);
  }
  return x;
}

// Gather over an activation by constant indices (x[:, 0], x[:, [2, 0]]; a scalar index drops
// the axis), or of a weight table (Swin's relative position bias): one gather op. Never along an
// activation's batch axis, but along an axis 0 a Transpose made another (attention's q, k, v).
Value record_gather(const OnnxNode& n, const IntTensor& indices, Value x) {
  const int64_t a = axis_of(n.axis, x.shape().rank());
  FRUGAL_CHECK(a != 0 || n.of_weight || n.batch_moved,
               "a Gather along the batch axis is not imported");
  return gather(x, a, indices.values, indices.dims);
}

// LogSoftmax over axis n.axis: log_softmax of rows (rows, C), the axis moved last first where
// it is not.
Value record_log_softmax(const OnnxNode& n, Value x) {
  const Shape s = x.shape();  // a copy: x is recorded over below
  const int rank = s.rank();
  const int64_t a = axis_of(n.axis, rank);
  FRUGAL_CHECK(!n.legacy || a == rank - 1 || rank == 2, "opset < 13 LogSoftmax over axis ", a,
               " of ", s, " flattens the axes after it; only the last axis is imported");
  Ints perm, back(static_cast<size_t>(rank));
  for (int k = 0; k < rank; ++k)
    if (k != a) perm.push_back(k);
  perm.push_back(a);
  for (int k = 0; k < rank; ++k) back[static_cast<size_t>(perm[static_cast<size_t>(k)])] = k;
  if (a != rank - 1) x = transpose(x, perm);
  const Shape moved = x.shape();
  if (rank != 2) x = reshape(x, Shape{moved.numel() / s[a], s[a]});
  Value y = log_softmax(x);
  if (rank != 2) y = reshape(y, moved);
  return a != rank - 1 ? transpose(y, back) : y;
}

// DepthToSpace and SpaceToDepth of (N, C, H, W) by blocksize b, as ONNX defines them: a reshape
// to six axes, a transpose, a reshape.
Value record_depth_space(const OnnxNode& n, Value x) {
  const Shape s = x.shape();
  const bool to_space = n.kind == OnnxKind::depth_to_space;
  const char* what = to_space ? "DepthToSpace" : "SpaceToDepth";
  FRUGAL_CHECK(s.rank() == 4, what, " of ", s, ": (N, C, H, W) only");
  const int64_t b = n.kernel, N = s[0], C = s[1], H = s[2], W = s[3];
  if (to_space) {
    FRUGAL_CHECK(C % (b * b) == 0, what, " of ", s, " by blocks of ", b, ": ", C,
                 " channels are not a multiple of ", b * b);
    const int64_t c = C / (b * b);
    x = reshape(x, n.column_row_depth ? Shape{N, c, b, b, H, W} : Shape{N, b, b, c, H, W});
    x = transpose(x, n.column_row_depth ? Ints{0, 1, 4, 2, 5, 3} : Ints{0, 3, 4, 1, 5, 2});
    return reshape(x, Shape{N, c, H * b, W * b});
  }
  FRUGAL_CHECK(H % b == 0 && W % b == 0, what, " of ", s, " by blocks of ", b, ": ", H, " x ", W,
               " is not whole blocks");
  x = reshape(x, Shape{N, C, H / b, b, W / b, b});
  x = transpose(x, Ints{0, 3, 5, 1, 2, 4});
  return reshape(x, Shape{N, C * b * b, H / b, W / b});
}

// LRN as ONNX defines it: x / (bias + alpha/size * square_sum)^beta, square_sum over channels
// c - floor((size-1)/2) to c + ceil((size-1)/2) (those inside). As ops, the way PyTorch's
// F.local_response_norm computes it: x*x as (N, 1, C, rest), zeros padded along C, an average
// pool of size x 1 (the sum over size), alpha times it plus bias, to the power beta, x over it.
// PyTorch pads size/2 in front and (size-1)/2 behind: the same window for odd sizes, one channel
// later for even ones (ONNX's, which its export keeps, is taken).
Value record_lrn(const OnnxNode& n, Value x, std::source_location where) {
  const Shape s = x.shape();
  FRUGAL_CHECK(s.rank() >= 3, "LRN of ", s,
               ": (N, C, ...) with at least one axis after the channels");
  const int64_t size = n.kernel, rest = s.numel() / (s[0] * s[1]);
  auto scalar = [&](double v) {
    return constant(x.tape(), host_tensor({.dims = {1}, .reals = {v}, .real = true}, x.dtype()),
                    where);
  };
  Value sq = reshape(mul(x, x), Shape{s[0], 1, s[1], rest});
  sq = pad(sq, {.before = {0, 0, (size - 1) / 2, 0}, .after = {0, 0, size / 2, 0}});
  Value mean = reshape(avg_pool2d(sq, {.kernel = size, .kernel_w = 1, .stride = 1}), s);
  Value base = binary(BinaryKind::add, mul(mean, scalar(n.alpha)), scalar(n.lrn_bias));
  return div(x, power(base, n.lrn_beta));
}

// A reduction over `axes` (any but the batch's). The mean over H and W of (N, C, H, W) is a
// global average pool (flattened to (N, C) without keepdims); otherwise the reduced axes are
// moved last (a transpose, where they are not last already) and reduced as the rows of (N,
// kept, reduced) (a mean: of an (N, kept, 1, reduced) average pool), then the result takes its
// shape.
Value record_reduce(const OnnxNode& n, const Ints& axes, Value x) {
  const Shape s = x.shape();  // a copy: x is recorded over below
  const int rank = s.rank();
  const bool mean = n.kind == OnnxKind::reduce_mean;
  const char* what = mean ? "the mean" : reduction_name(n.reduction);
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    FRUGAL_CHECK(a >= -rank && a < rank, what, " over axes ", str(axes), " of ", s, ": axis ", a,
                 " is outside the rank");
    reduced[static_cast<size_t>(axis_of(a, rank))] = true;
  }
  FRUGAL_CHECK(!reduced[0] || n.batch_moved, what, " over axes ", str(axes), " of ", s,
               " includes the batch axis; frugal imports reductions over the other axes");
  if (reduced[0]) {  // over an axis 0 that is not the batch's: rows of (1, kept, reduced)
    Ints perm, out;
    int64_t kept = 1, count = 1;
    for (int a = 0; a < rank; ++a)
      if (!reduced[static_cast<size_t>(a)]) perm.push_back(a), kept *= s[a];
    for (int a = 0; a < rank; ++a)
      if (reduced[static_cast<size_t>(a)]) perm.push_back(a), count *= s[a];
    for (int a = 0; a < rank; ++a)
      if (!reduced[static_cast<size_t>(a)] || !n.squeeze)
        out.push_back(reduced[static_cast<size_t>(a)] ? 1 : s[a]);
    if (out.empty()) out.push_back(1);
    x = transpose(x, perm);
    Value y =
        mean ? avg_pool2d(reshape(x, Shape{1, kept, 1, count}), {.kernel = 1, .kernel_w = count})
             : reduce(reshape(x, Shape{1, kept, count}), n.reduction, 1);
    return reshape(y, Shape(out));
  }
  if (mean && rank == 4 && !reduced[1] && reduced[2] && reduced[3]) {
    Value y = avg_pool2d(x, {.kernel = s[2], .kernel_w = s[3]});
    return n.squeeze ? flatten(y) : y;
  }
  Ints perm{0}, out{s[0]};
  int64_t kept = 1, count = 1;
  for (int a = 1; a < rank; ++a)
    if (!reduced[static_cast<size_t>(a)]) perm.push_back(a), kept *= s[a];
  for (int a = 1; a < rank; ++a)
    if (reduced[static_cast<size_t>(a)]) perm.push_back(a), count *= s[a];
  for (int a = 1; a < rank; ++a)
    if (!reduced[static_cast<size_t>(a)] || !n.squeeze)
      out.push_back(reduced[static_cast<size_t>(a)] ? 1 : s[a]);
  bool moved = false;
  for (int a = 0; a < rank; ++a) moved = moved || perm[static_cast<size_t>(a)] != a;
  if (moved) x = transpose(x, perm);
  Value y =
      mean ? avg_pool2d(reshape(x, Shape{s[0], kept, 1, count}), {.kernel = 1, .kernel_w = count})
           : reduce(reshape(x, Shape{s[0], kept, count}), n.reduction, 1);
  return reshape(y, Shape(out));
}

// x repeated along its unit axes to `to` (x's rank, its axis k 1 or to[k]): a concat of to[k]
// copies per such axis, whose backward sums the copies' gradients. Never the batch axis.
Value repeat_unit_axes(Value x, const Shape& to, const std::string& what, bool of_weight = false) {
  const Shape s = x.shape();  // a copy: x is recorded over below
  for (int k = 0; k < s.rank(); ++k) {
    if (s[k] == to[k]) continue;
    FRUGAL_CHECK(s[k] == 1, what, ": axis ", k, " is ", s[k], " and ", to[k],
                 ", which do not broadcast");
    FRUGAL_CHECK(k > 0 || of_weight, what, ": broadcasting over the batch axis is not imported");
    constexpr int64_t kMaxCopies = 65536;  // one concatenated piece per copy
    FRUGAL_CHECK(to[k] <= kMaxCopies, what, ": axis ", k, " repeated ", to[k],
                 " times; frugal imports at most ", kMaxCopies);
    const std::vector<Value> copies(static_cast<size_t>(to[k]), x);
    x = k == 0 ? join_leading(copies) : concat(copies, k);  // (axis 0: a weight's)
  }
  return x;
}

// Expand of x to `shape` as NumPy broadcasts: x gains leading unit axes to the shape's rank,
// then its unit axes are repeated (a concat of copies, whose backward sums their gradients). An
// activation keeps its batch axis first: no new axis in front of it, none repeated over it. A
// weight has no batch axis: a vision transformer's class token (1, 1, D) expands to (N, 1, D).
Value record_expand(const Ints& shape, Value x, bool of_weight) {
  const Shape s = x.shape();
  const std::string what = detail::concat("Expand of ", s, " to ", str(shape));
  FRUGAL_CHECK(of_weight || static_cast<int>(shape.size()) <= s.rank(), what,
               ": the new leading axes would stand in front of the batch axis; frugal imports "
               "expansions that keep it first");
  if (static_cast<int>(shape.size()) > s.rank()) {
    std::vector<int64_t> d(shape.size() - static_cast<size_t>(s.rank()), 1);
    d.insert(d.end(), s.dims().begin(), s.dims().end());
    x = reshape(x, Shape(d));
  }
  const Shape r = x.shape();
  std::vector<int64_t> to(r.dims().begin(), r.dims().end());
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    FRUGAL_CHECK(d >= 1, what, ": extent ", d, " is not imported");
    if (d != 1) to[to.size() - shape.size() + i] = d;  // repeat_unit_axes checks the rest
  }
  return repeat_unit_axes(x, Shape(to), what, of_weight);
}

// Add, Sub, Mul or Div with broadcasting; two values of one shape added: the residual add,
// which may take either operand's bytes.
Value record_arithmetic(BinaryKind kind, Value a, Value b) {
  return kind == BinaryKind::add && a.shape() == b.shape() ? add(a, b) : binary(kind, a, b);
}

// ONNX's Tile: x's axis k repeated repeats[k] times, the copies one after another (a concat of
// copies per repeated axis, whose backward sums their gradients), over the batch axis too.
Value record_tile(const Ints& repeats, Value x) {
  const Shape s = x.shape();  // a copy: x is recorded over below
  const std::string what = detail::concat("Tile of ", s, " by ", str(repeats));
  FRUGAL_CHECK(static_cast<int>(repeats.size()) == s.rank(), what,
               ": expected one repeat count per axis");
  constexpr int64_t kMaxCopies = 65536;  // one concatenated piece per copy
  for (int64_t r : repeats)
    FRUGAL_CHECK(r >= 1 && r <= kMaxCopies, what, ": frugal imports repeat counts of 1 to ",
                 kMaxCopies);
  for (int k = 0; k < s.rank(); ++k) {
    const std::vector<Value> copies(static_cast<size_t>(repeats[static_cast<size_t>(k)]), x);
    if (copies.size() > 1) x = k == 0 ? join_leading(copies) : concat(copies, k);
  }
  return x;
}

// Concat along any axis; along an axis 0 that is not the batch's (torch.stack(xs, dim=0),
// weights) through join_leading.
Value record_concat(const OnnxNode& n, std::span<const Value> in) {
  const int64_t a = axis_of(n.axis, in[0].shape().rank());
  return a == 0 && n.batch_moved ? join_leading(in) : concat({in.begin(), in.end()}, a);
}

// MatMul between two activations with NumPy's broadcasting of the leading axes: the shorter
// shape gains leading unit axes, and each unit axis the other operand has more of is repeated
// (a concat of that many copies, whose backward sums the copies' gradients) before the batched
// product. The batch axis is never broadcast.
Value record_matmul(Value a, Value b) {
  const Shape sa = a.shape(), sb = b.shape();  // copies: a and b are recorded over below
  if (sa.rank() == sb.rank()) {
    bool same = true;
    for (int k = 0; k + 2 < sa.rank(); ++k) same = same && sa[k] == sb[k];
    if (same) return matmul(a, b);
  }
  FRUGAL_CHECK(sa.rank() >= 2 && sb.rank() >= 2, "MatMul of ", sa, " and ", sb,
               ": frugal imports products of matrices (rank 2 or more; no vectors)");
  const int rank = std::max(sa.rank(), sb.rank());
  auto widen = [&](Value v, const Shape& s) {
    std::vector<int64_t> d(static_cast<size_t>(rank - s.rank()), 1);
    d.insert(d.end(), s.dims().begin(), s.dims().end());
    return s.rank() == rank ? v : reshape(v, Shape(d));
  };
  a = widen(a, sa);
  b = widen(b, sb);
  std::vector<int64_t> ta(a.shape().dims().begin(), a.shape().dims().end());
  std::vector<int64_t> tb(b.shape().dims().begin(), b.shape().dims().end());
  for (int k = 0; k + 2 < rank; ++k)
    ta[static_cast<size_t>(k)] = tb[static_cast<size_t>(k)] = std::max(a.shape()[k], b.shape()[k]);
  const std::string what = detail::concat("MatMul of ", sa, " and ", sb);
  return matmul(repeat_unit_axes(a, Shape(ta), what), repeat_unit_axes(b, Shape(tb), what));
}

// InstanceNormalization of x (N, C, D1, ...): a group norm with a group per channel, its
// scale and bias those of the node or fixed ones and zeros where the file's were.
Value record_instance_norm(const OnnxNode& n, std::span<const Value> in,
                           std::source_location where) {
  const Shape x = in[0].shape();
  FRUGAL_CHECK(x.rank() >= 3, "InstanceNormalization of ", x,
               ": frugal imports inputs (N, C, D1, ...) with at least one axis to normalize");
  Tape& tape = in[0].tape();
  Value params[2];
  size_t next = 1;
  for (size_t k = 0; k < 2; ++k) {
    if (n.ints[k] == 0) {
      params[k] = tape.param(n.output + (k == 0 ? ".unit_scale" : ".zero_bias"), Shape{x[1]},
                             k == 0 ? Init::ones() : Init::zeros(), false);
      continue;
    }
    params[k] = in[next++];
    FRUGAL_CHECK(params[k].shape() == Shape{x[1]}, "InstanceNormalization of ", x, ": its ",
                 k == 0 ? "scale " : "bias ", params[k].shape(), " is not one value per channel (",
                 x[1], ")");
  }
  return tape.record(std::make_unique<GroupNormOp>(x[1], n.eps), {in[0], params[0], params[1]},
                     where)[0];
}

// PRelu of x (N, C, ...): its slope broadcasts to x along the channels (C, 1, ..., 1) or
// (1, C, 1, ...) or, for x (N, C), (C), or is one value.
Value record_prelu(const Value& x, const Value& slope, std::source_location where) {
  const Shape& s = x.shape();
  const Shape p = slope.shape();
  FRUGAL_CHECK(s.rank() >= 2, "PRelu of ", s, ": frugal imports inputs (N, C, ...)");
  bool per_channel = false;
  if (p.numel() == s[1] && p.numel() > 1) {
    const int c = p.rank() == s.rank() ? 1 : p.rank() == s.rank() - 1 ? 0 : -1;
    per_channel = c >= 0 && p[c] == s[1];
  }
  FRUGAL_CHECK(per_channel || p.numel() == 1, "PRelu of ", s, ": its slope ", p,
               " is neither one value per channel (", s[1], ", along axis 1) nor a single one");
  FRUGAL_CHECK(slope.dtype() == x.dtype(), "PRelu of ", s, " ", dtype_name(x.dtype()),
               ": its slope is ", dtype_name(slope.dtype()));
  const Shape to{per_channel ? s[1] : 1};
  Value a = p == to ? slope : reshape(slope, to);
  return x.tape().record(std::make_unique<PReluOp>(), {x, a}, where)[0];
}

// Conv1d over (N, C, L) with a weight (K, C/groups, k): the 2-D convolution of the window
// conv_window read (a height of 1) over (N, C, 1, L) and (K, C/groups, 1, k), back to
// (N, K, L'). ECA's channel attention (timm's ECA-ResNets) convolves so. ConvTranspose1d
// (`transposed`, a weight (C, K/groups, k)) the same way.
Value record_conv1d(const OnnxNode& n, std::span<const Value> in, bool transposed,
                    std::source_location where) {
  // Copies: a reference into the tape's values dangles once an op is recorded (found by
  // fuzz_onnx: tests/fuzz/regressions/onnx/conv1d-shape-after-reshape.onnx).
  const Shape x = in[0].shape(), w = in[1].shape();
  FRUGAL_CHECK(n.conv.stride_h == 1 && n.conv.dilation_h == 1 && n.conv.pad_top == 0 &&
                   n.conv.pad_bottom == 0,
               "a 1-D convolution of ", x, " with a 2-D window");
  FRUGAL_CHECK(n.kernel_h == 0 || (n.kernel_h == 1 && n.kernel_w == w[2]), "kernel_shape ",
               n.kernel_w, " but the weight is ", w);
  std::vector<Value> args{reshape(in[0], Shape{x[0], x[1], 1, x[2]}),
                          reshape(in[1], Shape{w[0], w[1], 1, w[2]})};
  if (in.size() > 2) args.push_back(in[2]);
  std::unique_ptr<Op> op;
  if (transposed)  // output_padding_h is 0: the import read one value, for L
    op = std::make_unique<ConvTranspose2dOp>(n.conv, n.output_padding_h, n.output_padding_w);
  else
    op = std::make_unique<Conv2dOp>(n.conv);
  const Value y = in[0].tape().record(std::move(op), args, where)[0];
  const Shape s = y.shape();
  return reshape(y, Shape{s[0], s[1], s[3]});
}

// Resize (nearest, linear or cubic mode) of (N, C, H, W) x to out_h x out_w; scale_h and
// scale_w the file's scales (0: from the sizes), whole_h and whole_w upsample_nearest2d's
// whole factors where the import found them (0: none).
Value record_resize2d(const OnnxNode& n, Value x, int64_t out_h, int64_t out_w, double scale_h,
                      double scale_w, int64_t whole_h, int64_t whole_w,
                      std::source_location where) {
  const Shape s = x.shape();  // a copy (record_conv1d says why)
  if (n.kind == OnnxKind::upsample_nearest) {
    if (whole_h == 0 && n.nearest_whole && scale_h == 0 && out_h % s[2] == 0 && out_w % s[3] == 0)
      whole_h = out_h / s[2], whole_w = out_w / s[3];
    if (whole_h > 0)
      return x.tape().record(std::make_unique<UpsampleNearestOp>(whole_h, whole_w), {x}, where)[0];
    // the rows, then the columns ONNX's definition picks
    const Value rows = gather(x, 2, nearest_indices(s[2], out_h, scale_h, n.resize_mode, n.nearest),
                              {out_h}, where);
    return gather(rows, 3, nearest_indices(s[3], out_w, scale_w, n.resize_mode, n.nearest), {out_w},
                  where);
  }
  const ResizeOptions o{.height = out_h,
                        .width = out_w,
                        .mode = n.resize_mode,
                        .scale_h = scale_h,
                        .scale_w = scale_w,
                        .cubic_a = n.cubic_a};
  return n.resize_method == ResizeMethod::cubic ? resize_bicubic(x, o) : resize_bilinear(x, o);
}

// n with the pads auto_pad SAME_UPPER / SAME_LOWER or a ConvTranspose's output_shape asks for,
// over x (N, C, spatial...) and, for Conv and ConvTranspose, weight w (pools: an empty shape;
// their kernel_shape is written). SAME: ceil(in / stride) outputs (ConvTranspose: in * stride),
// the total padding split with its odd element at the end (UPPER) or the start (LOWER).
OnnxNode padded_window(const OnnxNode& n, const Shape& x, const Shape& w) {
  if (n.auto_pad == OnnxNode::AutoPad::none && n.output_shape.empty()) return n;
  OnnxNode o = n;
  const bool transposed = n.kind == OnnxKind::conv_transpose;
  const int rank = x.rank() - 2;
  FRUGAL_CHECK(rank >= 1 && rank <= 3 && (w.rank() == 0 || w.rank() == x.rank()), "auto_pad over ",
               x, " with weight ", w, ": expected (N, C, L), (N, C, H, W) or (N, C, D, H, W)");
  FRUGAL_CHECK(n.output_shape.empty() || static_cast<int>(n.output_shape.size()) == rank ||
                   static_cast<int>(n.output_shape.size()) == rank + 2,
               "output_shape of ", n.output_shape.size(), " values for ", rank, " spatial axes of ",
               x);
  struct Axis {
    int64_t kernel, stride, dilation, *begin, *end;
  };
  Conv2dParams& c = o.conv;
  const int64_t kh = n.kernel_h > 0 ? n.kernel_h : w.rank() > 0 ? w[x.rank() - 2] : 0;
  const int64_t kw = n.kernel_w > 0 ? n.kernel_w : w.rank() > 0 ? w[x.rank() - 1] : 0;
  std::vector<Axis> axes;  // x's spatial axes in order
  int64_t unit_begin = 0, unit_end = 0;
  if (rank == 1) {
    axes = {{kw, c.stride_w, c.dilation_w, &c.pad_left, &c.pad_right}};
  } else if (rank == 2 || n.depth_kernel > 0) {
    if (rank == 3)
      axes.push_back(
          {n.depth_kernel, n.depth_stride, n.depth_dilation, &o.depth_pad_begin, &o.depth_pad_end});
    axes.push_back({kh, c.stride_h, c.dilation_h, &c.pad_top, &c.pad_bottom});
    axes.push_back({kw, c.stride_w, c.dilation_w, &c.pad_left, &c.pad_right});
  } else {  // 3-D, 1 wide along unit_axis (stride 1: SAME pads it by nothing)
    for (int a = 2, other = 0; a < 5; ++a)
      if (a == n.unit_axis)
        axes.push_back({1, 1, 1, &unit_begin, &unit_end});
      else if (other++ == 0)
        axes.push_back({kh, c.stride_h, c.dilation_h, &c.pad_top, &c.pad_bottom});
      else
        axes.push_back({kw, c.stride_w, c.dilation_w, &c.pad_left, &c.pad_right});
  }
  const int64_t out_padding[3] = {rank == 3 ? n.depth_output_padding : 0,
                                  rank == 1 ? n.output_padding_w : n.output_padding_h,
                                  n.output_padding_w};
  for (int a = 0; a < rank; ++a) {
    const Axis& ax = axes[static_cast<size_t>(a)];
    FRUGAL_CHECK(ax.kernel >= 1, "auto_pad needs the window's size (kernel_shape or a weight)");
    const int64_t in = x[a + 2], span = ax.dilation * (ax.kernel - 1) + 1;
    int64_t total;
    if (transposed) {
      const int64_t want =
          !n.output_shape.empty()
              ? n.output_shape[n.output_shape.size() - static_cast<size_t>(rank - a)]
              : in * ax.stride;
      const int64_t pad_index = rank == 3 ? a : rank == 1 ? 1 : a + 1;
      total = ax.stride * (in - 1) + out_padding[pad_index] + span - want;
      FRUGAL_CHECK(total >= 0, "output_shape ", want, " along axis ", a + 2, " of ", x,
                   ": more than the ", want + total,
                   " the window and output_padding reach (not imported)");
    } else {
      const int64_t out = (in + ax.stride - 1) / ax.stride;
      total = std::max<int64_t>(0, (out - 1) * ax.stride + span - in);
    }
    // ConvTranspose's output_shape without auto_pad splits as SAME_LOWER does (ONNX's rule).
    const bool upper = n.auto_pad == OnnxNode::AutoPad::same_upper;
    *ax.begin = upper ? total / 2 : total - total / 2;
    *ax.end = total - *ax.begin;
  }
  o.auto_pad = OnnxNode::AutoPad::none;
  o.output_shape.clear();
  return o;
}

// MaxPool or AveragePool as the 2-D pool: over (N, C, L) as (N, C, 1, L); over
// (N, C, D2, D3, D4) with the window 1 wide along axis u (conv_window: stride 1, no padding
// there) as the pool of the other two axes over (N, C * Du, Da, Db), pooling being per channel:
// a reshape where u is 2, or where u is 4 and axis 3 is 1 wide too (F.local_response_norm's
// (size, 1, 1) window: axes 3 and 4 merged), else with axis u moved next to the channels.
Value record_pool(const OnnxNode& n, Value x) {
  const Shape s = x.shape();  // a copy (record_conv1d says why)
  const Conv2dParams& c = n.conv;
  const int64_t window = n.ints.at(0);
  FRUGAL_CHECK(s.rank() == window + 2, "a ", window, "-D window over ", s, ": expected ",
               window == 1   ? "(N, C, L)"
               : window == 2 ? "(N, C, H, W)"
                             : "(N, C, D, H, W)");
  Pool2dOptions o{.kernel = n.kernel_h,
                  .kernel_w = n.kernel_w,
                  .stride = c.stride_h,
                  .pad = c.pad_top,
                  .stride_w = c.stride_w,
                  .pad_w = c.pad_left,
                  .ceil = n.ceil,
                  .count_include_pad = n.count_include_pad,
                  .pad_end = c.pad_bottom,
                  .pad_w_end = c.pad_right,
                  .dilation = c.dilation_h,
                  .dilation_w = c.dilation_w};
  auto pool = [&](Value v) {
    return n.kind == Kind::max_pool ? max_pool2d(v, o) : avg_pool2d(v, o);
  };
  if (window == 1) {
    const Value y = pool(reshape(x, Shape{s[0], s[1], 1, s[2]}));
    return reshape(y, Shape{s[0], s[1], y.shape()[3]});
  }
  if (window == 2) return pool(x);
  if (n.depth_kernel > 0) {
    // 1 wide along no axis (MaxPool3d(2)): a box's maximum or mean is that along depth of its
    // planes' (H, W) windows', their valid positions counted per axis alike. The 2-D pool of
    // every plane, then the pool of (N, C, D, H'*W') by a (kd, 1) window; a tie goes to the
    // first in (d, h, w) order, as in PyTorch's max_pool3d.
    const Value planes = pool(reshape(x, Shape{s[0], s[1] * s[2], s[3], s[4]}));
    const int64_t h = planes.shape()[2], w = planes.shape()[3];
    const Pool2dOptions d{.kernel = n.depth_kernel,
                          .kernel_w = 1,
                          .stride = n.depth_stride,
                          .pad = n.depth_pad_begin,
                          .stride_w = 1,
                          .pad_w = 0,
                          .ceil = n.ceil,
                          .count_include_pad = n.count_include_pad,
                          .pad_end = n.depth_pad_end,
                          .dilation = n.depth_dilation,
                          .dilation_w = 1};
    const Value depth = reshape(planes, Shape{s[0], s[1], s[2], h * w});
    const Value y = n.kind == Kind::max_pool ? max_pool2d(depth, d) : avg_pool2d(depth, d);
    return reshape(y, Shape{s[0], s[1], y.shape()[2], h, w});
  }
  const int u = n.unit_axis;
  if (u == 2) {
    const Value y = pool(reshape(x, Shape{s[0], s[1] * s[2], s[3], s[4]}));
    return reshape(y, Shape{s[0], s[1], s[2], y.shape()[2], y.shape()[3]});
  }
  if (u == 4 && n.kernel_w == 1 && c.stride_w == 1 && c.pad_left == 0) {
    const Value y = pool(reshape(x, Shape{s[0], s[1], s[2], s[3] * s[4]}));
    return reshape(y, Shape{s[0], s[1], y.shape()[2], s[3], s[4]});
  }
  std::vector<int64_t> perm{0, 1, u}, back(5);
  for (int a = 2; a < 5; ++a)
    if (a != u) perm.push_back(a);
  for (int i = 0; i < 5; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  const Value moved = transpose(x, perm);  // (N, C, Du, Da, Db)
  const Value y = pool(reshape(moved, Shape{s[0], s[1] * s[u], s[perm[3]], s[perm[4]]}));
  return transpose(reshape(y, Shape{s[0], s[1], s[u], y.shape()[2], y.shape()[3]}), back);
}

// Conv3d over (N, C, D2, D3, D4) whose window is 1 wide along axis u (conv_window: stride 1,
// no padding there; LambdaNetworks' (k, k, 1) position lambdas; a window 1 deep, u = 2, is
// recorded as Conv3dOp instead, models/onnx_conv3d.h): axis u moved next to the
// batch and merged into it, the 2-D convolution of the other two axes over (N * Du, C, Da, Db)
// with the weight's unit axis dropped, then back to (N, K, ...) with Du where it was.
Value record_conv3d(const OnnxNode& n, std::span<const Value> in, std::source_location where) {
  const Shape x = in[0].shape(), w = in[1].shape();  // copies (record_conv1d says why)
  const int u = n.unit_axis;
  FRUGAL_CHECK(u >= 2 && u <= 4 && w[u] == 1, "a 3-D convolution of ", x, " with weight ", w,
               ": the window is 1 wide along axis ", u, " in kernel_shape, not in the weight");
  std::vector<int64_t> perm{0, u, 1}, wd{w[0], w[1]};
  for (int a = 2; a < 5; ++a)
    if (a != u) perm.push_back(a), wd.push_back(w[a]);
  FRUGAL_CHECK(n.kernel_h == 0 || (wd[2] == n.kernel_h && wd[3] == n.kernel_w), "kernel_shape ",
               n.kernel_h, "x", n.kernel_w, " (the axes other than ", u, ") but the weight is ", w);
  const Conv2dParams& c = n.conv;
  if (u == 4 && w[3] == 1 && c.stride_w == 1 && c.pad_left == 0 && c.pad_right == 0) {
    // 1 wide along H too (R(2+1)D's (3, 1, 1) temporal convolution): H and W merged, the
    // convolution of (D, H*W) by a (kd, 1) window over x as it lies, no moved copy.
    std::vector<Value> args{reshape(in[0], Shape{x[0], x[1], x[2], x[3] * x[4]}),
                            reshape(in[1], Shape{w[0], w[1], w[2], 1})};
    if (in.size() > 2) args.push_back(in[2]);
    const Value y = in[0].tape().record(std::make_unique<Conv2dOp>(c), args, where)[0];
    return reshape(y, Shape{x[0], y.shape()[1], y.shape()[2], x[3], x[4]});
  }
  const Value moved = transpose(in[0], perm);  // (N, Du, C, Da, Db)
  std::vector<Value> args{reshape(moved, Shape{x[0] * x[u], x[1], x[perm[3]], x[perm[4]]}),
                          reshape(in[1], Shape(wd))};
  if (in.size() > 2) args.push_back(in[2]);
  const Value y = in[0].tape().record(std::make_unique<Conv2dOp>(n.conv), args, where)[0];
  const Shape s = y.shape();  // (N * Du, K, Ea, Eb)
  const Value split = reshape(y, Shape{x[0], x[u], s[1], s[2], s[3]});
  std::vector<int64_t> back{0, 2};  // (N, Du, K, Ea, Eb) -> (N, K, ...) with Du at axis u
  for (int a = 2, next = 3; a < 5; ++a) back.push_back(a == u ? 1 : next++);
  return transpose(split, back);
}

// A Reshape's target for an input of shape `from`, recording a batch of `batch`: a constant
// target was written at the export's batch size. Where the file fixes that batch (B), a first
// entry k * B stands for k * batch (the batch merged with windows or heads: MobileViT's
// patches); where the batch is dynamic, a constant first entry stands for the batch (the
// input's first extent).
Shape reshape_target(const OnnxNode& n, const std::map<std::string, IntTensor>& ints,
                     const OnnxGraph& g, const Shape& from, int64_t batch) {
  Ints target = ints.at(n.int_inputs[0]).values;
  if (!n.of_weight && g.int_constants.count(n.int_inputs[0]) && !target.empty() && target[0] > 0)
    target[0] = g.export_batch > 0 && target[0] % g.export_batch == 0
                    ? target[0] / g.export_batch * batch
                    : from[0];
  try {
    return resolve_reshape(from, target, n.allow_zero);
  } catch (const Error& e) {
    if (g.export_batch <= 0) throw;
    throw Error(std::string(e.what()) + " (the file was exported at a fixed batch of " +
                std::to_string(g.export_batch) +
                ", which its computed shapes may hold: export with dynamic_axes={'x': {0: "
                "'N'}} so that they follow the batch)");
  }
}

// GroupNorm's five nodes (fuse_onnx_graph: `chain` is Reshape, InstanceNormalization, Reshape,
// Mul, and `add` ends it) as one group_norm op, where the first Reshape groups x's channels,
// the second restores x's shape and the weight and bias are one value per channel; else an
// undefined value (the caller records the nodes one by one).
template <typename ValueOf>
Value record_group_norm(const OnnxNode& add, std::span<const OnnxNode* const> chain,
                        const std::map<std::string, IntTensor>& ints, const OnnxGraph& g,
                        const ValueOf& value) {
  const OnnxNode &r = *chain[0], &norm = *chain[1], &back = *chain[2], &mul = *chain[3];
  auto operand = [](const OnnxNode& n, const std::string& known) {
    return n.inputs[0] == known ? n.inputs[1] : n.inputs[0];
  };
  try {
    const Value x = value(r.inputs[0]);
    const Shape s = x.shape();
    if (s.rank() < 3) return {};
    const Shape grouped = reshape_target(r, ints, g, s, s[0]);
    if (grouped.rank() != 3 || grouped[0] != s[0] || grouped[1] < 1 || s[1] % grouped[1] != 0 ||
        reshape_target(back, ints, g, grouped, s[0]) != s)
      return {};
    const Value w = value(operand(mul, back.output)), b = value(operand(add, mul.output));
    auto per_channel = [&](const Value& v) {
      const Shape& p = v.shape();
      if (v.dtype() != x.dtype() || p.numel() != s[1]) return false;
      const int c = p.rank() == s.rank() ? 1 : p.rank() == s.rank() - 1 ? 0 : -1;
      return c >= 0 && p[c] == s[1];
    };
    if (!per_channel(w) || !per_channel(b)) return {};
    return x.tape().record(std::make_unique<GroupNormOp>(grouped[1], norm.eps),
                           {x, reshape(w, Shape{s[1]}), reshape(b, Shape{s[1]})},
                           std::source_location::current())[0];
  } catch (const Error&) {
    return {};  // the nodes one by one say what is wrong
  }
}

}  // namespace

Value record_onnx(const OnnxModel& model, Value images) {
  return record_onnx_outputs(model, images)[0];
}

std::vector<Value> onnx_extra_inputs(const OnnxModel& model, Value images) {
  std::vector<Value> found;
  const auto& values = images.tape().values();
  for (const OnnxInput& e : model.extra_inputs) {
    // The first input of that name made after the images (record_onnx makes them in order).
    auto it = std::find_if(values.begin() + images.id() + 1, values.end(), [&](const ValueNode& v) {
      return v.kind == ValueKind::input && v.name == e.name;
    });
    FRUGAL_CHECK(it != values.end(), model.path, ": the tape has no input '", e.name,
                 "' after the images");
    found.emplace_back(&images.tape(), static_cast<int>(it - values.begin()));
  }
  return found;
}

Value record_onnx(const OnnxModel& model, Value images, std::span<const Value> extra) {
  return record_onnx_outputs(model, images, extra)[0];
}

std::vector<Value> record_onnx_outputs(const OnnxModel& model, Value images) {
  std::vector<Value> extra;
  for (const OnnxInput& e : model.extra_inputs)
    extra.push_back(
        images.tape().input(e.name, batched(images.shape()[0], e.sample), images.dtype()));
  return record_onnx_outputs(model, images, extra);
}

std::vector<Value> record_onnx_outputs(const OnnxModel& model, Value images,
                                       std::span<const Value> extra) {
  const OnnxGraph& g = *model.graph;
  Tape& tape = images.tape();
  FRUGAL_CHECK(extra.size() == model.extra_inputs.size(), model.path, ": ",
               1 + model.extra_inputs.size(), " inputs, ", 1 + extra.size(), " given");
  std::map<std::string, Value> env{{g.input, images}};
  for (size_t i = 0; i < extra.size(); ++i) {
    const OnnxInput& e = model.extra_inputs[i];
    const Shape want = batched(images.shape()[0], e.sample);
    FRUGAL_CHECK(
        &extra[i].tape() == &tape && extra[i].shape() == want && extra[i].dtype() == images.dtype(),
        model.path, ": input '", e.name, "' must be ", want, " ", dtype_name(images.dtype()),
        " on the images' tape, got ", extra[i].shape(), " ", dtype_name(extra[i].dtype()));
    env.emplace(g.extra_inputs[i], extra[i]);
  }
  std::map<std::string, IntTensor> ints = g.int_constants;
  // Expands that broadcasting arithmetic alone reads (OnnxNode::broadcast_only): recorded only
  // where a reader needs the expanded shape.
  struct LazyExpand {
    Value x;
    Ints shape;
    bool of_weight;
    std::string origin;
  };
  std::map<std::string, LazyExpand> lazy;
  auto expanded = [&](const std::string& name, const LazyExpand& l) {
    Tape::Origin from(tape, l.origin);
    try {
      return env[name] = record_expand(l.shape, l.x, l.of_weight);
    } catch (const Error& e) {
      throw Error(l.origin + ": " + e.what());
    }
  };
  auto value = [&](const std::string& name) -> Value {
    if (auto it = env.find(name); it != env.end()) return it->second;
    if (auto l = lazy.find(name); l != lazy.end()) return expanded(name, l->second);
    if (auto c = ints.find(name); c != ints.end()) {
      // A constant computed from shapes (an attention mask, YOLO's anchor points), in the
      // model's float type: an op holding its values.
      Tensor t = host_tensor(c->second, images.dtype());
      if (t.shape().rank() == 0) t = t.reshape(Shape{1});  // a scalar, as weights are
      return env[name] = constant(tape, std::move(t));
    }
    auto p = g.params.find(name);
    FRUGAL_CHECK(p != g.params.end(), model.path, ": '", name,
                 "' is neither a node's output nor a weight");
    Value v = tape.param(name, g.metas.at(name).shape, Init::zeros(), p->second);
    env[name] = v;
    return v;
  };
  // Arithmetic reading an Expand it can broadcast itself: over the unexpanded value where the
  // output's shape is the same, else nothing recorded (the caller records it as usual).
  auto record_broadcast = [&](const OnnxNode& n, std::vector<Value>& in) -> Value {
    for (size_t side = 0; side < 2; ++side) {
      auto l = lazy.find(n.inputs[side]);
      if (l == lazy.end() || env.count(n.inputs[side])) continue;
      const Value other = value(n.inputs[1 - side]);
      const Shape o = other.shape(), x = l->second.x.shape();
      try {
        const Shape full = broadcast_shape(broadcast_shape(x, Shape(l->second.shape)), o);
        if (broadcast_shape(x, o) != full) return {};
        in = {side == 0 ? l->second.x : other, side == 0 ? other : l->second.x};
        return record_arithmetic(n.binary, in[0], in[1]);
      } catch (const Error&) {
        return {};  // recorded with the expanded value, whose errors name the Expand
      }
    }
    return {};
  };
  // An If's condition (a shape value, known now): nonzero takes the then branch.
  auto condition = [&](const std::string& name) {
    auto c = ints.find(name);
    FRUGAL_CHECK(c != ints.end() && c->second.size() == 1, "the If condition '", name,
                 "' is not one value computed from shapes");
    return c->second.real ? c->second.reals[0] != 0 : c->second.values[0] != 0;
  };
  auto record_node = [&](const OnnxNode& n) {
    std::vector<Value> in;
    const auto where = std::source_location::current();
    // The node, not the importer's lines, is where its ops come from (errors, check_finite).
    const std::string origin = model.path + ": node '" + n.name + "' (" + n.op_type + ")";
    Tape::Origin from(tape, origin);
    Value y;
    try {
      if (n.kind == Kind::binary && n.inputs.size() == 2) {
        y = record_broadcast(n, in);
        if (y.valid()) {
          env[n.output] = y;
          return;
        }
      }
      if (n.kind == Kind::choose) {
        const std::string& taken = n.inputs[condition(n.int_inputs[0]) ? 0 : 1];
        if (auto c = ints.find(taken); c != ints.end())
          ints[n.output] = c->second;
        else
          env[n.output] = value(taken);
        return;
      }
      for (const std::string& s : n.inputs) {
        auto c = ints.find(s);  // a Concat's empty piece computed from shapes: nothing to join
        if (n.kind == Kind::concat && c != ints.end() && c->second.size() == 0) continue;
        in.push_back(value(s));
      }
      if (n.kind == Kind::integer) {
        ints[n.output] =
            eval_int_node(n.int_node, ints, in.empty() ? nullptr : &in[0].shape().dims());
        return;
      }
      switch (n.kind) {
        case Kind::conv: {
          const Shape& w = in[1].shape();
          const OnnxNode p = padded_window(n, in[0].shape(), w);
          if (in[0].shape().rank() == 3 && w.rank() == 3) {
            y = record_conv1d(p, in, false, where);
            break;
          }
          if (p.depth_kernel > 0 || (p.unit_axis == 2 && in[0].shape().rank() == 5)) {
            y = record_conv3d_depth(p, in, where);
            break;
          }
          if (p.unit_axis != 0) {
            FRUGAL_CHECK(in[0].shape().rank() == 5 && w.rank() == 5, "a 3-D window over ",
                         in[0].shape(), " with weight ", w, ": expected (N, C, D, H, W)");
            y = record_conv3d(p, in, where);
            break;
          }
          FRUGAL_CHECK(
              w.rank() != 4 || p.kernel_h == 0 || (w[2] == p.kernel_h && w[3] == p.kernel_w),
              "kernel_shape ", p.kernel_h, "x", p.kernel_w, " but the weight is ", w);
          y = tape.record(std::make_unique<Conv2dOp>(p.conv), in, where)[0];
          break;
        }
        case Kind::conv_transpose: {
          const Shape& w = in[1].shape();
          const OnnxNode p = padded_window(n, in[0].shape(), w);
          if (p.depth_kernel > 0) {
            y = record_conv_transpose3d_depth(p, in, where);
            break;
          }
          if (in[0].shape().rank() == 3 && w.rank() == 3) {
            y = record_conv1d(p, in, true, where);
            break;
          }
          FRUGAL_CHECK(
              w.rank() != 4 || p.kernel_h == 0 || (w[2] == p.kernel_h && w[3] == p.kernel_w),
              "kernel_shape ", p.kernel_h, "x", p.kernel_w, " but the weight is ", w);
          y = tape.record(
              std::make_unique<ConvTranspose2dOp>(p.conv, p.output_padding_h, p.output_padding_w),
              in, where)[0];
          break;
        }
        case Kind::upsample_nearest:
        case Kind::resize: {
          const Shape given = in[0].shape();  // a copy: recording may move the tape's values
          const int rank = given.rank();
          FRUGAL_CHECK(rank >= 3 && rank <= 5,
                       "resizes (N, C, L), (N, C, H, W) or (N, C, D, H, W) values, got ", given);
          // A signal (N, C, L) as the image (N, C, 1, L), its scale on H 1 (models/onnx.cpp);
          // a volume's planes first as (N, C*D, H, W), then its depth (below).
          const Value src =
              rank == 3 ? reshape(in[0], Shape{given[0], given[1], 1, given[2]}, where)
              : rank == 5
                  ? reshape(in[0], Shape{given[0], given[1] * given[2], given[3], given[4]}, where)
                  : in[0];
          const Shape x = src.shape();
          int64_t out_d = rank == 5 ? 0 : 1, out_h = 0, out_w = 0;  // sizes, or 0: scales
          if (!n.int_inputs.empty()) {
            Ints s = ints.at(n.int_inputs[0]).values;
            if (rank == 3 && s.size() == 3) s.insert(s.begin() + 2, 1);
            if (rank == 5 && s.size() == 5) {
              out_d = s[2];
              s.erase(s.begin() + 2);
            }
            // (a constant's N is the export's batch: it stands for the batch, as in Reshape)
            FRUGAL_CHECK(s.size() == 4 && s[1] == given[1] && out_d >= 1 && s[2] >= 1 && s[3] >= 1,
                         "sizes ", str(ints.at(n.int_inputs[0]).values), " for ", given,
                         ": expected ",
                         rank == 3   ? "(N, C, L)"
                         : rank == 4 ? "(N, C, H, W)"
                                     : "(N, C, D, H, W)",
                         " with C kept");
            out_h = s[2], out_w = s[3];
          }
          if (out_h == 0) {  // ONNX: floor(input * scale)
            out_h = static_cast<int64_t>(std::floor(double(x[2]) * n.resize_scale_h));
            out_w = static_cast<int64_t>(std::floor(double(x[3]) * n.resize_scale_w));
            if (rank == 5)
              out_d = static_cast<int64_t>(std::floor(double(given[2]) * n.resize_scale_d));
            FRUGAL_CHECK(out_d >= 1 && out_h >= 1 && out_w >= 1, "scales ",
                         rank == 5 ? std::to_string(n.resize_scale_d) + ", " : std::string(),
                         n.resize_scale_h, " and ", n.resize_scale_w, " leave no pixels of ",
                         given);
          }
          y = record_resize2d(n, src, out_h, out_w, n.resize_scale_h, n.resize_scale_w, n.scale_h,
                              n.scale_w, where);
          if (rank == 3) y = reshape(y, Shape{given[0], given[1], y.shape()[3]}, where);
          if (rank == 5) {
            // Along depth: (N, C, D, H'*W') resized to (D', H'*W'), its width as it is (scale
            // 1: every element taken whole), separable as trilinear and nearest resizing are.
            const Value planes =
                reshape(y, Shape{given[0], given[1], given[2], out_h * out_w}, where);
            y = record_resize2d(n, planes, out_d, out_h * out_w, n.resize_scale_d,
                                n.resize_scale_d == 0 ? 0 : 1, n.scale_d, n.scale_d > 0 ? 1 : 0,
                                where);
            y = reshape(y, Shape{given[0], given[1], out_d, out_h, out_w}, where);
          }
          break;
        }
        case Kind::batch_norm:
          if (n.concat_pieces > 0) {
            const auto k = static_cast<size_t>(n.concat_pieces);
            y = concat_batch_norm({in.begin(), in.begin() + static_cast<ptrdiff_t>(k)}, in[k],
                                  in[k + 1], in[k + 2], in[k + 3],
                                  {.eps = n.eps, .momentum = n.momentum}, where);
          } else {
            y = tape.record(std::make_unique<BatchNormOp>(
                                BatchNormOptions{.eps = n.eps,
                                                 .momentum = n.momentum,
                                                 .name = n.name.empty() ? "" : "'" + n.name + "'"}),
                            in, where)[0];
          }
          break;
        case Kind::gemm: {
          std::vector<Value> args = in;
          if (n.transpose_weight) {  // (in, out) -> the (out, in) that linear takes
            FRUGAL_CHECK(in[1].shape().rank() == 2, "weight ", in[1].shape(),
                         " must be a matrix (in, out)");
            args[1] = transpose(in[1], {1, 0});
          }
          // On (..., K) too (MatMul by a weight on tokens): the leading axes are linear's rows.
          y = tape.record(std::make_unique<LinearOp>(), args, where)[0];
          break;
        }
        case Kind::max_pool:
        case Kind::avg_pool:
          y = record_pool(padded_window(n, in[0].shape(), Shape{}), in[0]);
          break;
        case Kind::global_avg_pool: {
          const Shape s = in[0].shape();  // a copy: recorded over below
          FRUGAL_CHECK(s.rank() >= 3 && s.rank() <= 5, "global average pooling of ", s,
                       ": (N, C, L), (N, C, H, W) or (N, C, D, H, W) only");
          if (s.rank() != 4) {
            // nn.AdaptiveAvgPool1d(1) (Swin's pooler) and AdaptiveAvgPool3d(1) (video nets):
            // the positions as one row, (N, C, 1, L) or (N, C, 1, D H W).
            const int64_t positions = s.numel() / (s[0] * s[1]);
            y = avg_pool2d(reshape(in[0], Shape{s[0], s[1], 1, positions}),
                           {.kernel = 1, .kernel_w = positions});
            std::vector<int64_t> ones(static_cast<size_t>(s.rank()), 1);
            ones[0] = s[0], ones[1] = s[1];
            y = reshape(y, Shape(ones));
          } else {
            y = avg_pool2d(in[0], {.kernel = s[2], .kernel_w = s[3]});
          }
          break;
        }
        case Kind::reduce_mean:
          y = record_reduce(n, n.ints, in[0]);
          break;
        case Kind::reduce: {
          Ints axes = n.int_inputs.empty() ? n.ints : ints.at(n.int_inputs[0]).values;
          if (n.global) {  // GlobalMaxPool
            const int rank = in[0].shape().rank();
            FRUGAL_CHECK(rank >= 3, "global max pooling of ", in[0].shape(),
                         ": (N, C, ...) with at least one axis after the channels");
            for (int a = 2; a < rank; ++a) axes.push_back(a);
          }
          FRUGAL_CHECK(!axes.empty() || n.empty_axes_noop,
                       "no axes: the reduction over every axis, the batch's included");
          y = axes.empty() ? in[0] : record_reduce(n, axes, in[0]);
          break;
        }
        case Kind::layer_norm: {
          const int rank = in[0].shape().rank();
          const int64_t a = axis_of(n.axis, rank);
          FRUGAL_CHECK(a >= 1, "LayerNorm over axis ", n.axis, " of ", in[0].shape(),
                       " normalizes the batch axis; frugal imports those from axis 1 on");
          FRUGAL_CHECK(in[1].shape().rank() == rank - a, "scale ", in[1].shape(), " for axes ", a,
                       " to ", rank - 1, " of ", in[0].shape(),
                       ": frugal imports a scale of the normalized axes' shape");
          y = tape.record(std::make_unique<LayerNormOp>(LayerNormOptions{
                              .eps = n.eps, .name = n.name.empty() ? "" : "'" + n.name + "'"}),
                          in, where)[0];
          break;
        }
        case Kind::instance_norm:
          y = record_instance_norm(n, in, where);
          break;
        case Kind::flatten: {
          const Shape s = in[0].shape();
          const int64_t a = axis_of(n.axis, s.rank());
          if (a != 1) {  // (N * ..., rest): LeViT's BatchNorm1d over its tokens
            FRUGAL_CHECK(a > 0, "Flatten of ", s, " at axis 0 would move the batch axis");
            int64_t lead = 1;
            for (int d = 0; d < a; ++d) lead *= s[d];
            y = reshape(in[0], Shape{lead, s.numel() / lead});
            break;
          }
          y = s.rank() == 2 ? in[0] : flatten(in[0]);
          FRUGAL_CHECK(n.flatten_features < 0 || y.shape()[1] == n.flatten_features, "reshape of ",
                       in[0].shape(), " to (N, ", n.flatten_features, ")");
          break;
        }
        case Kind::binary:
          y = record_arithmetic(n.binary, in[0], in[1]);
          break;
        case Kind::select: {
          Value c;
          if (!n.int_inputs.empty()) {  // computed from shapes and constants: fixed
            Tensor t = host_tensor(ints.at(n.int_inputs[0]), images.dtype());
            if (t.shape().rank() == 0) t = t.reshape(Shape{1});
            c = constant(tape, std::move(t), where);
            in.insert(in.begin(), c);
          }
          y = select(in[0], in[1], in[2], where);
          break;
        }
        case Kind::scatter:
          y = record_scatter(ints.at(n.int_inputs[0]), in[0], in[1]);
          break;
        case Kind::relu:
          y = relu(in[0]);
          break;
        case Kind::leaky_relu:
          y = leaky_relu(in[0], n.alpha);
          break;
        case Kind::prelu:
          y = record_prelu(in[0], in[1], where);
          break;
        case Kind::activation:
          y = activation(in[0], n.activation);
          break;
        case Kind::elu:
          y = elu_family(in[0], n.elu);
          break;
        case Kind::dropout:
          y = dropout(in[0], n.alpha);
          break;
        case Kind::identity:
          y = in[0];
          break;
        case Kind::clamp:
          y = clamp(in[0], n.clip_lo, n.clip_hi);
          break;
        case Kind::weight_standardize: {  // each channel of (1, C, L) by its own statistics
          const Shape s = in[0].shape();
          FRUGAL_CHECK(s.rank() >= 2 && s[0] == 1, "a BatchNorm of a weight ", s,
                       ": expected (1, C, ...)");
          auto per_channel = [&](const Value& v) {
            FRUGAL_CHECK(v.shape().numel() == s[1], "a BatchNorm of a weight ", s,
                         ": scale or bias ", v.shape(), " is not one value per channel");
            return v.shape() == Shape{s[1]} ? v : reshape(v, Shape{s[1]});
          };
          const Value scale = per_channel(in[1]), bias = per_channel(in[2]);
          y = tape.record(std::make_unique<GroupNormOp>(s[1], n.eps), {in[0], scale, bias},
                          where)[0];
          break;
        }
        case Kind::pow:
          y = power(in[0], n.alpha);
          break;
        case Kind::transpose: {
          Ints perm = n.ints;
          if (perm.empty())
            for (int k = in[0].shape().rank() - 1; k >= 0; --k) perm.push_back(k);
          y = transpose(in[0], perm);
          break;
        }
        case Kind::reshape: {
          const Shape to = reshape_target(n, ints, g, in[0].shape(), images.shape()[0]);
          y = to == in[0].shape() ? in[0] : reshape(in[0], to);
          break;
        }
        case Kind::matmul: {
          Value a = in[0], b = in[1];  // an Einsum's operands, their last two axes swapped first
          auto swap_last = [](Value v) {
            std::vector<int64_t> perm(static_cast<size_t>(v.shape().rank()));
            for (size_t k = 0; k < perm.size(); ++k) perm[k] = static_cast<int64_t>(k);
            FRUGAL_CHECK(perm.size() >= 2, "an Einsum operand of ", v.shape());
            std::swap(perm[perm.size() - 2], perm.back());
            return transpose(v, perm);
          };
          if (!n.ints.empty() && n.ints[0]) a = swap_last(a);
          if (!n.ints.empty() && n.ints[1]) b = swap_last(b);
          y = record_matmul(a, b);
          break;
        }
        case Kind::einsum:
          y = record_einsum(parse_einsum(n.equation), in);
          break;
        case Kind::reshape_axes: {
          IntNode k = n.int_node;  // the axes arithmetic over the activation's dims
          if (k.op == IntOp::squeeze && k.ints.empty() && k.attrs.empty())
            for (int a = n.of_weight ? 0 : 1; a < in[0].shape().rank(); ++a)  // the unit axes
              if (in[0].shape()[a] == 1) k.attrs.push_back(a);
          if (k.op == IntOp::squeeze && k.ints.empty() && k.attrs.empty()) {
            y = in[0];  // nothing to drop
            break;
          }
          std::map<std::string, IntTensor> dims = ints;
          dims["\x01x"] = IntTensor{.dims = in[0].shape().dims()};
          k.ints.insert(k.ints.begin(), "\x01x");
          const Shape to(eval_int_node(k, dims, nullptr).dims);
          const Ints axes = k.ints.size() < 2 ? k.attrs : ints.at(k.ints[1]).values;
          const int64_t rank = n.int_node.op == IntOp::unsqueeze ? to.rank() : in[0].shape().rank();
          const bool batch = std::any_of(axes.begin(), axes.end(),
                                         [&](int64_t a) { return a == 0 || a == -rank; });
          FRUGAL_CHECK(n.of_weight || n.batch_moved ||
                           (!batch && to.rank() >= 1 && to[0] == in[0].shape()[0]),
                       n.op_type, " of ", in[0].shape(), " to ", to,
                       " moves the batch axis; frugal imports those that keep it");
          y = reshape(in[0], to);
          break;
        }
        case Kind::softmax: {
          const int rank = in[0].shape().rank();
          const int64_t a = axis_of(n.axis, rank);
          FRUGAL_CHECK(!n.legacy || a == rank - 1 || rank == 2, "opset < 13 Softmax over axis ", a,
                       " of ", in[0].shape(),
                       " flattens the axes after it; only the last axis is imported");
          y = softmax(in[0], a);
          break;
        }
        case Kind::log_softmax:
          y = record_log_softmax(n, in[0]);
          break;
        case Kind::lrn:
          y = record_lrn(n, in[0], where);
          break;
        case Kind::grid_sample:
          y = grid_sample(in[0], in[1], n.grid_sample, where);
          break;
        case Kind::depth_to_space:
        case Kind::space_to_depth:
          y = record_depth_space(n, in[0]);
          break;
        case Kind::concat:
          FRUGAL_CHECK(!in.empty(), "every input is empty");
          y = in.size() == 1 ? in[0] : record_concat(n, in);
          break;
        case Kind::slice:
          y = record_slice(n, ints, in[0]);
          break;
        case Kind::gather:
          y = record_gather(n, ints.at(n.int_inputs[0]), in[0]);
          break;
        case Kind::embedding:
          y = embedding(in[0], in[1]);
          break;
        case Kind::expand: {
          Ints shape = ints.at(n.int_inputs[0]).values;
          // A weight's constant shape from an export at a fixed batch: (B, 1, D) for a class
          // token stands for the batch.
          if (n.of_weight && g.export_batch > 0 && g.int_constants.count(n.int_inputs[0]) &&
              !shape.empty() && shape[0] == g.export_batch)
            shape[0] = images.shape()[0];
          if (n.broadcast_only) {
            lazy.emplace(n.output, LazyExpand{in[0], shape, n.of_weight, origin});
            return;
          }
          y = record_expand(shape, in[0], n.of_weight);
          break;
        }
        case Kind::tile: {
          Ints repeats = ints.at(n.int_inputs[0]).values;
          // From an export at a fixed batch B: a value without a batch (1, ...) repeated B
          // times (XCiT's position features) is repeated for the batch recorded.
          if (g.export_batch > 0 && g.int_constants.count(n.int_inputs[0]) && !repeats.empty() &&
              repeats[0] == g.export_batch && in[0].shape().rank() >= 1 && in[0].shape()[0] == 1)
            repeats[0] = images.shape()[0];
          y = record_tile(repeats, in[0]);
          break;
        }
        case Kind::pad: {
          const Ints& pads = ints.at(n.int_inputs[0]).values;
          const int rank = in[0].shape().rank();
          FRUGAL_CHECK(static_cast<int>(pads.size()) == 2 * rank, "pads ", str(pads), " for ",
                       in[0].shape(), ": expected ", 2 * rank, " values");
          PadOptions o{.before = Ints(pads.begin(), pads.begin() + rank),
                       .after = Ints(pads.begin() + rank, pads.end()),
                       .value = n.pad_value,
                       .mode = n.pad_mode};
          const bool none = std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
          y = none ? in[0] : pad(in[0], o);
          break;
        }
        case Kind::lstm: {
          const std::vector<Value> ys = record_lstm(n.lstm, in, where);
          for (size_t i = 1; i < ys.size(); ++i)
            if (!n.outputs[i].empty()) env[n.outputs[i]] = ys[i];
          y = ys[0];
          break;
        }
        case Kind::split: {
          const int rank = in[0].shape().rank();
          const int64_t a = axis_of(n.axis, rank);
          FRUGAL_CHECK(a != 0 || n.batch_moved, "a Split along the batch axis is not imported");
          const int64_t dim = in[0].shape()[static_cast<int>(a)];
          Ints sizes = n.int_inputs.empty() ? n.ints : ints.at(n.int_inputs[0]).values;
          const auto parts = static_cast<int64_t>(n.outputs.size());
          if (sizes.empty()) {
            FRUGAL_CHECK(dim % parts == 0, "axis ", a, " of ", in[0].shape(),
                         " does not split into ", parts, " equal parts");
            sizes.assign(static_cast<size_t>(parts), dim / parts);
          }
          FRUGAL_CHECK(static_cast<int64_t>(sizes.size()) == parts, str(sizes), " sizes for ",
                       parts, " outputs");
          const std::vector<Value> ys = split(in[0], a, sizes);
          for (size_t i = 1; i < ys.size(); ++i) env[n.outputs[i]] = ys[i];
          y = ys[0];
          break;
        }
        default:
          throw Error("unexpected op kind");
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      // A shape error the tape named the node in, or a deferred Expand's, which names itself.
      if (what.starts_with(model.path + ": node '")) throw;
      throw Error(origin + ": " + what);
    } catch (const std::out_of_range&) {  // a value the checks let through unread: still an error
      throw Error(origin + ": reads a value that is not defined");
    }
    env[n.output] = y;
  };
  // The nodes of a fused pattern wait for its last node, which records them as one op where
  // the shapes confirm the pattern, or else one by one (their values are read by the pattern
  // alone, so recording them later changes nothing).
  std::map<std::string, const OnnxNode*> waiting;
  for (const OnnxNode& n : g.nodes) {
    // A node of an If's branch not taken.
    if (std::any_of(n.guards.begin(), n.guards.end(), [&](const auto& guard) {
          try {
            return condition(guard.first) != guard.second;
          } catch (const Error& e) {
            throw Error(model.path + ": node '" + n.name + "' (" + n.op_type + "): " + e.what());
          }
        }))
      continue;
    if (n.deferred) {
      waiting[n.output] = &n;
      continue;
    }
    if (!n.group_norm_chain.empty()) {
      std::vector<const OnnxNode*> chain;
      for (const std::string& name : n.group_norm_chain) chain.push_back(waiting.at(name));
      Tape::Origin from(tape, model.path + ": nodes '" + chain.front()->name + "' to '" + n.name +
                                  "' (GroupNorm)");
      const Value y = record_group_norm(n, chain, ints, g, value);
      if (y.valid()) {
        env[n.output] = y;
        continue;
      }
      for (const OnnxNode* c : chain) record_node(*c);
    }
    record_node(n);
  }
  std::vector<Value> outputs{value(g.output)};
  for (const std::string& out : g.extra_outputs) {
    outputs.push_back(value(out));
    FRUGAL_CHECK(outputs.back().shape() == outputs[0].shape(), model.path, ": the output '", out,
                 "' is ", outputs.back().shape(), " and the first, '", g.output, "', ",
                 outputs[0].shape(),
                 "; frugal imports several outputs of one shape, each scored against the same "
                 "labels");
  }
  return outputs;
}

void load_onnx_weights(ParamStore& store, const OnnxModel& model) {
  if (!store.materialized()) return;
  if (model.graph->weights_dropped) return load_onnx_weights(store, load_onnx(model.path));
  for (const auto& [name, trainable] : model.graph->params) {
    Parameter* p = store.find(name);
    FRUGAL_CHECK(p != nullptr, model.path, ": weight '", name,
                 "' is not in the store (record the model first)");
    const Tensor& t = model.graph->initializers.at(name);
    FRUGAL_CHECK(p->value.shape() == t.shape(), model.path, ": weight '", name, "' is ", t.shape(),
                 ", the store's ", p->value.shape());
    if (p->value.dtype() == t.dtype()) {
      store.backend().copy_to_device(t, p->value);
      continue;
    }
    // A float64 export recorded in float32 or the other way: each weight rounded or widened.
    Tensor converted = Tensor::empty(t.shape(), p->value.dtype());
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (converted.dtype() == DType::f64)
        converted.data<double>()[i] = element_as_double(t, i);
      else
        converted.data<float>()[i] = static_cast<float>(element_as_double(t, i));
    }
    store.backend().copy_to_device(converted, p->value);
  }
}

namespace {
std::vector<ModelInput> extra_model_inputs(const OnnxModel& model) {
  std::vector<ModelInput> names;
  for (const OnnxInput& e : model.extra_inputs) names.push_back({e.name, e.whole, e.below});
  return names;
}

struct Cached {
  std::shared_ptr<const OnnxModel> model;
  ModelSpec spec;
};
// One load per file for the process: specs are handed out by reference.
Cached& cached(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Cached>> by_path;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Cached>& c = by_path[path];
  if (!c) {
    auto model = std::make_shared<const OnnxModel>(load_onnx(path, false));
    c = std::make_unique<Cached>(Cached{
        model,
        ModelSpec{
            .name = path,
            .description = "ONNX model " + path,
            .input = model->input,
            .classes = model->classes,
            .log_softmax_output = false,
            .build = [model](Value images,
                             const ModelConfig&) { return record_onnx(*model, images); },
            .build_outputs =
                model->graph->extra_outputs.empty()
                    ? std::function<std::vector<Value>(Value, const ModelConfig&)>()
                    : [model](Value images,
                              const ModelConfig&) { return record_onnx_outputs(*model, images); },
            .label_shape = model->label_shape,
            .extra_inputs = extra_model_inputs(*model)}});
  }
  return *c;
}
}  // namespace

const ModelSpec& onnx_model_spec(const std::string& path) {
  return cached(path).spec;
}

const OnnxModel& onnx_model(const std::string& path) {
  return *cached(path).model;
}

}  // namespace frugal
