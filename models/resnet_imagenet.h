// ResNets for 224 x 224 images (He et al. 2015, torchvision's layout): ResNet-18/34 with
// basic blocks, ResNet-50/101/152 with bottlenecks, projection shortcuts where the shape
// changes.
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// ResNet-depth, depth in {18, 34, 50, 101, 152}: stem conv 7x7 s2 + BN + ReLU + max-pool 3
// s2 p1; four stages (64, 128, 256, 512 wide; bottleneck outputs x 4; stride 2 from stage 2
// on, in the 3x3 conv); 1x1 conv + BN shortcut where the shape changes; global average pool
// (7 x 7 at 224 input), linear. images (N,3,H,W) -> logits (N,classes). Convs have no bias
// (BN follows each) unless config.batch_norm is false. Parameters at 1000 classes:
// ResNet-18 11,689,512; ResNet-50 25,557,032 (as torchvision). Names as
// "stage1/block0/conv1.weight", "stage2/block0/shortcut/conv.weight", "head/linear.bias".
Value resnet_imagenet(Value images, int depth, const ModelConfig& config = {});

}  // namespace frugal
