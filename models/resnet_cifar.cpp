// CIFAR ResNets: basic blocks (post-activation, He et al. 2015) and pre-activation
// bottleneck units (He et al. 2016). Each block records in its own scope so parameter names
// and the memory report read "stage2/block0/...".
#include "models/resnet_cifar.h"

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "recompute/checkpoint.h"

namespace frugal {
namespace {

Value maybe_bn(Value x, bool on, const std::string& name) {
  return on ? batch_norm(x, {.name = name}) : x;
}

// Global average pool and linear: (N,C,H,H) -> (N,classes).
Value head(Value x, int64_t classes) {
  x = flatten(avg_pool2d(x, {.kernel = x.shape()[2], .stride = 1}));
  return linear(x, {.out = classes, .name = "linear"});
}

// x (N,C,H,W) -> (N,K,H/stride,W/stride): relu(branch(x) + shortcut(x)).
Value basic_block(Value x, int64_t K, int64_t stride, bool bn) {
  Value y = conv2d(x, {.out = K, .kernel = 3, .stride = stride, .pad = 1, .name = "conv1"});
  y = relu(maybe_bn(y, bn, "bn1"));
  y = maybe_bn(conv2d(y, {.out = K, .kernel = 3, .pad = 1, .name = "conv2"}), bn, "bn2");
  Value s = x;
  if (x.shape()[1] != K || stride != 1) {
    Tape::Scope scope(x.tape(), "shortcut");
    s = maybe_bn(conv2d(x, {.out = K, .kernel = 1, .stride = stride, .name = "conv"}), bn, "bn");
  }
  return relu(add(y, s));
}

// x (N,C,H,W) -> (N,K,H/stride,W/stride), pre-activation bottleneck of width K/4.
Value preact_bottleneck(Value x, int64_t K, int64_t stride, bool bn) {
  const bool project = x.shape()[1] != K || stride != 1;
  const int64_t B = K / 4;
  const bool bias = !bn;
  Value a = relu(maybe_bn(x, bn, "bn1"));
  Value y = conv2d(a, {.out = B, .kernel = 1, .stride = stride, .bias = bias, .name = "conv1"});
  y = relu(maybe_bn(y, bn, "bn2"));
  y = conv2d(y, {.out = B, .kernel = 3, .pad = 1, .bias = bias, .name = "conv2"});
  y = relu(maybe_bn(y, bn, "bn3"));
  y = conv2d(y, {.out = K, .kernel = 1, .bias = bias, .name = "conv3"});
  if (!project) return add(y, x);
  Tape::Scope scope(x.tape(), "shortcut");  // reads the shared pre-activation
  return add(y, conv2d(a, {.out = K, .kernel = 1, .stride = stride, .bias = bias, .name = "conv"}));
}

// The runs of a chain of `total` blocks that `config` checkpoints: its checkpoint_runs, or
// its `segments` (PyTorch's checkpoint_sequential).
std::vector<BlockRun> checkpointed_runs(const ModelConfig& config, int total) {
  if (config.checkpoint_runs.empty()) return segment_runs(config.segments, total);
  check_block_runs(config.checkpoint_runs, total);
  return config.checkpoint_runs;
}

// Three stages of n blocks each, K = widths[s]; the first block of stages 2 and 3 has stride
// 2. Block b of stage s records in scope "stage<s+1>/block<b>". Each run of blocks the config
// checkpoints is one checkpoint op, its inner runs checkpoint ops inside it (same parameter
// names, bitwise equal results).
Value stages(Value x, const std::array<int64_t, 3>& widths, int n,
             const std::function<Value(Value, int64_t K, int64_t stride)>& block,
             const ModelConfig& config) {
  auto run = [&](Value v, int from, int to) {  // blocks [from, to) of the chain
    for (int i = from; i < to; ++i) {
      const int s = i / n, b = i % n;
      Tape::Scope stage(v.tape(), "stage" + std::to_string(s + 1));
      Tape::Scope scope(v.tape(), "block" + std::to_string(b));
      v = block(v, widths[static_cast<size_t>(s)], s > 0 && b == 0 ? 2 : 1);
    }
    return v;
  };
  // Blocks [from, to) with `runs` among them checkpointed; a run with inner checkpoints records
  // its own runs inside its segment.
  std::function<Value(Value, int, int, const std::vector<BlockRun>&)> chain =
      [&](Value v, int from, int to, const std::vector<BlockRun>& runs) {
        int done = from;
        for (const BlockRun& r : runs) {
          v = run(v, done, r.begin);
          v = checkpoint(
              v, [&chain, r](Value u) { return chain(u, r.begin, r.end, inner_runs(r)); },
              config.checkpoint_rebuilds);
          done = r.end;
        }
        return run(v, done, to);
      };
  return chain(x, 0, 3 * n, checkpointed_runs(config, 3 * n));
}

}  // namespace

Value resnet_cifar(Value images, int depth, const ModelConfig& config) {
  FRUGAL_CHECK(depth >= 8 && (depth - 2) % 6 == 0, "resnet_cifar: depth ", depth,
               " is not 6n + 2 (20, 32, 56, 110)");
  const int n = (depth - 2) / 6;
  Tape& t = images.tape();
  const bool bn = config.batch_norm;
  Value x;
  {
    Tape::Scope scope(t, "stem");
    x = conv2d(images, {.out = 16, .kernel = 3, .pad = 1, .name = "conv"});
    x = relu(maybe_bn(x, bn, "bn"));
  }
  x = stages(
      x, {16, 32, 64}, n,
      [bn](Value v, int64_t K, int64_t stride) { return basic_block(v, K, stride, bn); }, config);
  Tape::Scope scope(t, "head");
  return head(x, classes_or(config, 10));
}

Value preact_resnet_cifar(Value images, int depth, const ModelConfig& config) {
  FRUGAL_CHECK(depth >= 11 && (depth - 2) % 9 == 0, "preact_resnet_cifar: depth ", depth,
               " is not 9n + 2 (164, 1001)");
  const int n = (depth - 2) / 9;
  Tape& t = images.tape();
  const bool bn = config.batch_norm;
  Value x;
  {
    Tape::Scope scope(t, "stem");
    x = conv2d(images, {.out = 16, .kernel = 3, .pad = 1, .bias = !bn, .name = "conv"});
  }
  x = stages(
      x, {64, 128, 256}, n,
      [bn](Value v, int64_t K, int64_t stride) { return preact_bottleneck(v, K, stride, bn); },
      config);
  Tape::Scope scope(t, "head");
  return head(relu(maybe_bn(x, bn, "bn")), classes_or(config, 10));
}

}  // namespace frugal
