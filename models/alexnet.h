// AlexNet as optnet measured it: two identical convolutional towers (no LRN, no cross-tower
// connection) concatenated along channels, then a three-layer classifier with Torch's
// Threshold(0, 1e-6) as its nonlinearity and LogSoftMax output (reference/networks.md).
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// images (N,3,224,224) -> log-probabilities (N,classes), 60,522,856 parameters at 1000
// classes. Parameters are named "features/tower0/conv2d0.weight", ...,
// "classifier/linear2.bias". config.dropout puts Dropout(0.5) before the first two linears.
Value alexnet(Value images, const ModelConfig& config = {});

}  // namespace frugal
