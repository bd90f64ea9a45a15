// VGG (Simonyan & Zisserman): configurations A (VGG-11), D (VGG-16) and E (VGG-19) of 3 x 3
// convolutions and 2 x 2 max-pools, then a Threshold(0, 1e-6) classifier with LogSoftMax
// output, as optnet measured VGG-A (reference/networks.md).
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

enum class VggConfig { a, d, e };

// images (N,3,224,224) -> log-probabilities (N,classes). Parameters at 1000 classes: A
// 132,863,336; D 138,357,544; E 143,667,240. Named "features/conv2d0.weight", ...,
// "classifier/linear2.bias". config.dropout puts Dropout(0.5) after the first two linears.
Value vgg(Value images, VggConfig which, const ModelConfig& config = {});

}  // namespace frugal
