// Affine coupling block (RealNVP / Glow style, on a RevNet block): x = [x1, x2] by channels,
// [h_s, t] = F(x2), y1 = x1 ⊙ s + t with s = exp(clamp·tanh(h_s / clamp)) (layers/affine.h),
// y2 = x2 + G(y1). Backward rebuilds x from y like the additive block (x1 = (y1 - t) / s),
// with one recompute of F and G that also serves the gradients (recompute/reversible.h).
#pragma once

#include "layers/affine.h"
#include "recompute/reversible.h"

namespace frugal {

class AffineCouplingOp final : public CouplingOp {
 public:
  AffineCouplingOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F, HalfNet G,
                   AffineOptions options);
  std::string name() const override { return "affine_coupling"; }

 protected:
  void couple_forward(Backend& be, Tensor& x1y1, const Tensor& f) const override;
  const Tensor& couple_backward(Backend& be, const Tensor& y1, const Tensor& f, Tensor& d1,
                                Tensor& x1, Tensor& df) const override;

 private:
  AffineOptions opt_;
};

// Records an affine coupling block over x (N, C, H, W) or (N, C) with C even. F maps a half
// (N, C/2, ...) to (N, C, ...): the scale's pre-activation h_s, then the shift t; G maps a half
// to a half. The second half is additive: one bounded scale per block keeps the rebuild's
// error bounded (|error of x1| <= |error of y1 - t| · e^clamp) while the block stays a flow
// step with log-det sum(clamp·tanh(h_s / clamp)). A scale below options.min_scale or not finite
// throws frugal::Error naming the block ("affine_coupling 'affine_coupling0'") and the value.
Value affine_coupling_block(Value x, HalfNet F, HalfNet G, AffineOptions options = {},
                            std::source_location where = std::source_location::current());

}  // namespace frugal
