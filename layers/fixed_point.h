// A fixed-point grid for exactly reversible couplings (MacKay et al. 2018 made reversible RNNs
// exact the same way). Multiples of 2^-frac below 2^range in magnitude, with frac = 24 - range
// in f32 and 53 - range in f64, add and subtract without rounding, so a block that adds a
// grid-rounded F(x2) to an x1 on the grid gives back x1 = (x1 + q(F(x2))) - q(F(x2)) bit for bit
// and its gradients equal the stored twin's bitwise. fixed_point(x) puts a chain's input on it.
#pragma once

#include <source_location>
#include <string>

#include "autograd/tape.h"

namespace frugal {

// |values| < 2^range_bits, spaced 2^-(mantissa - range_bits): in f32 range 12 gives a grid of
// 2^-12 (2.4e-4) up to ±4096; in f64 a grid of 2^-41 up to the same range.
struct FixedPoint {
  int range_bits = 12;
};

// Fraction bits of the grid in dtype t (f32: 24 - range, f64: 53 - range). Throws naming `who`
// unless 1 <= range_bits < the mantissa's bits.
int fixed_point_frac_bits(const FixedPoint& fp, DType t, const std::string& who);

// y = q(x): x rounded to the nearest multiple of 2^-frac, ties to even. Throws naming `who` and
// the element where |q(x)| >= 2^range or x is not finite. y may alias x. On be's device, f32
// or f64.
void fixed_point_round(Backend& be, const Tensor& x, const FixedPoint& fp, Tensor& y,
                       const std::string& who);
// y = a + q(f), or a - q(f) when `subtract`: exact when a lies on the grid and |y| < 2^range.
// Throws naming `who`, the element and the value where either fails (the rebuilt input would no
// longer be bitwise the forward's). y may alias a. On be's device, f32 or f64.
void fixed_point_add(Backend& be, const Tensor& a, const Tensor& f, const FixedPoint& fp,
                     bool subtract, Tensor& y, const std::string& who);

// y = q(x) with a straight-through gradient (dx = dy): the grid's rounding is treated as the
// identity in backward, in the op and in the couplings that round F and G's outputs alike.
class FixedPointOp final : public Op {
 public:
  explicit FixedPointOp(FixedPoint fp) : fp_(fp) {}
  std::string name() const override { return "fixed_point"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  FixedPoint fp_;
};

// Rounds x (f32 or f64) onto the grid of `fp`, in place where the planner allows; backward
// passes dy through unchanged. Put it before the first block of a chain of exact reversible
// blocks (ReversibleOptions::fixed_point), whose input must lie on the grid.
Value fixed_point(Value x, FixedPoint fp = {},
                  std::source_location where = std::source_location::current());

}  // namespace frugal
