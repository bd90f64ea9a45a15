// DenseNets (Huang et al. 2017), the BC variant (1x1 bottleneck convolutions, compressing
// transitions): DenseNet-BC-121 for ImageNet as torchvision's densenet121, and DenseNet-BC
// for CIFAR (L = 100, k = 12 in the paper). Each dense layer reads the concatenation of every
// earlier feature map of its block through one concat_batch_norm, so backward keeps the maps
// once, not the concatenation; each layer's BatchNorm-ReLU output (the 1x1 convolution's
// input) still grows with the square of the depth unless the BatchNorms and ReLUs are rebuilt
// in backward (`--recompute cheap`), which leaves the convolutions' outputs: linear in the
// depth.
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// DenseNet-BC-121: stem conv 7x7/2 (64) + BN + ReLU + max-pool 3/2; dense blocks of 6, 12,
// 24 and 16 layers with growth 32, each layer BN-ReLU-conv1x1 (128)-BN-ReLU-conv3x3 (32)
// over the concatenation of the block's earlier maps; transitions BN-ReLU-conv1x1 (half the
// channels)-avg-pool 2/2; BN + ReLU, global average pool, linear. No convolution has a bias.
// 7,978,856 parameters at 1000 classes, as torchvision's densenet121. Names as
// "block2/layer3/conv1.weight", "transition1/bn.weight", "head/linear.bias".
Value densenet121(Value images, const ModelConfig& config = {});

// DenseNet-BC for 32 x 32 images: stem conv 3x3 (2k channels); three dense blocks of
// (depth - 4) / 6 layers (BN-ReLU-conv1x1 (4k)-BN-ReLU-conv3x3 (k)); transitions halving the
// channels then avg-pool 2/2; BN + ReLU, global average pool, linear. depth = 6n + 4.
// DenseNet-BC (L = 100, k = 12): 769,162 parameters at 10 classes.
Value densenet_cifar(Value images, int depth, int64_t growth, const ModelConfig& config = {});

}  // namespace frugal
