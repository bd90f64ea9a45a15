// Evaluating the integer shape arithmetic of an ONNX graph (models/onnx_ints.h).
#include "models/onnx_ints.h"

#include <algorithm>
#include <climits>
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
  IntTensor y{dims, std::vector<int64_t>(static_cast<size_t>(count(dims)))};
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

}  // namespace

std::string IntTensor::str() const {
  std::ostringstream os;
  if (dims.size() > 1) os << Shape(dims);
  os << "(";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? "," : "") << values[i];
  os << ")";
  return os.str();
}

IntTensor eval_int_node(const IntNode& n, const std::map<std::string, IntTensor>& env,
                        const std::vector<int64_t>* shape) {
  auto in = [&](size_t i) -> const IntTensor& {
    FRUGAL_CHECK(i < n.ints.size(), "an integer op with ", n.ints.size(),
                 " operands where it reads ", i + 1);
    auto it = env.find(n.ints[i]);
    FRUGAL_CHECK(it != env.end(), "integer operand '", n.ints[i], "' is not computed");
    return it->second;
  };
  switch (n.op) {
    case IntOp::shape_of: {
      const std::vector<int64_t>& d = shape ? *shape : in(0).dims;
      const auto r = static_cast<int64_t>(d.size());
      auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
      const int64_t b = clamp(n.attrs[0]), e = clamp(n.attrs[1]);
      IntTensor y{{std::max<int64_t>(0, e - b)}, {}};
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
      IntTensor y{first.dims, {}};
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
    case IntOp::where: {
      // Operands of one shape, or single values that stand for every element.
      const IntTensor &c = in(0), &a = in(1), &b = in(2);
      IntTensor y = c;
      for (const IntTensor* t : {&a, &b})
        if (t->values.size() > y.values.size() ||
            (t->values.size() == y.values.size() && t->dims.size() > y.dims.size()))
          y = *t;
      for (const IntTensor* t : {&c, &a, &b})
        FRUGAL_CHECK(t->dims == y.dims || t->values.size() == 1, "where over ", c.str(), ", ",
                     a.str(), " and ", b.str(), ": operands that do not broadcast");
      auto at = [](const IntTensor& t, size_t i) { return t.values[t.values.size() == 1 ? 0 : i]; };
      for (size_t i = 0; i < y.values.size(); ++i)
        y.values[i] = at(c, i) != 0 ? at(a, i) : at(b, i);
      return y;
    }
    case IntOp::equal:
    case IntOp::binary: {
      const IntTensor &a = in(0), &b = in(1);
      const bool a_one = a.values.size() == 1, b_one = b.values.size() == 1;
      FRUGAL_CHECK(a.dims == b.dims || a_one || b_one, "operands ", a.str(), " and ", b.str(),
                   " do not broadcast");
      IntTensor y = a_one && !b_one ? b : a;
      if (a_one && b_one && b.dims.size() > a.dims.size()) y.dims = b.dims;
      for (size_t i = 0; i < y.values.size(); ++i) {
        const int64_t x = a.values[a_one ? 0 : i], z = b.values[b_one ? 0 : i];
        if (n.op == IntOp::equal) {
          y.values[i] = x == z ? 1 : 0;
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
        }
        FRUGAL_CHECK(!overflow, "integer arithmetic on ", x, " and ", z, " overflows");
      }
      return y;
    }
    case IntOp::cast:
      return in(0);
    case IntOp::constant_of_shape: {
      IntTensor y{in(0).values, {}};
      y.values.assign(static_cast<size_t>(count(y.dims)), n.attrs.at(0));
      return y;
    }
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
  }
  throw Error("unknown integer op");
}

}  // namespace frugal
