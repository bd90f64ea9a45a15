// DenseNets, recorded layer by layer in scopes "block<b>/layer<l>" and "transition<t>". Every
// BatchNorm over a concatenation is one concat_batch_norm: the bits of concat then batch_norm,
// without keeping the concatenation for backward.
#include "models/densenet.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/concat_batch_norm.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"

namespace frugal {
namespace {

// BN, ReLU, convolution without bias, over the concatenation of `maps`: BatchNorm reads the
// maps themselves (concat_batch_norm), so no concatenation is kept for backward.
Value bn_relu_conv(const std::vector<Value>& maps, const std::string& n, Conv2dOptions o) {
  o.bias = false;
  o.name = "conv" + n;
  const BatchNormOptions bn{.name = "bn" + n};
  return conv2d(relu(maps.size() == 1 ? batch_norm(maps[0], bn) : concat_batch_norm(maps, bn)), o);
}

// `layers` dense layers of growth k over x; returns x and every new map (the block's output
// is their concatenation).
std::vector<Value> dense_block(Value x, int layers, int64_t k) {
  Tape& t = x.tape();
  std::vector<Value> maps{x};
  for (int l = 0; l < layers; ++l) {
    Tape::Scope scope(t, "layer" + std::to_string(l));
    Value y = bn_relu_conv(maps, "1", {.out = 4 * k, .kernel = 1});
    maps.push_back(bn_relu_conv({y}, "2", {.out = k, .kernel = 3, .pad = 1}));
  }
  return maps;
}

int64_t channels(const std::vector<Value>& maps) {
  int64_t c = 0;
  for (const Value& m : maps) c += m.shape()[1];
  return c;
}

// BN, ReLU, 1x1 conv to half the channels, 2x2 average pool.
Value transition(const std::vector<Value>& maps) {
  Value x = bn_relu_conv(maps, "", {.out = channels(maps) / 2, .kernel = 1});
  return avg_pool2d(x, {.kernel = 2, .stride = 2});
}

// BN, ReLU, global average pool, linear.
Value head(const std::vector<Value>& maps, int64_t classes) {
  Tape::Scope scope(maps[0].tape(), "head");
  const BatchNormOptions bn{.name = "bn"};
  Value x = relu(maps.size() == 1 ? batch_norm(maps[0], bn) : concat_batch_norm(maps, bn));
  x = flatten(avg_pool2d(x, {.kernel = x.shape()[2], .stride = 1}));
  return linear(x, {.out = classes, .name = "linear"});
}

// The blocks with transitions between them; the last block's maps.
std::vector<Value> blocks(Value x, const std::vector<int>& layers, int64_t k) {
  Tape& t = x.tape();
  std::vector<Value> maps;
  for (size_t b = 0; b < layers.size(); ++b) {
    {
      Tape::Scope scope(t, "block" + std::to_string(b + 1));
      maps = dense_block(x, layers[b], k);
    }
    if (b + 1 == layers.size()) break;
    Tape::Scope scope(t, "transition" + std::to_string(b + 1));
    x = transition(maps);
  }
  return maps;
}

}  // namespace

Value densenet121(Value images, const ModelConfig& config) {
  Value x;
  {
    Tape::Scope scope(images.tape(), "stem");
    x = conv2d(images,
               {.out = 64, .kernel = 7, .stride = 2, .pad = 3, .bias = false, .name = "conv"});
    // ReLU after the pool rather than before it: the same bits, less kept (layers/maxpool2d.h).
    x = relu(max_pool2d(batch_norm(x, {.name = "bn"}), {.kernel = 3, .stride = 2, .pad = 1}));
  }
  return head(blocks(x, {6, 12, 24, 16}, 32), classes_or(config, 1000));
}

Value densenet_cifar(Value images, int depth, int64_t growth, const ModelConfig& config) {
  FRUGAL_CHECK(depth >= 10 && (depth - 4) % 6 == 0, "densenet: DenseNet-BC depth ", depth,
               " is not 6n + 4 with n >= 1 (40, 100, 160, ...)");
  FRUGAL_CHECK(growth >= 1, "densenet: growth ", growth, " must be positive");
  const int n = (depth - 4) / 6;
  Value x;
  {
    Tape::Scope scope(images.tape(), "stem");
    x = conv2d(images, {.out = 2 * growth, .kernel = 3, .pad = 1, .bias = false, .name = "conv"});
  }
  return head(blocks(x, {n, n, n}, growth), classes_or(config, 10));
}

}  // namespace frugal
