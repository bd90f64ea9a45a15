// ConvTranspose2d: finite-difference gradients in f64 (stride, padding, output padding,
// dilation, groups, bias), a 2x upsampling case by hand, the adjoint identity against conv2d,
// planned == baseline bitwise (rebuilds included), and errors that name what is wrong.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/conv_transpose2d.h"
#include "layers/relu.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

std::vector<Value> one(Value v) {
  return {v};
}

// Runs `net` over x in f64 with the store's weights and returns y as a host tensor.
Tensor forward_of(ParamStore& store, const std::function<Value(Value)>& net, const Tensor& x) {
  Tape tape(store, DType::f64);
  Value in = tape.input("x", x.shape(), DType::f64);
  Value y = net(in);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(in, x);
  ex.forward();
  return clone(ex.value(y));
}

}  // namespace

TEST_CASE("conv_transpose2d: finite-difference gradients in f64") {
  // 2x upsampling (kernel 2, stride 2), the U-Net decoder's.
  check_gradients(
      [](auto x) { return one(conv_transpose2d(x[0], {.out = 3, .kernel = 2, .stride = 2})); },
      {random_tensor({2, 4, 3, 3}, 1)});
  // Kernel 3, stride 2, pad 1, output padding 1 (the output exactly twice the input).
  check_gradients(
      [](auto x) {
        return one(conv_transpose2d(
            x[0], {.out = 2, .kernel = 3, .stride = 2, .pad = 1, .output_padding = 1}));
      },
      {random_tensor({1, 3, 4, 3}, 2)});
  // Groups and dilation, no bias.
  check_gradients(
      [](auto x) {
        return one(conv_transpose2d(
            x[0], {.out = 4, .kernel = 3, .dilation = 2, .groups = 2, .bias = false}));
      },
      {random_tensor({2, 4, 3, 4}, 3)});
}

TEST_CASE("conv_transpose2d: 2x upsampling by hand") {
  // One channel in, one out, kernel [1 2; 3 4], stride 2, bias 10: each input pixel v becomes
  // the 2x2 block v * kernel + 10.
  ParamStore store(1);
  auto net = [](Value x) { return conv_transpose2d(x, {.out = 1, .kernel = 2, .stride = 2}); };
  Tensor x = Tensor::empty({1, 1, 2, 2}, DType::f64);
  const double xs[] = {1, 2, 3, 4};
  std::memcpy(x.raw(), xs, sizeof xs);
  forward_of(store, net, x);  // records the parameters
  const double w[] = {1, 2, 3, 4}, b[] = {10};
  std::memcpy(store.find("conv_transpose2d0.weight")->value.raw(), w, sizeof w);
  std::memcpy(store.find("conv_transpose2d0.bias")->value.raw(), b, sizeof b);
  const Tensor y = forward_of(store, net, x);
  REQUIRE(y.shape() == Shape{1, 1, 4, 4});
  const double expect[] = {11, 12, 12, 14, 13, 14, 16, 18, 13, 16, 14, 18, 19, 22, 22, 26};
  for (int i = 0; i < 16; ++i) CHECK(y.data<double>()[i] == expect[i]);
}

TEST_CASE("conv_transpose2d: the adjoint of conv2d") {
  // <conv_transpose(x), z> == <x, conv(z)> with the same weights: the two ops are transposes.
  const Conv2dParams p{.stride_h = 2,
                       .stride_w = 3,
                       .pad_top = 1,
                       .pad_left = 0,
                       .pad_bottom = 1,
                       .pad_right = 0,
                       .dilation_h = 1,
                       .dilation_w = 2,
                       .groups = 2};
  ParamStore store(5);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", {2, 4, 3, 4}, DType::f64);
  Value w = tape.param("w", {4, 3, 3, 2}, Init::normal(0.5));
  Value y = tape.record(std::make_unique<ConvTranspose2dOp>(p, 1, 2), {x, w},
                        std::source_location::current())[0];
  Value z = tape.input("z", y.shape(), DType::f64);
  Value c = tape.record(std::make_unique<Conv2dOp>(p), {z, w}, std::source_location::current())[0];
  REQUIRE(c.shape() == x.shape());
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y, c}});
  const Tensor xv = random_tensor(x.shape(), 6), zv = random_tensor(z.shape(), 7);
  ex.set_input(x, xv);
  ex.set_input(z, zv);
  ex.forward();
  double a = 0, b = 0;
  for (int64_t i = 0; i < y.shape().numel(); ++i)
    a += ex.value(y).data<double>()[i] * zv.data<double>()[i];
  for (int64_t i = 0; i < x.shape().numel(); ++i)
    b += xv.data<double>()[i] * ex.value(c).data<double>()[i];
  CHECK(std::abs(a - b) <= 1e-12 * std::abs(a));
}

TEST_CASE("conv_transpose2d: planned equals baseline bitwise") {
  // A U-Net step in small: down by a strided convolution, up by a transposed one, skip concat
  // by adding.
  check_planned_equals_baseline([](Value x) {
    Value d = relu(conv2d(x, {.out = 6, .kernel = 3, .stride = 2, .pad = 1}));
    Value u =
        conv_transpose2d(d, {.out = 4, .kernel = 3, .stride = 2, .pad = 1, .output_padding = 1});
    return relu(conv2d(relu(u), {.out = 4, .kernel = 1}));
  });
}

TEST_CASE("conv_transpose2d: errors name what is wrong") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("x", {2, 6, 8, 8}, DType::f32);
  CHECK_THROWS_WITH_AS(
      conv_transpose2d(x, {.out = 4, .kernel = 3, .groups = 4}),
      doctest::Contains("4 groups do not divide the 6 input and 4 output channels"), Error);
  CHECK_THROWS_WITH_AS(
      conv_transpose2d(x, {.out = 4, .kernel = 3, .stride = 2, .output_padding = 2}),
      doctest::Contains("output padding 2x2 must be >= 0 and below the stride 2x2"), Error);
  Value w = tape.param("w", {5, 2, 3, 3}, Init::zeros());
  CHECK_THROWS_WITH_AS(tape.record(std::make_unique<ConvTranspose2dOp>(Conv2dParams{}, 0, 0),
                                   {x, w}, std::source_location::current()),
                       doctest::Contains("input channels 6 != the weight's first dimension 5"),
                       Error);
}
