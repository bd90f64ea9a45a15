// Evaluating the shape arithmetic of an ONNX graph and the constants computed from it
// (models/onnx_ints.h): one switch over the ops, and the element moves they share (transpose,
// slice, numpy's broadcast, ScatterND), which is why this file runs past 400 lines.
#include "models/onnx_ints.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/error.h"
#include "core/shape.h"
#include "layers/reshape.h"

namespace frugal {

namespace {

constexpr int64_t kMaxIntElements = int64_t{1} << 20;  // shape arithmetic stays small

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    FRUGAL_CHECK(d >= 0 && (d == 0 || n <= kMaxIntElements / d), "integer tensor of dims ",
                 Shape(dims), " is too large (more than ", kMaxIntElements, " elements)");
    n *= d;
  }
  return n;
}

int64_t product(const std::vector<int64_t>& dims, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n *= dims[k];
  return n;
}

int64_t axis_in(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  FRUGAL_CHECK(axis >= -r && axis < r, "axis ", axis, " is outside a rank-", r, " tensor");
  return axis < 0 ? axis + r : axis;
}

// Axes from an operand or, where it is absent, from the attributes.
std::vector<int64_t> axes_of(const IntNode& n, const std::map<std::string, IntTensor>& env) {
  return n.ints.size() > 1 ? env.at(n.ints[1]).values : n.attrs;
}

IntTensor transpose(const IntTensor& x, std::vector<int64_t> perm) {
  const size_t r = x.dims.size();
  if (perm.empty())
    for (size_t k = r; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> want(r);
  std::iota(want.begin(), want.end(), 0);
  FRUGAL_CHECK(sorted == want, "perm is not a permutation of the ", r, " axes");
  IntTensor y;
  for (int64_t p : perm) y.dims.push_back(x.dims[static_cast<size_t>(p)]);
  const Shape xs(x.dims);
  std::vector<int64_t> stride(r, 1);
  for (size_t k = r; k-- > 1;) stride[k - 1] = stride[k] * x.dims[k];
  y.values.resize(x.values.size());
  for (size_t i = 0; i < y.values.size(); ++i) {
    size_t rest = i, src = 0;
    for (size_t k = r; k-- > 0;) {
      const auto d = static_cast<size_t>(y.dims[k]);
      src += (rest % d) * static_cast<size_t>(stride[static_cast<size_t>(perm[k])]);
      rest /= d;
    }
    y.values[i] = x.values[src];
  }
  return y;
}

IntTensor slice(const IntTensor& x, const std::vector<int64_t>& starts,
                const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                std::vector<int64_t> steps) {
  const size_t r = x.dims.size();
  FRUGAL_CHECK(r >= 1, "slice of a scalar");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  FRUGAL_CHECK(
      starts.size() == ends.size() && axes.size() == starts.size() && steps.size() == starts.size(),
      "starts, ends, axes and steps differ in length");
  std::vector<int64_t> first(r, 0), step(r, 1), dims = x.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto a = static_cast<size_t>(axis_in(axes[i], r));
    const int64_t d = x.dims[a];
    FRUGAL_CHECK(steps[i] != 0, "slice step 0");
    // A step beyond the extent takes one element at most: clamped so the count cannot overflow.
    const int64_t s =
        std::clamp<int64_t>(steps[i], -std::max<int64_t>(d, 1), std::max<int64_t>(d, 1));
    int64_t b = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d), e = std::clamp<int64_t>(e, 0, d);
      dims[a] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, d - 1), e = std::clamp<int64_t>(e, -1, d - 1);
      dims[a] = b > e ? (b - e - s - 1) / -s : 0;
    }
    first[a] = b, step[a] = s;
  }
  IntTensor y{.dims = dims, .values = std::vector<int64_t>(static_cast<size_t>(count(dims)))};
  std::vector<int64_t> stride(r, 1);
  for (size_t k = r; k-- > 1;) stride[k - 1] = stride[k] * x.dims[k];
  for (size_t i = 0; i < y.values.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), src = 0;
    for (size_t k = r; k-- > 0;) {
      const int64_t j = rest % dims[k];
      rest /= dims[k];
      src += (first[k] + j * step[k]) * stride[k];
    }
    y.values[i] = x.values[static_cast<size_t>(src)];
  }
  return y;
}

// NumPy's broadcast of two dims (core/broadcast.h).
std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return broadcast_shape(Shape(a), Shape(b)).dims();
}

// For each element of a tensor of dims `x` broadcast to `dims` (broadcast_dims of x and some
// other), the element of x it reads.
std::vector<size_t> broadcast_sources(const std::vector<int64_t>& x,
                                      const std::vector<int64_t>& dims) {
  const size_t r = dims.size(), lead = r - x.size();
  std::vector<size_t> src(static_cast<size_t>(count(dims)));
  for (size_t i = 0; i < src.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), at = 0, stride = 1;
    for (size_t k = r; k-- > lead;) {
      const int64_t j = rest % dims[k];
      rest /= dims[k];
      const int64_t d = x[k - lead];
      if (d != 1) at += j * stride;
      stride *= d;
    }
    src[i] = static_cast<size_t>(at);
  }
  return src;
}

// ONNX's Expand: x broadcast against `shape` (both ways).
IntTensor expand(const IntTensor& x, const std::vector<int64_t>& shape) {
  for (int64_t d : shape) FRUGAL_CHECK(d >= 0, "expand to ", Shape(shape), ": a negative extent");
  IntTensor y{.dims = broadcast_dims(x.dims, shape)};
  for (size_t k : broadcast_sources(x.dims, y.dims)) y.values.push_back(x.values[k]);
  return y;
}

// ONNX's Tile: x's axis k repeated repeats[k] times (the copies one after another).
IntTensor tile(const IntTensor& x, const std::vector<int64_t>& repeats) {
  FRUGAL_CHECK(repeats.size() == x.dims.size(), "tile of ", Shape(x.dims), " by ", Shape(repeats),
               ": expected one repeat count per axis");
  IntTensor y{.dims = x.dims};
  for (size_t k = 0; k < repeats.size(); ++k) {
    FRUGAL_CHECK(repeats[k] >= 0 && !__builtin_mul_overflow(x.dims[k], repeats[k], &y.dims[k]),
                 "tile of ", Shape(x.dims), " by ", Shape(repeats), ": a repeat count below 0 or ",
                 "too large");
  }
  const int64_t size = count(y.dims);
  y.values.resize(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    int64_t rest = i, src = 0, stride = 1;
    for (size_t k = y.dims.size(); k-- > 0;) {
      src += (rest % y.dims[k]) % x.dims[k] * stride;
      rest /= y.dims[k];
      stride *= x.dims[k];
    }
    y.values[static_cast<size_t>(i)] = x.values[static_cast<size_t>(src)];
  }
  return y;
}

// ONNX's ScatterND without reduction: data with the slices `indices` (..., k) name replaced by
// `updates` (..., data's dims past k), later indices writing over earlier ones.
IntTensor scatter_nd(const IntTensor& data, const IntTensor& indices, const IntTensor& updates) {
  FRUGAL_CHECK(!indices.dims.empty(), "scatter_nd with scalar indices");
  const size_t k = static_cast<size_t>(indices.dims.back()), r = data.dims.size();
  FRUGAL_CHECK(k >= 1 && k <= r, "scatter_nd indices of last extent ", k, " into rank ", r);
  std::vector<int64_t> want(indices.dims.begin(), indices.dims.end() - 1);
  want.insert(want.end(), data.dims.begin() + static_cast<int64_t>(k), data.dims.end());
  FRUGAL_CHECK(updates.dims == want, "scatter_nd updates ", Shape(updates.dims), " where indices ",
               Shape(indices.dims), " into ", Shape(data.dims), " need ", Shape(want));
  const int64_t inner = product(data.dims, k, r);
  const int64_t tuples = product(indices.dims, 0, indices.dims.size() - 1);
  IntTensor y = data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (size_t a = 0; a < k; ++a) {
      const int64_t d = data.dims[a];
      int64_t i = indices.values[static_cast<size_t>(t) * k + a];
      FRUGAL_CHECK(i >= -d && i < d, "scatter_nd index ", i, " outside an axis of ", d);
      at = at * d + (i < 0 ? i + d : i);
    }
    std::copy_n(updates.values.begin() + t * inner, inner, y.values.begin() + at * inner);
  }
  return y;
}

}  // namespace

std::string IntTensor::str() const {
  std::ostringstream os;
  if (dims.size() > 1) os << Shape(dims);
  os << "(";
  for (int64_t i = 0; i < size(); ++i) {
    const auto k = static_cast<size_t>(i);
    os << (i ? "," : "");
    if (real)
      os << reals[k];
    else
      os << values[k];
  }
  os << ")";
  return os.str();
}

namespace {

// Whether `op` only moves elements (each output element is one of its operands'): such ops
// run on float tensors over their elements' indices (eval_int_node).
bool moves_elements(IntOp op) {
  switch (op) {
    case IntOp::gather:
    case IntOp::unsqueeze:
    case IntOp::squeeze:
    case IntOp::concat:
    case IntOp::reshape:
    case IntOp::slice:
    case IntOp::transpose:
    case IntOp::where:
    case IntOp::scatter_nd:
    case IntOp::expand:
    case IntOp::tile:
      return true;
    default:
      return false;
  }
}

// Whether operand i of an element-moving op is one it moves (the others are indices, shapes,
// axes or a condition, which must be integers).
bool moved_operand(IntOp op, size_t i) {
  switch (op) {
    case IntOp::concat:
      return true;
    case IntOp::where:
      return i >= 1;
    case IntOp::scatter_nd:
      return i != 1;
    default:  // gather, unsqueeze, squeeze, reshape, slice, transpose, expand, tile: the data
      return i == 0;
  }
}

// IntOp::reduce: x reduced over `axes` (every axis where there are none, unless
// noop_with_empty_axes: then x itself), the reduced axes kept as 1s where keepdims. Integer
// sums and products that overflow are errors, as are the max and min of no elements.
IntTensor reduce(const IntNode& n, const IntTensor& x, std::vector<int64_t> axes) {
  const auto kind = static_cast<IntReduction>(n.attrs.at(0));
  const bool keepdims = n.attrs.at(1) != 0;
  const size_t rank = x.dims.size();
  if (axes.empty()) {
    if (n.attrs.at(2) != 0) return x;
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(a));
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) reduced[static_cast<size_t>(axis_in(a, rank))] = true;
  IntTensor y{.real = x.real};
  std::vector<int64_t> kept(rank);  // y's dims with the reduced axes as 1s
  for (size_t a = 0; a < rank; ++a) {
    kept[a] = reduced[a] ? 1 : x.dims[a];
    if (!reduced[a] || keepdims) y.dims.push_back(kept[a]);
  }
  const auto size = static_cast<size_t>(count(kept));
  std::vector<bool> seen(size, false);
  std::vector<double> reals(size, kind == IntReduction::prod ? 1.0 : 0.0);
  std::vector<int64_t> ints(size, kind == IntReduction::prod ? 1 : 0);
  for (int64_t e = 0; e < x.size(); ++e) {
    int64_t rest = e, j = 0, stride = 1;  // e's index into y: its kept coordinates
    for (size_t a = rank; a-- > 0;) {
      const int64_t c = rest % x.dims[a];
      rest /= x.dims[a];
      if (!reduced[a]) j += c * stride;
      stride *= kept[a];
    }
    const auto k = static_cast<size_t>(j), i = static_cast<size_t>(e);
    const bool first = !seen[k];
    seen[k] = true;
    if (x.real) {
      const double v = x.reals[i];
      double& r = reals[k];
      r = kind == IntReduction::sum    ? r + v
          : kind == IntReduction::prod ? r * v
          : first                      ? v
          : kind == IntReduction::max  ? std::max(r, v)
                                       : std::min(r, v);
    } else {
      const int64_t v = x.values[i];
      int64_t& r = ints[k];
      if (kind == IntReduction::sum)
        FRUGAL_CHECK(!__builtin_add_overflow(r, v, &r), "ReduceSum overflows");
      else if (kind == IntReduction::prod)
        FRUGAL_CHECK(!__builtin_mul_overflow(r, v, &r), "ReduceProd overflows");
      else
        r = first ? v : kind == IntReduction::max ? std::max(r, v) : std::min(r, v);
    }
  }
  FRUGAL_CHECK(kind == IntReduction::sum || kind == IntReduction::prod ||
                   std::find(seen.begin(), seen.end(), false) == seen.end(),
               "the ", kind == IntReduction::max ? "max" : "min", " of no elements (dims ",
               Shape(x.dims), ")");
  if (x.real)
    y.reals = std::move(reals);
  else
    y.values = std::move(ints);
  return y;
}

// Whether IntOp::compare's comparison (attrs[0], a BinaryKind) holds of x and z.
template <typename T>
bool holds(const IntNode& n, T x, T z) {
  return binary_math::forward(static_cast<BinaryKind>(n.attrs.at(0)), x, z) != T(0);
}

double as_real(const IntTensor& t, size_t i) {
  return t.real ? t.reals[i] : static_cast<double>(t.values[i]);
}

// Float arithmetic (a real operand, or Cast to a float type): Add/Sub/Mul/Div/Mod/Pow and
// Equal, broadcast as numpy.
IntTensor eval_reals(const IntNode& n, const IntTensor& a, const IntTensor& b) {
  IntTensor y{.dims = broadcast_dims(a.dims, b.dims)};
  const std::vector<size_t> sa = broadcast_sources(a.dims, y.dims),
                            sb = broadcast_sources(b.dims, y.dims);
  const size_t size = sa.size();
  y.real = n.op != IntOp::compare;
  if (y.real)
    y.reals.resize(size);
  else
    y.values.resize(size);
  for (size_t i = 0; i < size; ++i) {
    const double x = as_real(a, sa[i]), z = as_real(b, sb[i]);
    if (n.op == IntOp::compare) {
      y.values[i] = holds(n, x, z) ? 1 : 0;
    } else if (n.op == IntOp::pow) {
      y.reals[i] = std::pow(x, z);
    } else if (n.op == IntOp::mod) {
      FRUGAL_CHECK(z != 0, "modulo ", x, " by 0");
      const double r = std::fmod(x, z);
      y.reals[i] = n.attrs.at(0) == 0 && r != 0 && (r < 0) != (z < 0) ? r + z : r;
    } else {
      switch (n.binary) {
        case BinaryKind::add:
          y.reals[i] = x + z;
          break;
        case BinaryKind::sub:
          y.reals[i] = x - z;
          break;
        case BinaryKind::mul:
          y.reals[i] = x * z;
          break;
        case BinaryKind::div:
          y.reals[i] = x / z;
          break;
        default:
          throw Error(detail::concat("'", binary_name(n.binary), "' over shape values"));
      }
    }
  }
  return y;
}

// UnaryKind k of v, in double.
double unary_of(UnaryKind k, double v) {
  switch (k) {
    case UnaryKind::ceil:
      return std::ceil(v);
    case UnaryKind::floor:
      return std::floor(v);
    case UnaryKind::round:  // halves to even, as ONNX's Round
      return std::nearbyint(v);
    case UnaryKind::sin:
      return std::sin(v);
    case UnaryKind::cos:
      return std::cos(v);
    case UnaryKind::sqrt:
      return std::sqrt(v);
    case UnaryKind::exp:
      return std::exp(v);
    case UnaryKind::log:
      return std::log(v);
    case UnaryKind::neg:
      return -v;
    case UnaryKind::abs:
      return std::fabs(v);
  }
  return v;
}

IntTensor eval_ints(const IntNode& n, const std::map<std::string, IntTensor>& env,
                    const std::vector<int64_t>* shape) {
  auto in = [&](size_t i) -> const IntTensor& {
    FRUGAL_CHECK(i < n.ints.size(), "an integer op with ", n.ints.size(),
                 " operands where it reads ", i + 1);
    auto it = env.find(n.ints[i]);
    FRUGAL_CHECK(it != env.end(), "integer operand '", n.ints[i], "' is not computed");
    return it->second;
  };
  // Arithmetic reads float operands; everything else reads integers (shapes, axes, indices,
  // conditions; moved float data reaches here as indices, eval_int_node).
  const bool reads_reals = n.op == IntOp::binary || n.op == IntOp::compare || n.op == IntOp::mod ||
                           n.op == IntOp::pow || n.op == IntOp::cast || n.op == IntOp::range ||
                           n.op == IntOp::shape_of || n.op == IntOp::unary || n.op == IntOp::clip ||
                           n.op == IntOp::cumsum || n.op == IntOp::reduce;
  for (size_t i = 0; !reads_reals && i < n.ints.size(); ++i)
    FRUGAL_CHECK(!in(i).real, "a float tensor ('", n.ints[i], "') where integers are read");
  switch (n.op) {
    case IntOp::shape_of: {
      const std::vector<int64_t>& d = shape ? *shape : in(0).dims;
      const auto r = static_cast<int64_t>(d.size());
      auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
      const int64_t b = clamp(n.attrs[0]), e = clamp(n.attrs[1]);
      IntTensor y{.dims = {std::max<int64_t>(0, e - b)}};
      if (e > b) y.values.assign(d.begin() + b, d.begin() + e);
      return y;
    }
    case IntOp::gather: {
      const IntTensor &x = in(0), &idx = in(1);
      FRUGAL_CHECK(!x.dims.empty(), "gather from a scalar");
      const auto a = static_cast<size_t>(axis_in(n.attrs.at(0), x.dims.size()));
      IntTensor y;
      y.dims.assign(x.dims.begin(), x.dims.begin() + static_cast<int64_t>(a));
      y.dims.insert(y.dims.end(), idx.dims.begin(), idx.dims.end());
      y.dims.insert(y.dims.end(), x.dims.begin() + static_cast<int64_t>(a) + 1, x.dims.end());
      count(y.dims);
      const int64_t outer = product(x.dims, 0, a), inner = product(x.dims, a + 1, x.dims.size());
      const int64_t d = x.dims[a];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i : idx.values) {
          FRUGAL_CHECK(i >= -d && i < d, "index ", i, " outside an axis of ", d);
          const int64_t at = (o * d + (i < 0 ? i + d : i)) * inner;
          y.values.insert(y.values.end(), x.values.begin() + at, x.values.begin() + at + inner);
        }
      return y;
    }
    case IntOp::unsqueeze: {
      IntTensor y = in(0);
      std::vector<int64_t> axes = axes_of(n, env);
      const size_t r = y.dims.size() + axes.size();
      for (int64_t& a : axes) a = axis_in(a, r);
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) {
        FRUGAL_CHECK(a <= static_cast<int64_t>(y.dims.size()), "unsqueeze axis ", a);
        y.dims.insert(y.dims.begin() + a, 1);
      }
      return y;
    }
    case IntOp::squeeze: {
      IntTensor y = in(0);
      std::vector<int64_t> axes = axes_of(n, env);
      for (int64_t& a : axes) a = axis_in(a, y.dims.size());
      std::vector<int64_t> dims;
      for (size_t k = 0; k < y.dims.size(); ++k) {
        const bool named = std::find(axes.begin(), axes.end(), int64_t(k)) != axes.end();
        if (named) FRUGAL_CHECK(y.dims[k] == 1, "squeeze of axis ", k, " of extent ", y.dims[k]);
        if (!(named || (axes.empty() && y.dims[k] == 1))) dims.push_back(y.dims[k]);
      }
      y.dims = dims;
      return y;
    }
    case IntOp::concat: {
      const IntTensor& first = in(0);
      FRUGAL_CHECK(!first.dims.empty(), "concat of scalars");
      const auto a = static_cast<size_t>(axis_in(n.attrs.at(0), first.dims.size()));
      IntTensor y{.dims = first.dims};
      y.dims[a] = 0;
      for (size_t i = 0; i < n.ints.size(); ++i) {
        const IntTensor& p = in(i);
        bool fits = p.dims.size() == first.dims.size();
        for (size_t k = 0; fits && k < p.dims.size(); ++k)
          fits = k == a || p.dims[k] == first.dims[k];
        FRUGAL_CHECK(fits, "concat of ", p.str(), " and ", first.str());
        y.dims[a] += p.dims[a];
      }
      const int64_t outer = product(first.dims, 0, a);
      for (int64_t o = 0; o < outer; ++o)
        for (size_t i = 0; i < n.ints.size(); ++i) {
          const IntTensor& p = in(i);
          const int64_t block = product(p.dims, a, p.dims.size());
          y.values.insert(y.values.end(), p.values.begin() + o * block,
                          p.values.begin() + (o + 1) * block);
        }
      count(y.dims);
      return y;
    }
    case IntOp::where: {  // the three operands broadcast as numpy
      const IntTensor &c = in(0), &a = in(1), &b = in(2);
      IntTensor y{.dims = broadcast_dims(broadcast_dims(c.dims, a.dims), b.dims)};
      const std::vector<size_t> sc = broadcast_sources(c.dims, y.dims),
                                sa = broadcast_sources(a.dims, y.dims),
                                sb = broadcast_sources(b.dims, y.dims);
      for (size_t i = 0; i < sc.size(); ++i)
        y.values.push_back(c.values[sc[i]] != 0 ? a.values[sa[i]] : b.values[sb[i]]);
      return y;
    }
    case IntOp::compare:
    case IntOp::mod:
    case IntOp::pow:
    case IntOp::binary: {
      const IntTensor &a = in(0), &b = in(1);
      if (a.real || b.real) return eval_reals(n, a, b);
      IntTensor y{.dims = broadcast_dims(a.dims, b.dims)};
      const std::vector<size_t> sa = broadcast_sources(a.dims, y.dims),
                                sb = broadcast_sources(b.dims, y.dims);
      y.values.resize(sa.size());
      for (size_t i = 0; i < y.values.size(); ++i) {
        const int64_t x = a.values[sa[i]], z = b.values[sb[i]];
        if (n.op == IntOp::compare) {
          y.values[i] = holds(n, x, z) ? 1 : 0;
          continue;
        }
        if (n.op == IntOp::pow) {  // by a whole exponent: repeated products
          FRUGAL_CHECK(z >= 0 && z < 64, "integer power ", x, " ** ", z);
          int64_t v = 1;
          for (int64_t k = 0; k < z; ++k)
            FRUGAL_CHECK(!__builtin_mul_overflow(v, x, &v), "integer power ", x, " ** ", z,
                         " overflows");
          y.values[i] = v;
          continue;
        }
        if (n.op == IntOp::mod) {  // C's remainder, moved to the divisor's sign unless fmod
          FRUGAL_CHECK(z != 0, "integer modulo ", x, " by 0");
          const int64_t r = z == -1 ? 0 : x % z;
          y.values[i] = n.attrs.at(0) == 0 && r != 0 && (r < 0) != (z < 0) ? r + z : r;
          continue;
        }
        int64_t& v = y.values[i];
        bool overflow = false;
        switch (n.binary) {
          case BinaryKind::add:
            overflow = __builtin_add_overflow(x, z, &v);
            break;
          case BinaryKind::sub:
            overflow = __builtin_sub_overflow(x, z, &v);
            break;
          case BinaryKind::mul:
            overflow = __builtin_mul_overflow(x, z, &v);
            break;
          case BinaryKind::div:
            FRUGAL_CHECK(z != 0 && !(x == INT64_MIN && z == -1), "integer division ", x, " / ", z);
            v = x / z;
            break;
          default:
            throw Error(detail::concat("'", binary_name(n.binary), "' over shape values"));
        }
        FRUGAL_CHECK(!overflow, "integer arithmetic on ", x, " and ", z, " overflows");
      }
      return y;
    }
    case IntOp::cast: {
      const IntTensor& x = in(0);
      const bool to_bool = !n.attrs.empty() && n.attrs[0] != 0;
      if (x.real == n.real && !to_bool) return x;
      IntTensor y{.dims = x.dims};
      y.real = n.real;
      for (int64_t i = 0; i < x.size(); ++i) {
        const auto k = static_cast<size_t>(i);
        if (n.real) {
          y.reals.push_back(static_cast<double>(x.values[k]));
        } else if (to_bool) {
          y.values.push_back(as_real(x, k) != 0 ? 1 : 0);
        } else {  // toward zero, as ONNX's Cast
          const double v = x.reals[k];
          FRUGAL_CHECK(std::isfinite(v) && std::fabs(v) < 9.2e18, "cast of ", v, " to an integer");
          y.values.push_back(static_cast<int64_t>(v));
        }
      }
      return y;
    }
    case IntOp::constant_of_shape: {
      IntTensor y{.dims = in(0).values};
      const auto size = static_cast<size_t>(count(y.dims));
      y.real = n.real;
      if (n.real)
        y.reals.assign(size, n.real_value);
      else
        y.values.assign(size, n.attrs.at(0));
      return y;
    }
    case IntOp::range: {
      const IntTensor &start = in(0), &limit = in(1), &delta = in(2);
      for (const IntTensor* t : {&start, &limit, &delta})
        FRUGAL_CHECK(t->size() == 1, "range over ", t->str(), ": expected single values");
      const double b = as_real(start, 0), e = as_real(limit, 0), d = as_real(delta, 0);
      FRUGAL_CHECK(d != 0, "range with delta 0");
      const double steps = std::max(std::ceil((e - b) / d), 0.0);
      FRUGAL_CHECK(steps <= static_cast<double>(kMaxIntElements), "range of ", steps,
                   " elements is too large (more than ", kMaxIntElements, ")");
      IntTensor y{.dims = {static_cast<int64_t>(steps)}};
      y.real = start.real || limit.real || delta.real;
      for (int64_t i = 0; i < y.dims[0]; ++i) {
        if (y.real)
          y.reals.push_back(b + static_cast<double>(i) * d);
        else
          y.values.push_back(start.values[0] + i * delta.values[0]);
      }
      return y;
    }
    case IntOp::logical_not: {
      IntTensor y = in(0);
      for (int64_t& v : y.values) v = v == 0 ? 1 : 0;
      return y;
    }
    case IntOp::unary: {
      const auto kind = static_cast<UnaryKind>(n.attrs.at(0));
      const IntTensor& x = in(0);
      if (!x.real && unary_keeps_integers(kind)) {  // Ceil, Floor and Round: x itself
        IntTensor y = x;
        if (kind == UnaryKind::neg || kind == UnaryKind::abs)
          for (int64_t& v : y.values) {
            FRUGAL_CHECK(v != INT64_MIN, "integer ", v, " negated overflows");
            v = kind == UnaryKind::neg || v < 0 ? -v : v;
          }
        return y;
      }
      IntTensor y{.dims = x.dims, .real = true};
      for (int64_t i = 0; i < x.size(); ++i)
        y.reals.push_back(unary_of(kind, as_real(x, static_cast<size_t>(i))));
      return y;
    }
    case IntOp::cumsum: {  // running sums along one axis (EdgeNeXt's positions: ones summed)
      const IntTensor &x = in(0), &axis = in(1);
      FRUGAL_CHECK(!axis.real && axis.size() == 1, "CumSum axis ", axis.str(),
                   ": expected one integer");
      const auto a = static_cast<size_t>(axis_in(axis.values[0], x.dims.size()));
      const bool exclusive = n.attrs.at(0) != 0, reverse = n.attrs.at(1) != 0;
      const int64_t outer = product(x.dims, 0, a), extent = x.dims[a],
                    inner = product(x.dims, a + 1, x.dims.size());
      IntTensor y = x;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double real_sum = 0;
          int64_t int_sum = 0;
          for (int64_t s = 0; s < extent; ++s) {
            const int64_t j = reverse ? extent - 1 - s : s;
            const auto k = static_cast<size_t>((o * extent + j) * inner + i);
            if (x.real) {
              const double v = x.reals[k];
              y.reals[k] = exclusive ? real_sum : real_sum + v;
              real_sum += v;
            } else {
              const int64_t v = x.values[k];
              int64_t next = 0;
              FRUGAL_CHECK(!__builtin_add_overflow(int_sum, v, &next), "CumSum overflows");
              y.values[k] = exclusive ? int_sum : next;
              int_sum = next;
            }
          }
        }
      return y;
    }
    case IntOp::clip: {  // bounds of one element each, as ONNX's Clip (opset 11 on)
      IntTensor y = in(0);
      size_t next = 1;
      for (int side = 0; side < 2; ++side) {
        if (n.attrs.at(static_cast<size_t>(side)) == 0) continue;
        const IntTensor& bound = in(next++);
        FRUGAL_CHECK(bound.size() == 1, "Clip bound ", bound.str(), ": expected one value");
        if (bound.real && !y.real) {  // an integer clipped by a float bound becomes a float
          y.reals.assign(y.values.begin(), y.values.end());
          y.values.clear();
          y.real = true;
        }
        for (int64_t i = 0; i < y.size(); ++i) {
          const auto k = static_cast<size_t>(i);
          if (y.real) {
            const double b = as_real(bound, 0);
            y.reals[k] = side == 0 ? std::max(y.reals[k], b) : std::min(y.reals[k], b);
          } else {
            const int64_t b = bound.values[0];
            y.values[k] = side == 0 ? std::max(y.values[k], b) : std::min(y.values[k], b);
          }
        }
      }
      return y;
    }
    case IntOp::scatter_nd:
      return scatter_nd(in(0), in(1), in(2));
    case IntOp::expand:
      return expand(in(0), in(1).values);
    case IntOp::tile:
      return tile(in(0), in(1).values);
    case IntOp::reshape: {
      IntTensor y = in(0);
      y.dims = resolve_reshape(Shape(in(0).dims), in(1).values, n.attrs.at(0) != 0).dims();
      return y;
    }
    case IntOp::slice:
      return slice(in(0), in(1).values, in(2).values,
                   n.ints.size() > 3 ? in(3).values : std::vector<int64_t>{},
                   n.ints.size() > 4 ? in(4).values : std::vector<int64_t>{});
    case IntOp::transpose:
      return transpose(in(0), n.attrs);
    case IntOp::reduce:
      FRUGAL_CHECK(n.ints.size() == 1 || !in(1).real, "reduction axes ", in(1).str(),
                   ": expected integers");
      return reduce(n, in(0),
                    n.ints.size() > 1 ? in(1).values
                                      : std::vector<int64_t>(n.attrs.begin() + 3, n.attrs.end()));
  }
  throw Error("unknown integer op");
}

}  // namespace

Tensor host_tensor(const IntTensor& t, DType dtype) {
  Tensor y = Tensor::empty(Shape(t.dims), dtype);
  for (int64_t i = 0; i < t.size(); ++i) {
    const double v = as_real(t, static_cast<size_t>(i));
    if (dtype == DType::f64)
      y.data<double>()[i] = v;
    else
      y.data<float>()[i] = static_cast<float>(v);
  }
  return y;
}

IntTensor eval_int_node(const IntNode& n, const std::map<std::string, IntTensor>& env,
                        const std::vector<int64_t>* shape) {
  auto operand = [&](size_t i) -> const IntTensor& {
    auto it = env.find(n.ints[i]);
    FRUGAL_CHECK(it != env.end(), "integer operand '", n.ints[i], "' is not computed");
    return it->second;
  };
  bool moves_reals = false;
  if (moves_elements(n.op))
    for (size_t i = 0; i < n.ints.size(); ++i)
      moves_reals = moves_reals || (moved_operand(n.op, i) && operand(i).real);
  if (!moves_reals) return eval_ints(n, env, shape);
  // Float data: the op runs over its elements' indices into one pool (integer data joining
  // them converted), then each output index is replaced by its element.
  std::map<std::string, IntTensor> indices;
  std::vector<double> pool;
  for (size_t i = 0; i < n.ints.size(); ++i) {
    if (!moved_operand(n.op, i) || indices.count(n.ints[i])) continue;
    const IntTensor& t = operand(i);
    IntTensor k{.dims = t.dims};
    for (int64_t e = 0; e < t.size(); ++e) {
      k.values.push_back(static_cast<int64_t>(pool.size()));
      pool.push_back(as_real(t, static_cast<size_t>(e)));
    }
    indices[n.ints[i]] = std::move(k);
  }
  for (size_t i = 0; i < n.ints.size(); ++i) {
    if (moved_operand(n.op, i)) continue;
    FRUGAL_CHECK(!indices.count(n.ints[i]), "operand '", n.ints[i],
                 "' is both moved and read as indices");
    indices.try_emplace(n.ints[i], operand(i));
  }
  IntTensor y = eval_ints(n, indices, shape);
  y.real = true;
  for (int64_t k : y.values) y.reals.push_back(pool[static_cast<size_t>(k)]);
  y.values.clear();
  return y;
}

}  // namespace frugal
