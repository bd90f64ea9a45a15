// PReLU: y = x > 0 ? x : a x with a learned slope a per channel, or one for all channels
// (PyTorch's nn.PReLU(num_parameters), ONNX's PRelu). Backward reads x and the slope (y alone
// cannot tell x's sign once a slope turns negative); dx may take dy's bytes, and in inference
// y may take x's.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct PReluOptions {
  bool per_channel = true;  // a slope per channel (axis 1); false: one for every channel
  double init = 0.25;       // the slopes' first value (PyTorch's)
  // Parameter prefix; empty: a fresh "prelu<k>". Initialized so that designated initializers
  // leaving it out draw no missing-initializer warning from GCC 12.
  std::string name = "";
};

// Inputs {x (N, C, ...), slope (C) or (1)}.
class PReluOp final : public Op {
 public:
  std::string name() const override { return "prelu"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  TensorMeta x_;
};

// y = x where x > 0, slope[c] * x elsewhere (f32 or f64); dx = dy where x > 0, slope[c] * dy
// elsewhere; dslope[c] = the sum of x dy where x <= 0. Creates "<name>.weight" of shape (C)
// or (1), filled with o.init. Example: prelu(conv2d(x, {.out = 16, .kernel = 3})).
Value prelu(Value x, const PReluOptions& o = {},
            std::source_location where = std::source_location::current());

}  // namespace frugal
