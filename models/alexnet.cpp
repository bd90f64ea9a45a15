// AlexNet (two towers): each tower is five convolutions and three max-pools over the same
// images; the classifier reads their channel concatenation (256 x 6 x 6 at 224 x 224 input).
#include "models/alexnet.h"

#include <string>

#include "layers/concat.h"
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

// One tower: (N,3,224,224) -> (N,128,6,6).
Value tower(Value x, const std::string& name) {
  Tape::Scope scope(x.tape(), name);
  // ReLU after each pool rather than before it: the same bits, less kept (layers/maxpool2d.h).
  x = conv2d(x, {.out = 48, .kernel = 11, .stride = 4, .pad = 2});  // 48 x 55 x 55
  x = relu(max_pool2d(x, {.kernel = 3, .stride = 2}));              // 48 x 27 x 27
  x = conv2d(x, {.out = 128, .kernel = 5, .pad = 2});               // 128 x 27 x 27
  x = relu(max_pool2d(x, {.kernel = 3, .stride = 2}));              // 128 x 13 x 13
  x = relu(conv2d(x, {.out = 192, .kernel = 3, .pad = 1}));
  x = relu(conv2d(x, {.out = 192, .kernel = 3, .pad = 1}));
  x = conv2d(x, {.out = 128, .kernel = 3, .pad = 1});
  return relu(max_pool2d(x, {.kernel = 3, .stride = 2}));  // 128 x 6 x 6
}

}  // namespace

Value alexnet(Value images, const ModelConfig& config) {
  Value x;
  {
    Tape::Scope scope(images.tape(), "features");
    x = concat({tower(images, "tower0"), tower(images, "tower1")});  // 256 x 6 x 6
  }
  Tape::Scope scope(images.tape(), "classifier");
  x = flatten(x);  // 9216
  if (config.dropout) x = dropout(x, 0.5);
  x = threshold(linear(x, {.out = 4096}), 0, 1e-6);
  if (config.dropout) x = dropout(x, 0.5);
  x = threshold(linear(x, {.out = 4096}), 0, 1e-6);
  return log_softmax(linear(x, {.out = classes_or(config, 1000)}));
}

}  // namespace frugal
