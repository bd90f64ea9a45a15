// What the 3-D convolution tests share: the depth window with the (H, W) one, and a network
// body of one value.
#pragma once

#include <vector>

#include "autograd/tape.h"
#include "layers/conv3d_planes.h"

namespace frugal::testing {

inline Conv3dParams params(int64_t stride_d, int64_t pad_front, int64_t pad_back,
                           int64_t dilation_d, Conv2dParams plane) {
  return {.stride_d = stride_d,
          .pad_front = pad_front,
          .pad_back = pad_back,
          .dilation_d = dilation_d,
          .plane = plane};
}

inline std::vector<Value> one(Value v) {
  return {v};
}

}  // namespace frugal::testing
