// GoogLeNet, the Inception variant optnet measured (soumith's imagenet-multiGPU.torch model:
// BN-Inception widths without BN or LRN): a main head and an auxiliary head over inception
// 4d, both ending in LogSoftMax, concatenated into one (N, 2 x classes) output.
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// images (N,3,224,224) -> (N, 2 x classes): columns [0, classes) are the main head's
// log-probabilities, [classes, 2 classes) the auxiliary head's. 19,124,528 parameters at
// 1000 classes; every convolution has a bias. Named "inception3a/3x3/conv2d0.weight",
// "main/linear0.weight", "aux/conv2d0.weight", ...
Value googlenet(Value images, const ModelConfig& config = {});

}  // namespace frugal
