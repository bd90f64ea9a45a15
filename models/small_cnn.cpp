// SmallCNN, recorded as plain function calls over Values: each block in its own scope so the
// parameters and the memory report read "block1/...", "block2/...", "classifier/...".
#include "models/small_cnn.h"

#include <string>

#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"

namespace frugal {
namespace {

// conv 3x3 pad 1 (no bias: batch norm cancels it) -> batch norm -> ReLU -> max pool 2x2: (N,C,H,W)
// -> (N,K,H/2,W/2), recorded as pool then ReLU
Value conv_block(Value x, const std::string& name, int64_t K) {
  Tape::Scope scope(x.tape(), name);
  x = conv2d(x, {.out = K, .kernel = 3, .pad = 1, .bias = false});
  // ReLU after the pool: the same bits, less kept (layers/maxpool2d.h).
  return relu(max_pool2d(batch_norm(x), {.kernel = 2}));
}

}  // namespace

Value small_cnn(Value images, int classes) {
  Value x = conv_block(images, "block1", 32);
  x = conv_block(x, "block2", 64);
  Tape::Scope scope(x.tape(), "classifier");
  return linear(flatten(x), {.out = classes});
}

}  // namespace frugal
