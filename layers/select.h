// Comparisons and selection over activations (ONNX's Greater, Less, GreaterOrEqual, LessOrEqual,
// Equal, Not, And, Or, Xor and Where; PyTorch's x > 0, masked_fill, torch.where), broadcast as
// Mul is.
// A comparison is a BinaryOp whose output is 1 where it holds and 0 elsewhere, in its operands'
// float type, with no gradient: frugal's bools are such masks. where(c, a, b) is two BinaryOps
// and a sum, mask(a, c) + unmask(b, c), the masks writing -0 where they drop an element, so every
// output element is exactly a's or b's (infinities, NaNs and signed zeros included); the
// gradient reaches a where c holds and b where it does not, c none.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/broadcast.h"

namespace frugal {

// 1 where `a kind b`, else 0 (kind a comparison or logical op of BinaryKind: binary_compares);
// throws naming both shapes where they do not broadcast, and for a kind that does not compare.
Value compare(BinaryKind kind, Value a, Value b,
              std::source_location where = std::source_location::current());
// 1 where m is 0, else 0 (a mask's complement).
Value logical_not(Value m, std::source_location where = std::source_location::current());
// a where c is non-zero, b elsewhere: the three broadcast together.
Value select(Value c, Value a, Value b,
             std::source_location where = std::source_location::current());

}  // namespace frugal
