// Broadcast shapes and operation names (core/broadcast.h).
#include "core/broadcast.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace frugal {

const char* binary_name(BinaryKind k) {
  switch (k) {
    case BinaryKind::add:
      return "add";
    case BinaryKind::sub:
      return "sub";
    case BinaryKind::mul:
      return "mul";
    case BinaryKind::div:
      return "div";
    case BinaryKind::mask:
      return "mask";
    case BinaryKind::unmask:
      return "unmask";
    case BinaryKind::greater:
      return "greater";
    case BinaryKind::less:
      return "less";
    case BinaryKind::greater_equal:
      return "greater_equal";
    case BinaryKind::less_equal:
      return "less_equal";
    case BinaryKind::equal:
      return "equal";
    case BinaryKind::logical_or:
      return "or";
    case BinaryKind::maximum:
      return "maximum";
    case BinaryKind::minimum:
      return "minimum";
    case BinaryKind::pow:
      return "pow";
    default:
      return "xor";
  }
}

namespace {
// s's extent at axis d of a rank-`rank` broadcast (s right-aligned, 1 in front of it).
int64_t aligned(const Shape& s, int rank, int d) {
  const int i = d - (rank - s.rank());
  return i >= 0 ? s[i] : 1;
}
}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b) {
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> size(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const int64_t na = aligned(a, rank, d), nb = aligned(b, rank, d);
    FRUGAL_CHECK(na == nb || na == 1 || nb == 1, "shapes ", a, " and ", b,
                 " do not broadcast (axis ", d - rank, ": ", na, " against ", nb, ")");
    size[static_cast<size_t>(d)] = na == 1 ? nb : na;
  }
  return Shape(size);
}

Broadcast broadcast_of(const Shape& a, const Shape& b, Shape* out) {
  FRUGAL_CHECK(a.rank() >= 1 && b.rank() >= 1, "broadcast of ", a, " and ", b,
               ": ranks 1 and up only");
  *out = broadcast_shape(a, b);
  const int rank = out->rank();
  // Every axis (shapes right-aligned): the output's size and each operand's own.
  std::vector<int64_t> size = out->dims(), na(size.size()), nb(size.size());
  for (int d = 0; d < rank; ++d) {
    na[static_cast<size_t>(d)] = aligned(a, rank, d);
    nb[static_cast<size_t>(d)] = aligned(b, rank, d);
  }
  if (rank > 4) {
    // Past four axes (a mask over windows and heads, (1, nW, 1, 49, 49)): axes of extent 1
    // dropped and neighbours that both operands read alike merged, which keeps the row-major
    // order of every element; four axes at most must remain.
    std::vector<int64_t> ms, ma, mb;
    for (size_t k = 0; k < size.size(); ++k) {
      if (size[k] == 1) continue;
      if (!ms.empty() && (ma.back() == 1) == (na[k] == 1) && (mb.back() == 1) == (nb[k] == 1)) {
        ms.back() *= size[k], ma.back() *= na[k], mb.back() *= nb[k];
        continue;
      }
      ms.push_back(size[k]), ma.push_back(na[k]), mb.push_back(nb[k]);
    }
    FRUGAL_CHECK(ms.size() <= 4, "broadcast of ", a, " and ", b,
                 ": more than four axes remain after merging those read alike");
    if (ms.empty()) ms = ma = mb = {1};
    size = ms, na = ma, nb = mb;
  }
  Broadcast g;
  int64_t sa = 1, sb = 1;  // the operands' element strides so far, innermost axis first
  const auto r = static_cast<int>(size.size());
  for (int d = 3; d >= 0; --d) {
    const int k = d - (4 - r);
    if (k < 0) break;
    const auto i = static_cast<size_t>(k);
    g.size[d] = size[i];
    g.a[d] = na[i] == 1 ? 0 : sa;
    g.b[d] = nb[i] == 1 ? 0 : sb;
    sa *= na[i], sb *= nb[i];
  }
  return g;
}

}  // namespace frugal
