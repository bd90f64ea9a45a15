// SmallCNN: the first bundled model, a two-block convolutional net for 28x28 grey images
// (Fashion-MNIST) that trains to ~90% test accuracy in one epoch on a laptop CPU.
#pragma once

#include "autograd/tape.h"

namespace frugal {

// images (N,1,H,W) -> logits (N,10). Two blocks of conv 3x3 pad 1, batch norm, ReLU and
// 2x2 max pooling (32 then 64 channels), then one linear layer. H and W must be multiples of 4.
// Parameters are named "block1/conv2d0.weight", ..., "classifier/linear0.weight".
Value small_cnn(Value images, int classes = 10);

}  // namespace frugal
