// The ELU family with its constants (PyTorch's aten::elu): nn.ELU(alpha), nn.CELU(alpha) and
// SELU with constants of its own; y = x > 0 ? scale x : alpha scale (e^(input_scale x) - 1).
// (elu(x) and selu(x) of layers/activation.h are the defaults', kept as they were.) Where alpha
// >= 0, y > 0 exactly where x > 0, so backward reads y, as PyTorch's in-place ELU does, and the
// op may run in place: the input need not be kept for it. With a negative alpha backward reads x.
#pragma once

#include <source_location>

#include "autograd/tape.h"
#include "core/activation.h"

namespace frugal {

class EluOp final : public Op {
 public:
  explicit EluOp(EluCoefficients c) : c_(c) {}
  // "celu" with an input scale other than 1, "selu" with a scale other than 1, else "elu".
  std::string name() const override;
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  EluCoefficients c_;
  TensorMeta x_;
};

// nn.ELU(alpha): x > 0 ? x : alpha (e^x - 1). Any finite alpha.
Value elu(Value x, double alpha, std::source_location where = std::source_location::current());
// nn.CELU(alpha): max(0, x) + min(0, alpha (e^(x / alpha) - 1)), as PyTorch computes it (x times
// 1 / alpha). alpha finite and not 0.
Value celu(Value x, double alpha = 1.0,
           std::source_location where = std::source_location::current());
// Any member of the family: its three coefficients finite.
Value elu_family(Value x, EluCoefficients c,
                 std::source_location where = std::source_location::current());

}  // namespace frugal
