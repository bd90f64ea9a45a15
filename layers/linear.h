// Linear (fully connected): y = x w^T + b over x (N,I), or over x (..., I) as rows (tokens,
// channels-last maps: PyTorch's nn.Linear on any leading axes). Backward reads x (for dw) and w
// (for dx); no scratch and no aliases.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

struct LinearOptions {
  int64_t out = 0;  // output features O
  bool bias = true;
  std::string name{};  // parameter prefix; default tape.unique_name("linear")
};

// Inputs {x (N,I) or (..., I), w (O,I)} and optionally b (O); output y (N,O) or (..., O), the
// leading axes as x's (each of their positions one row). To use weights of your own
// (shared, tied), record it with them: tape.record(std::make_unique<LinearOp>(), {x, w, b},
// where) (docs/NEW_LAYER.md, "Weights of your own in built-in ops").
class LinearOp final : public Op {
 public:
  std::string name() const override { return "linear"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  Tensor rows(const Tensor& t, int64_t features) const;
  bool bias_ = false;
  struct Dims {
    int64_t n = 0, in = 0, out = 0, elem = 0;  // rows, features in and out, element bytes
  } dims_;
};

// y = linear(x) with parameters "<name>.weight" (O,I) and "<name>.bias" (O), both uniform in
// (-1/sqrt(I), 1/sqrt(I)) as in PyTorch; x (N,I) or (..., I). Example: linear(x, {.out = 10}).
Value linear(Value x, const LinearOptions& o,
             std::source_location where = std::source_location::current());

}  // namespace frugal
