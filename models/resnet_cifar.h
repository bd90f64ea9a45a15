// ResNets for 32 x 32 images (CIFAR-10): the basic-block nets of He et al. 2015 with
// projection shortcuts (option B), as optnet and fb.resnet.torch build them, and the
// pre-activation bottleneck ResNet-1001 of He et al. 2016, the planner's stress test.
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// ResNet-depth, depth = 6n + 2 (20, 32, 56, 110): stem conv 3 -> 16, three stages of n basic
// blocks (16, 32, 64 channels; the first block of stages 2 and 3 has stride 2 and a 1x1
// conv + BN shortcut), global average pool, linear. images (N,3,32,32) -> logits
// (N,classes). Every conv has a bias, as in the published counts: ResNet-110 has 1,734,858
// parameters, 1,726,570 with config.batch_norm = false (the BNs removed, nothing else).
// Names: "stem/conv.weight", "stage2/block0/conv1.weight", "stage2/block0/shortcut/bn.bias",
// "head/linear.weight".
// config.segments or config.checkpoint_runs checkpoint runs of the chain of 3n blocks (block
// i = stage i / n, block i % n).
Value resnet_cifar(Value images, int depth, const ModelConfig& config = {});

// Pre-activation bottleneck ResNet, depth = 9n + 2 (164, 1001), exactly as Kaiming He's
// resnet-1k-layers/resnet-pre-act.lua: stem conv 3 -> 16; stages of n units of width
// 64, 128, 256 (bottleneck width / 4), unit = BN, ReLU, conv 1x1 (stride), BN, ReLU, conv
// 3x3, BN, ReLU, conv 1x1, plus the identity; the first unit of each stage shares its
// leading BN-ReLU with a 1x1 strided conv shortcut (no BN); head BN, ReLU, global average
// pool, linear. Convs have no bias (his cuDNN code drops them) unless config.batch_norm is
// false. ResNet-1001: 333 units, 1000 convs + 1 linear, 10,327,706 parameters. Checkpoint runs
// of the chain of 3n units as in resnet_cifar.
Value preact_resnet_cifar(Value images, int depth, const ModelConfig& config = {});

}  // namespace frugal
