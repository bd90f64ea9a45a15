// GoogLeNet (optnet's variant), literally as reference/networks.md lists it. Torch's
// SpatialZeroPadding(1) followed by a 3 x 3 stride-1 pool is written as a pool with pad 1:
// the same for average pooling (padding counted, divisor 9), and the same for max pooling
// because every max-pooled block input is a concat of ReLU outputs (no value below 0).
#include "models/googlenet.h"

#include <string>
#include <vector>

#include "layers/avgpool2d.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/log_softmax.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"

namespace frugal {
namespace {

enum class Pool { max, avg };

struct Inception {
  int64_t c1;        // 1x1 branch width; 0: no such branch
  int64_t r3, c3;    // 1x1 reduce, then 3x3
  int64_t r33, c33;  // 1x1 reduce, then two 3x3
  Pool pool;
  int64_t proj;  // 1x1 after the pool; 0: the pooled input itself
};

Value conv_relu(Value x, int64_t out, int64_t kernel) {
  return relu(conv2d(x, {.out = out, .kernel = kernel, .pad = kernel / 2}));
}

// (N,C,H,W) -> (N, c1 + c3 + c33 + (proj or C), H, W).
Value inception(Value x, const std::string& name, const Inception& b) {
  Tape& t = x.tape();
  Tape::Scope scope(t, name);
  std::vector<Value> branches;
  if (b.c1 != 0) {
    Tape::Scope s(t, "1x1");
    branches.push_back(conv_relu(x, b.c1, 1));
  }
  {
    Tape::Scope s(t, "3x3");
    branches.push_back(conv_relu(conv_relu(x, b.r3, 1), b.c3, 3));
  }
  {
    Tape::Scope s(t, "double3x3");
    branches.push_back(conv_relu(conv_relu(conv_relu(x, b.r33, 1), b.c33, 3), b.c33, 3));
  }
  {
    Tape::Scope s(t, "pool");
    const Pool2dOptions o{.kernel = 3, .stride = 1, .pad = 1, .ceil = true};
    Value p = b.pool == Pool::max ? max_pool2d(x, o) : avg_pool2d(x, o);
    branches.push_back(b.proj != 0 ? conv_relu(p, b.proj, 1) : p);
  }
  return concat(branches);
}

// 4d (N,576,14,14) -> (N,classes): inception 4e, 5a, 5b and a linear classifier.
Value main_head(Value x, int64_t classes) {
  Tape::Scope scope(x.tape(), "main");
  x = inception(x, "inception4e", {0, 128, 192, 192, 256, Pool::max, 0});  // 1024 @ 14
  x = conv2d(x, {.out = 1024, .kernel = 2, .stride = 2});                  // 1024 @ 7, no ReLU
  x = inception(x, "inception5a", {352, 192, 320, 160, 224, Pool::avg, 128});
  x = inception(x, "inception5b", {352, 192, 320, 192, 224, Pool::max, 128});
  x = flatten(avg_pool2d(x, {.kernel = 7, .stride = 1}));  // 1024
  return log_softmax(linear(x, {.out = classes}));
}

// 4d (N,576,14,14) -> (N,classes): average pool, 1x1 conv (no ReLU), two linears.
Value aux_head(Value x, int64_t classes) {
  Tape::Scope scope(x.tape(), "aux");
  x = avg_pool2d(x, {.kernel = 5, .stride = 3, .ceil = true});  // 576 x 4 x 4
  x = flatten(conv2d(x, {.out = 128, .kernel = 1}));            // 2048
  x = relu(linear(x, {.out = 768}));
  return log_softmax(linear(x, {.out = classes}));
}

}  // namespace

Value googlenet(Value images, const ModelConfig& config) {
  Value x = images;
  {
    Tape::Scope scope(x.tape(), "stem");
    // ReLU after each pool rather than before it: the same bits, less kept (layers/maxpool2d.h).
    x = conv2d(x, {.out = 64, .kernel = 7, .stride = 2, .pad = 3});     // 64 @ 112
    x = relu(max_pool2d(x, {.kernel = 3, .stride = 2, .ceil = true}));  // 64 @ 56
    x = conv_relu(x, 64, 1);
    x = conv2d(x, {.out = 192, .kernel = 3, .pad = 1});
    x = relu(max_pool2d(x, {.kernel = 3, .stride = 2, .ceil = true}));  // 192 @ 28
  }
  x = inception(x, "inception3a", {64, 64, 64, 64, 96, Pool::avg, 32});  // 256 @ 28
  x = inception(x, "inception3b", {64, 64, 96, 64, 96, Pool::avg, 64});  // 320 @ 28
  x = inception(x, "inception3c", {0, 128, 160, 64, 96, Pool::max, 0});  // 576 @ 28
  {
    Tape::Scope scope(x.tape(), "reduce3");
    x = conv2d(x, {.out = 576, .kernel = 2, .stride = 2});  // 576 @ 14, no ReLU
  }
  x = inception(x, "inception4a", {224, 64, 96, 96, 128, Pool::avg, 128});
  x = inception(x, "inception4b", {192, 96, 128, 96, 128, Pool::avg, 128});
  x = inception(x, "inception4c", {160, 128, 160, 128, 160, Pool::avg, 96});
  x = inception(x, "inception4d", {96, 128, 192, 160, 192, Pool::avg, 96});  // 576 @ 14
  const int64_t classes = classes_or(config, 1000);
  return concat({main_head(x, classes), aux_head(x, classes)});
}

}  // namespace frugal
