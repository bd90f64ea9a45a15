// The integer tensors of an ONNX graph's shape arithmetic: what torch.onnx.export writes where
// a model reads sizes (x.size(0) with a dynamic batch, F.pad to a skip's size): Shape, Gather,
// Unsqueeze, Squeeze, Concat, Add/Sub/Mul/Div/Mod, Cast, ConstantOfShape, Reshape, Slice,
// Transpose, Range, Equal, Not, Where, ScatterND, Clip, CumSum, Tile, the reductions (sum,
// product, max, min) and elementwise functions (Ceil, Floor, Sin, Cos, ...) over int64 tensors:
// TF's "same" padding in timm's tf_ models computes its pads so, and EdgeNeXt its Fourier position
// features. They are evaluated while recording, when every activation's shape is known, and feed
// the ops that take shapes (Reshape, Slice, Pad, Split). The same ops evaluate float constants
// computed from shapes (Swin's shifted-window attention mask: x.new_zeros(H, W), filled by slices,
// compared), in double precision; such a tensor is `real`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/broadcast.h"
#include "core/tensor.h"

namespace frugal {

struct IntTensor {
  std::vector<int64_t> dims = {};    // empty: a scalar
  std::vector<int64_t> values = {};  // row-major (empty where real)
  std::vector<double> reals = {};    // a float tensor's elements, row-major
  bool real = false;                 // a float tensor: its elements are `reals`
  int64_t size() const { return static_cast<int64_t>(real ? reals.size() : values.size()); }
  std::string str() const;  // "(1,2,3)" or "[2,2](...)"
};

// An integer op of the graph, as read from its node.
enum class IntOp {
  shape_of,           // of an activation (inputs) or an integer tensor (ints[0]); attrs: start, end
  gather,             // ints: data, indices; attrs: {axis}
  unsqueeze,          // ints: x[, axes]; attrs: axes (opsets < 13)
  squeeze,            // ints: x[, axes]; attrs: axes
  concat,             // ints: parts; attrs: {axis}
  binary,             // ints: a, b
  cast,               // ints: x; attrs: {to bool}; real: to a float type
  constant_of_shape,  // ints: shape; attrs: {value}
  reshape,            // ints: x, shape; attrs: {allowzero}
  slice,              // ints: x, starts, ends[, axes[, steps]]
  transpose,          // ints: x; attrs: perm
  compare,  // ints: a, b; attrs: {a BinaryKind that compares} (1 where it holds, else 0: a bool)
  where,    // ints: condition, a, b (a where the condition is not 0, else b)
  mod,      // ints: a, b; attrs: {fmod} (0: the divisor's sign, as Python's %)
  pow,      // ints: a, b (a to the power b)
  range,    // ints: start, limit, delta (scalars)
  logical_not,  // ints: x (ONNX's Not: 1 where x is 0, else 0)
  scatter_nd,   // ints: data, indices, updates
  expand,       // ints: x, shape (broadcast both ways, as numpy)
  unary,        // ints: x; attrs: {UnaryKind} (Ceil and Floor pass integers unchanged)
  clip,         // ints: x[, min][, max]; attrs: {has min, has max}
  cumsum,       // ints: x, axis; attrs: {exclusive, reverse}
  tile,         // ints: x, repeats (one per axis: axis k of y is x's times repeats[k])
  // ReduceSum, ReduceProd, ReduceMax, ReduceMin: ints x[, axes]; attrs: {IntReduction,
  // keepdims, noop_with_empty_axes, the axes attribute...} (torch.var's count of elements)
  reduce,
};

// The reductions of `IntOp::reduce`, as the ONNX ops of these names.
enum class IntReduction : int64_t { sum, prod, max, min };

// The elementwise functions of `IntOp::unary`, as the ONNX ops of these names.
enum class UnaryKind : int64_t { ceil, floor, sin, cos, sqrt, exp, log, neg, abs, round };
// Whether `k` of an integer tensor is an integer tensor (Ceil, Floor, Round, Neg, Abs); the
// others give floats.
inline bool unary_keeps_integers(UnaryKind k) {
  return k == UnaryKind::ceil || k == UnaryKind::floor || k == UnaryKind::round ||
         k == UnaryKind::neg || k == UnaryKind::abs;
}

struct IntNode {
  IntOp op = IntOp::cast;
  BinaryKind binary = BinaryKind::add;
  std::vector<std::string> ints = {};  // integer operands
  std::vector<int64_t> attrs = {};
  // cast: to a float type; constant_of_shape: the value is `real_value`, a float
  bool real = false;
  double real_value = 0;
};

// A tensor's elements (reals, or integers: a bool mask as 0s and 1s) as a host tensor of
// `dtype` (f32: each rounded), of its dims.
Tensor host_tensor(const IntTensor& t, DType dtype);

// Evaluates `n` over the integer tensors `env`; `shape` is the activation's shape for shape_of
// of an activation. Throws naming what does not fit (the caller adds the node).
IntTensor eval_int_node(const IntNode& n, const std::map<std::string, IntTensor>& env,
                        const std::vector<int64_t>* shape);

}  // namespace frugal
