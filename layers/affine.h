// Affine transform of a coupling: y = x ⊙ s + t from h = [h_s, t] (the scale's pre-activation
// and the shift, stacked along channels), with s = exp(clamp·tanh(h_s / clamp)), and its exact
// inverse x = (y - t) / s. The kernels also serve the affine coupling block, which rebuilds x.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

// s = exp(clamp·tanh(h_s / clamp)) lies in [e^-clamp, e^clamp]: about exp(h_s) near 0, like
// RealNVP's exp, but bounded on both sides, so s never reaches 0 for a finite h_s. A scale
// below min_scale (only possible when e^-clamp < min_scale) or not finite (h_s NaN, or e^clamp
// overflowing) throws, naming the op: dividing by it would lose x or produce NaN.
struct AffineOptions {
  double clamp = 2.0;
  double min_scale = 1e-6;
};

class AffineOp final : public Op {
 public:
  AffineOp(AffineOptions options, bool inverse) : opt_(options), inverse_(inverse) {}
  std::string name() const override { return inverse_ ? "affine_inverse" : "affine"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  AffineOptions opt_;
  bool inverse_;
  TensorMeta h_;
};

// y = x ⊙ s + t for x (N,c,...) and h (N,2c,...) = [h_s, t]; y takes x's shape.
Value affine(Value x, Value h, AffineOptions options = {},
             std::source_location where = std::source_location::current());
// x = (y - t) / s: the inverse of affine(x, h) for the same h.
Value affine_inverse(Value y, Value h, AffineOptions options = {},
                     std::source_location where = std::source_location::current());

// Checks x against h (and the options), naming `who`; returns nothing, throws on mismatch.
void affine_check_shapes(const TensorMeta& x, const TensorMeta& h, const AffineOptions& o,
                         const std::string& who);
// x (N,c,...)  h (N,2c,...)  y (N,c,...):  y = x ⊙ s + t, or (x - t) / s when inverse.
// y may alias x. On be's device, f32 or f64.
void affine_apply(Backend& be, const Tensor& x, const Tensor& h, const AffineOptions& o,
                  bool inverse, Tensor& y, const std::string& who);
// Backward from the output y, d y and h: dx (may alias dy) and dh = [dh_s, dt]. For the
// forward direction, also rebuilds x = (y - t) / s into *x when x is not null.
void affine_backward(Backend& be, const Tensor& y, const Tensor& h, const Tensor& dy,
                     const AffineOptions& o, bool inverse, Tensor& dx, Tensor& dh, Tensor* x,
                     const std::string& who);

}  // namespace frugal
