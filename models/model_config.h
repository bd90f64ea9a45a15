// ModelConfig: the switches every bundled network builder takes, so one training or memory
// command can build any of them (without Dropout for optnet's training table, without batch
// norm for its ResNet-110, or with another number of classes).
#pragma once

#include <cstdint>
#include <vector>

#include "core/roles.h"
#include "recompute/budget.h"

namespace frugal {

struct ModelConfig {
  bool dropout = true;     // Dropout(0.5) where the network has it (AlexNet, VGG)
  bool batch_norm = true;  // BatchNorm where the network has it (ResNets)
  int64_t classes = 0;     // 0: the network's default (10 for CIFAR nets, 1000 for ImageNet)
  // CIFAR ResNets: split the chain of blocks into this many segments and checkpoint all but
  // the last (as PyTorch's checkpoint_sequential); 0: store every activation.
  int segments = 0;
  // RevNets: the downsampling units, which cannot rebuild their input, are checkpoint segments
  // too (their activations recomputed in backward), not only the stem. RevNet-110 b64: stored
  // activations 44.1 -> 14.1 MiB for about 5% more step time (docs/BENCHMARKS.md).
  bool checkpoint_downsampling = false;
  // CIFAR ResNets: the runs of the chain of blocks to checkpoint, each one checkpoint op
  // (sorted, disjoint; the other blocks store their activations). Used instead of `segments`
  // when not empty: a memory budget's schedule (recompute/budget.h).
  std::vector<BlockRun> checkpoint_runs = {};
  // CIFAR ResNets: the checkpoint runs' backward plans rebuild op outputs as this says
  // (`--recompute` with `--segments` or `--memory-budget`); the same bits, less scratch.
  Recompute checkpoint_rebuilds = Recompute::none;
  // RevNets: reversible units, rebuilt in backward; false: their stored-activation twins.
  bool reversible = true;
  // RevNets: > 0: the units couple on a fixed-point grid with this many range bits
  // (|activations| < 2^bits; layers/fixed_point.h), so reversible and stored runs are bitwise
  // equal; 0: floating-point coupling as memcnn's, inputs rebuilt within rounding.
  int fixed_point_range = 12;
  // Training: batch norms whose output a later backward keeps read that output instead of
  // their input (layers/batchnorm2d.h, read_batch_norm_outputs): less memory where a SiLU or a
  // convolution follows, gradients rounded differently (--bn-from-output).
  bool batch_norm_from_output = false;
  // Training: layer norms whose output a later backward keeps (a linear layer's) read that
  // output instead of their input (layers/layer_norm.h, read_layer_norm_outputs): less memory in
  // transformers and ConvNeXt, gradients rounded differently (--ln-from-output).
  bool layer_norm_from_output = false;
};

// The number of classes a builder should use: config.classes, or `fallback` when it is 0.
inline int64_t classes_or(const ModelConfig& config, int64_t fallback) {
  return config.classes > 0 ? config.classes : fallback;
}

}  // namespace frugal
