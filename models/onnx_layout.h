// Values along an axis 0 that is not the batch's: a weight's (it has none), one a Transpose or
// torch.stack put there, an LSTM's steps and directions. frugal's concat, slice and split work
// on the other axes; these go through (1, ...) layouts, whose bytes are the same.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

// The parts joined along axis 0: (sum of their first extents, the rest), every other extent
// equal, else throws naming the two shapes.
Value join_leading(std::span<const Value> parts);
// x[begin:end:step] along axis 0 (begin and end already in range, as slice takes them).
Value slice_leading(Value x, int64_t begin, int64_t end, int64_t step = 1);
// v's pieces of extent 1 along axis 0, each reshaped to `each`: one split.
std::vector<Value> split_leading(Value v, const Shape& each);

}  // namespace frugal
