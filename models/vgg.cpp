// VGG: the feature extractor is read off the usual configuration table (a number is a 3 x 3
// convolution with that many channels and a ReLU, 0 is a 2 x 2 max-pool); the classifier
// reads 512 x 7 x 7 at 224 x 224 input.
#include "models/vgg.h"

#include <vector>

#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/log_softmax.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/threshold.h"

namespace frugal {
namespace {

constexpr int64_t M = 0;  // max-pool 2 x 2 stride 2

std::vector<int64_t> table(VggConfig which) {
  switch (which) {
    case VggConfig::a:
      return {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
    case VggConfig::d:
      return {64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M};
    case VggConfig::e:
      return {64,  64,  M,   128, 128, M,   256, 256, 256, 256, M,
              512, 512, 512, 512, M,   512, 512, 512, 512, M};
  }
  return {};
}

}  // namespace

Value vgg(Value images, VggConfig which, const ModelConfig& config) {
  Value x = images;
  {
    Tape::Scope scope(x.tape(), "features");
    // Each convolution's ReLU, or the pool after it and then the ReLU: the same bits, less kept
    // (layers/maxpool2d.h).
    const std::vector<int64_t> t = table(which);
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == M) continue;
      x = conv2d(x, {.out = t[i], .kernel = 3, .pad = 1});
      if (i + 1 < t.size() && t[i + 1] == M) x = max_pool2d(x, {.kernel = 2, .stride = 2});
      x = relu(x);
    }
  }
  Tape::Scope scope(x.tape(), "classifier");
  x = flatten(x);  // 25088
  x = threshold(linear(x, {.out = 4096}), 0, 1e-6);
  if (config.dropout) x = dropout(x, 0.5);
  x = threshold(linear(x, {.out = 4096}), 0, 1e-6);
  if (config.dropout) x = dropout(x, 0.5);
  return log_softmax(linear(x, {.out = classes_or(config, 1000)}));
}

}  // namespace frugal
