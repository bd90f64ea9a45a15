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
    default:
      return "div";
  }
}

Broadcast broadcast_of(const Shape& a, const Shape& b, Shape* out) {
  FRUGAL_CHECK(a.rank() >= 1 && a.rank() <= 4 && b.rank() >= 1 && b.rank() <= 4, "broadcast of ", a,
               " and ", b, ": ranks 1 to 4 only");
  Broadcast g;
  int64_t sa = 1, sb = 1;  // the operands' element strides so far, innermost axis first
  std::vector<int64_t> dims(4);
  for (int d = 3; d >= 0; --d) {
    const int ia = d - (4 - a.rank()), ib = d - (4 - b.rank());
    const int64_t na = ia >= 0 ? a[ia] : 1, nb = ib >= 0 ? b[ib] : 1;
    FRUGAL_CHECK(na == nb || na == 1 || nb == 1, "shapes ", a, " and ", b,
                 " do not broadcast (axis ", d - 4, ": ", na, " against ", nb, ")");
    g.size[d] = na == 1 ? nb : na;
    g.a[d] = na == 1 ? 0 : sa;
    g.b[d] = nb == 1 ? 0 : sb;
    sa *= na, sb *= nb;
    dims[static_cast<size_t>(d)] = g.size[d];
  }
  const int rank = std::max(a.rank(), b.rank());
  *out = Shape(std::vector<int64_t>(dims.end() - rank, dims.end()));
  return g;
}

}  // namespace frugal
