// LayerNorm: each sample's trailing axes normalized by their own mean and variance, then
// scaled and shifted per element (PyTorch's nn.LayerNorm, ONNX's LayerNormalization; the
// channels-last LayerNorm of ConvNeXt and every transformer). Training saves only each row's
// mean and 1/std; backward reads x and gamma, never y (or with `from_output` y, gamma and beta,
// never x: where a later op's backward keeps y anyway, a linear layer's, x then dies after
// forward), and dx may take dy's bytes; in inference y may take x's bytes.
#pragma once

#include <source_location>
#include <string>
#include <utility>

#include "autograd/tape.h"

namespace frugal {

struct LayerNormOptions {
  double eps = 1e-5;
  // Parameter prefix; empty: a fresh "layer_norm<k>". Initialized so that designated
  // initializers leaving it out draw no missing-initializer warning from GCC 12.
  std::string name = "";
  // Training backward reads y, not x: x^ = (y - beta) times 1 / gamma in double instead of
  // (x - mean) / std, so gradients differ from the default's by rounding (f32: about 1e-7 of
  // |y| / |gamma| in x^), and a gamma of 0 (or not finite) is an error in forward, naming the
  // layer norm. y may then take x's bytes. Not on a device without the kernel (CUDA). Set it
  // where y is kept anyway and x would die: read_layer_norm_outputs below.
  bool from_output = false;
};

// Inputs {x, gamma, beta}: gamma and beta have the shape of x's last gamma.rank() axes, which
// are normalized together; every leading axis indexes a row of its own.
class LayerNormOp final : public Op {
 public:
  explicit LayerNormOp(LayerNormOptions o) : options_(std::move(o)) {}
  std::string name() const override { return "layer_norm"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool from_output() const { return options_.from_output; }
  void set_from_output(bool on) { options_.from_output = on; }

 private:
  LayerNormOptions options_;
  TensorMeta x_;
  int64_t rows_ = 0;
  Tensor gamma_host_;  // the from_output check's staging where gamma is on a device
};

// y = (x - mean) / sqrt(var + eps) * gamma + beta over x's last `axes` axes (biased variance,
// as PyTorch). Creates "<name>.weight" (ones) and "<name>.bias" (zeros) of those axes' shape.
// Example: layer_norm(tokens, 1) for (N, T, D) tokens; layer_norm(x, 3) for a whole (N, C, H,
// W) sample.
Value layer_norm(Value x, int axes, const LayerNormOptions& o = {},
                 std::source_location where = std::source_location::current());

// Training: every layer norm of `tape` whose output some consumer's backward reads (a linear
// layer or a product that gets a weight gradient, a GELU's, as each op's training roles on
// `backend` say) and whose input no other backward reads (an op's output, not a graph input)
// reads that output in backward instead of its input (from_output), so its input can die after
// forward: Tape::output_kept_input_dies. Returns how many it set. Changes the gradients'
// rounding (LayerNormOptions::from_output): call it on the tape before any executor is made,
// the same way for every run to be compared bitwise.
int read_layer_norm_outputs(Tape& tape, const Backend& backend);

}  // namespace frugal
