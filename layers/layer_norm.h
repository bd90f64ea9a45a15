// LayerNorm: each sample's trailing axes normalized by their own mean and variance, then
// scaled and shifted per element (PyTorch's nn.LayerNorm, ONNX's LayerNormalization; the
// channels-last LayerNorm of ConvNeXt and every transformer). Training saves only each row's
// mean and 1/std; backward reads x and gamma, never y, and dx may take dy's bytes; in
// inference y may take x's bytes.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct LayerNormOptions {
  double eps = 1e-5;
  // Parameter prefix; empty: a fresh "layer_norm<k>". Initialized so that designated
  // initializers leaving it out draw no missing-initializer warning from GCC 12.
  std::string name = "";
};

// Inputs {x, gamma, beta}: gamma and beta have the shape of x's last gamma.rank() axes, which
// are normalized together; every leading axis indexes a row of its own.
class LayerNormOp final : public Op {
 public:
  explicit LayerNormOp(double eps) : eps_(eps) {}
  std::string name() const override { return "layer_norm"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  double eps_;
  TensorMeta x_;
  int64_t rows_ = 0;
};

// y = (x - mean) / sqrt(var + eps) * gamma + beta over x's last `axes` axes (biased variance,
// as PyTorch). Creates "<name>.weight" (ones) and "<name>.bias" (zeros) of those axes' shape.
// Example: layer_norm(tokens, 1) for (N, T, D) tokens; layer_norm(x, 3) for a whole (N, C, H,
// W) sample.
Value layer_norm(Value x, int axes, const LayerNormOptions& o = {},
                 std::source_location where = std::source_location::current());

}  // namespace frugal
