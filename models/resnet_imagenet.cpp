// ImageNet ResNets, recorded block by block in scopes "stage<s>/block<b>" (so parameter
// names and the memory report are stable and readable).
#include "models/resnet_imagenet.h"

#include <string>

#include "core/error.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"

namespace frugal {
namespace {

// conv (no bias when BN follows), then BN if enabled.
Value conv_bn(Value x, bool bn, const std::string& name, Conv2dOptions o) {
  o.bias = !bn;
  o.name = "conv" + name;
  x = conv2d(x, o);
  return bn ? batch_norm(x, {.name = "bn" + name}) : x;
}

// 1x1 conv (stride) + BN where the block changes the shape, else the identity.
Value shortcut(Value x, int64_t K, int64_t stride, bool bn) {
  if (x.shape()[1] == K && stride == 1) return x;
  Tape::Scope scope(x.tape(), "shortcut");
  return conv_bn(x, bn, "", {.out = K, .kernel = 1, .stride = stride});
}

// x (N,C,H,W) -> (N,W_,H/stride,W/stride); two 3x3 convs.
Value basic(Value x, int64_t width, int64_t stride, bool bn) {
  Value y = relu(conv_bn(x, bn, "1", {.out = width, .kernel = 3, .stride = stride, .pad = 1}));
  y = conv_bn(y, bn, "2", {.out = width, .kernel = 3, .pad = 1});
  return relu(add(y, shortcut(x, width, stride, bn)));
}

// x (N,C,H,W) -> (N,4 width,H/stride,W/stride); 1x1, 3x3 (stride), 1x1 x 4.
Value bottleneck(Value x, int64_t width, int64_t stride, bool bn) {
  Value y = relu(conv_bn(x, bn, "1", {.out = width, .kernel = 1}));
  y = relu(conv_bn(y, bn, "2", {.out = width, .kernel = 3, .stride = stride, .pad = 1}));
  y = conv_bn(y, bn, "3", {.out = 4 * width, .kernel = 1});
  return relu(add(y, shortcut(x, 4 * width, stride, bn)));
}

struct Layout {
  int blocks[4];
  bool bottleneck;
};

Layout layout(int depth) {
  switch (depth) {
    case 18:
      return {{2, 2, 2, 2}, false};
    case 34:
      return {{3, 4, 6, 3}, false};
    case 50:
      return {{3, 4, 6, 3}, true};
    case 101:
      return {{3, 4, 23, 3}, true};
    case 152:
      return {{3, 8, 36, 3}, true};
  }
  throw Error("resnet_imagenet: depth " + std::to_string(depth) +
              " is not one of 18, 34, 50, 101, 152");
}

}  // namespace

Value resnet_imagenet(Value images, int depth, const ModelConfig& config) {
  const Layout l = layout(depth);
  const bool bn = config.batch_norm;
  Tape& t = images.tape();
  Value x;
  {
    Tape::Scope scope(t, "stem");
    // ReLU after the pool rather than before it: the same bits, less kept (layers/maxpool2d.h).
    x = conv_bn(images, bn, "", {.out = 64, .kernel = 7, .stride = 2, .pad = 3});
    x = relu(max_pool2d(x, {.kernel = 3, .stride = 2, .pad = 1}));
  }
  for (int s = 0; s < 4; ++s) {
    Tape::Scope stage(t, "stage" + std::to_string(s + 1));
    for (int b = 0; b < l.blocks[s]; ++b) {
      Tape::Scope block(t, "block" + std::to_string(b));
      const int64_t width = int64_t{64} << s, stride = s > 0 && b == 0 ? 2 : 1;
      x = l.bottleneck ? bottleneck(x, width, stride, bn) : basic(x, width, stride, bn);
    }
  }
  Tape::Scope scope(t, "head");
  x = flatten(avg_pool2d(x, {.kernel = x.shape()[2], .stride = 1}));
  return linear(x, {.out = classes_or(config, 1000), .name = "linear"});
}

}  // namespace frugal
