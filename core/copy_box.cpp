// Copy boxes: building, simplifying and printing them.
#include "core/copy_box.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace frugal {

int64_t CopyBox::numel() const {
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) n *= size[static_cast<size_t>(k)];
  return n;
}

CopyBox CopyBox::simplified() const {
  CopyBox s;
  s.x_offset = x_offset, s.y_offset = y_offset;
  if (numel() == 0) {
    s.rank = 1;
    return s;  // size[0] == 0: nothing to copy
  }
  for (int k = 0; k < rank; ++k) {
    const auto u = static_cast<size_t>(k);
    if (size[u] == 1) continue;
    if (s.rank > 0) {
      const auto p = static_cast<size_t>(s.rank - 1);
      // The previous axis steps over exactly this one in both tensors: merge them.
      if (s.x_stride[p] == x_stride[u] * size[u] && s.y_stride[p] == y_stride[u] * size[u]) {
        s.size[p] *= size[u];
        s.x_stride[p] = x_stride[u];
        s.y_stride[p] = y_stride[u];
        continue;
      }
    }
    const auto q = static_cast<size_t>(s.rank++);
    s.size[q] = size[u], s.x_stride[q] = x_stride[u], s.y_stride[q] = y_stride[u];
  }
  if (s.rank == 0) {  // one element
    s.rank = 1;
    s.size[0] = 1, s.x_stride[0] = 1, s.y_stride[0] = 1;
  }
  return s;
}

std::string CopyBox::str() const {
  std::ostringstream os;
  os << "box [";
  for (int k = 0; k < rank; ++k) os << (k ? "," : "") << size[static_cast<size_t>(k)];
  os << "] x strides [";
  for (int k = 0; k < rank; ++k) os << (k ? "," : "") << x_stride[static_cast<size_t>(k)];
  os << "] +" << x_offset << ", y strides [";
  for (int k = 0; k < rank; ++k) os << (k ? "," : "") << y_stride[static_cast<size_t>(k)];
  os << "] +" << y_offset;
  return os.str();
}

std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> st(static_cast<size_t>(s.rank()), 1);
  for (int k = s.rank() - 2; k >= 0; --k)
    st[static_cast<size_t>(k)] = st[static_cast<size_t>(k + 1)] * s[k + 1];
  return st;
}

namespace {
void check_rank(const char* what, const Shape& x) {
  FRUGAL_CHECK(x.rank() >= 1 && x.rank() <= CopyBox::kMaxRank, what, ": ", x, " has rank ",
               x.rank(), "; data movement takes ranks 1 to ", CopyBox::kMaxRank);
}
void check_perm(const Shape& x, std::span<const int64_t> perm) {
  check_rank("transpose", x);
  std::vector<bool> seen(static_cast<size_t>(x.rank()), false);
  bool ok = static_cast<int>(perm.size()) == x.rank();
  for (int64_t p : perm) {
    ok = ok && p >= 0 && p < x.rank() && !seen[static_cast<size_t>(p)];
    if (ok) seen[static_cast<size_t>(p)] = true;
  }
  if (!ok) {
    std::ostringstream os;
    for (size_t i = 0; i < perm.size(); ++i) os << (i ? "," : "") << perm[i];
    throw Error("transpose: perm (" + os.str() + ") is not a permutation of the " +
                std::to_string(x.rank()) + " axes of " + x.str());
  }
}
}  // namespace

Shape permuted_shape(const Shape& x, std::span<const int64_t> perm) {
  check_perm(x, perm);
  std::vector<int64_t> d;
  for (int64_t p : perm) d.push_back(x[static_cast<int>(p)]);
  return Shape(d);
}

CopyBox permute_box(const Shape& x, std::span<const int64_t> perm) {
  const Shape y = permuted_shape(x, perm);
  const std::vector<int64_t> xs = row_strides(x), ys = row_strides(y);
  CopyBox b;
  b.rank = x.rank();
  for (size_t k = 0; k < perm.size(); ++k) {
    b.size[k] = y[static_cast<int>(k)];
    b.x_stride[k] = xs[static_cast<size_t>(perm[k])];
    b.y_stride[k] = ys[k];
  }
  return b;
}

CopyBox shifted_box(const Shape& x, const Shape& y, std::span<const int64_t> shift) {
  check_rank("copy", x);
  FRUGAL_CHECK(x.rank() == y.rank() && static_cast<int>(shift.size()) == x.rank(), "copy: ", x,
               " and ", y, " with ", shift.size(), " shifts");
  const std::vector<int64_t> xs = row_strides(x), ys = row_strides(y);
  CopyBox b;
  b.rank = x.rank();
  for (int k = 0; k < x.rank(); ++k) {
    const auto u = static_cast<size_t>(k);
    // y's j reads x's j + shift: j from max(0, -shift) to min(Y, X - shift).
    const int64_t lo = std::max<int64_t>(0, -shift[u]);
    const int64_t hi = std::min<int64_t>(y[k], x[k] - shift[u]);
    b.size[u] = std::max<int64_t>(0, hi - lo);
    b.x_stride[u] = xs[u], b.y_stride[u] = ys[u];
    b.x_offset += (lo + shift[u]) * xs[u];
    b.y_offset += lo * ys[u];
  }
  if (b.numel() == 0) b.x_offset = b.y_offset = 0;
  return b;
}

}  // namespace frugal
