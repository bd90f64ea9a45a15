// Steps of a network on any backend, as host copies: what the simulated-device suite
// (tests/test_sim_device.cpp) and the CUDA device suite (tests/cuda/test_cuda_device.cpp)
// compare bit for bit, between devices and between memory modes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/params.h"
#include "autograd/tape.h"
#include "core/backend.h"
#include "models/registry.h"
#include "run/executor.h"
#include "train/trainer.h"

namespace frugal::testing {

using Network = std::function<Value(Value)>;

// A host copy of t, detached from t's memory.
Tensor snapshot(Backend& be, const Tensor& t);

// CHECKs that a and b hold the same number of tensors, each bitwise equal.
void check_all_bitwise(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

// Every parameter, running statistic and optimizer state buffer of a store, as host copies.
std::vector<Tensor> state_of(ParamStore& store);

// `steps` SGD steps (momentum 0.9; or AdamW, weight decay 0.01) of `net` over (N,C,H,W)
// images on `be`, planned runs poisoned (and rebuilding outputs as `recompute` says): each
// step's loss, logits and d images, every parameter gradient, then every parameter, running
// statistic and optimizer state buffer, all as host copies.
std::vector<Tensor> train_on(Backend& be, const Network& net, Shape shape, int64_t classes,
                             MemoryMode memory, int steps,
                             OptimizerKind optimizer = OptimizerKind::sgd,
                             Recompute recompute = Recompute::none);

// The bits of the losses of the trainer's next `steps` steps.
std::vector<uint32_t> loss_bits(Trainer& t, int steps);

// A bundled model as train_on's network.
Network bundled(const std::string& name, const ModelConfig& config = {});

// LeakyReLU, an affine coupling block, the fixed-point grid and an exact reversible block,
// then a linear head: every kernel that once was a host loop in a layer, in one network.
Value coupling_net(Value x);

// Two dense layers as in a DenseNet, BatchNorm over the concatenations either as
// concat_batch_norm (`fused`) or as concat then batch_norm: the same bits on every device.
Network dense_net(bool fused);

// Volumes (N, C, D, H, W) through conv3d, a strided conv3d, conv_transpose3d back up and a
// skip added, then a linear head: the 3-D convolutions' scratch passes on a device.
Value volume_net(Value x);

}  // namespace frugal::testing
