// ScatterND into an activation, as PyTorch exports an assignment into a slice (y[:, 2::3] =
// y[:, 2::3].sigmoid(): YOLOv8-pose's keypoints), recorded as the copy it is.
#pragma once

#include "autograd/tape.h"
#include "models/onnx_ints.h"

namespace frugal {

// ScatterND into an activation (reduction none): data (N, ...) with the slices `indices`
// (..., k) name replaced by `updates` (indices' dims but the last, then data's past k), later
// indices over earlier ones. Each sample's slices must come from its own updates (indices' axis
// 0 the batch, each of its tuples naming that sample) at the same positions in every sample, as
// an assignment into a slice writes them (y[:, 2::3] = ...). Recorded as the copy it is: a
// gather, along the flattened sample, of the columns of [data | updates] each output element
// comes from, so every element is one of the two exactly and its gradient goes back there.
Value record_scatter(const IntTensor& indices, Value data, Value updates);

}  // namespace frugal
