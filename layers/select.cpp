// Comparisons and selection (layers/select.h): recorded as the broadcast BinaryOps of
// layers/binary.h, whose kernels hold the element formulas (core/broadcast.h).
#include "layers/select.h"

#include "core/error.h"
#include "layers/binary.h"
#include "layers/constant.h"

namespace frugal {

Value compare(BinaryKind kind, Value a, Value b, std::source_location where) {
  FRUGAL_CHECK(binary_compares(kind), "compare: '", binary_name(kind), "' is not a comparison");
  return binary(kind, a, b, where);
}

Value logical_not(Value m, std::source_location where) {
  Tensor zero = Tensor::zeros(Shape{1}, m.dtype());
  return binary(BinaryKind::equal, m, constant(m.tape(), std::move(zero), where), where);
}

Value select(Value c, Value a, Value b, std::source_location where) {
  // Shapes first, so an error names all three rather than one of the pieces.
  try {
    broadcast_shape(broadcast_shape(c.shape(), a.shape()), b.shape());
  } catch (const Error& e) {
    throw Error(detail::concat("where: condition ", c.shape(), ", a ", a.shape(), ", b ", b.shape(),
                               ": ", e.what()));
  }
  const Value kept = binary(BinaryKind::mask, a, c, where);
  const Value other = binary(BinaryKind::unmask, b, c, where);
  return binary(BinaryKind::add, kept, other, where);
}

}  // namespace frugal
