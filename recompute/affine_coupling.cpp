// Affine coupling block: the first half's coupling over the shared reversible machinery.
#include "recompute/affine_coupling.h"

namespace frugal {

AffineCouplingOp::AffineCouplingOp(ParamStore& params, DType dtype, const std::string& scope,
                                   HalfNet F, HalfNet G, AffineOptions options)
    : CouplingOp(params, dtype, scope, std::move(F), std::move(G), 2), opt_(options) {
  const TensorMeta probe{Shape{1, 1}, DType::f64}, probe_h{Shape{1, 2}, DType::f64};
  affine_check_shapes(probe, probe_h, opt_, who());  // clamp and min_scale only
}

// y1 = x1 ⊙ s + t, [h_s, t] = f.
void AffineCouplingOp::couple_forward(Backend& be, Tensor& x1y1, const Tensor& f) const {
  affine_apply(be, x1y1, f, opt_, false, x1y1, who());
}

// x1 = (y1 - t) / s;  dx1 = dy1' ⊙ s;  df = [dy1' ⊙ (y1 - t) ⊙ (1 - u²), dy1'].  x1 may be
// y1's memory: affine_backward reads y[i] before it writes x[i].
const Tensor& AffineCouplingOp::couple_backward(Backend& be, const Tensor& y1, const Tensor& f,
                                                Tensor& d1, Tensor& x1, Tensor& df) const {
  affine_backward(be, y1, f, d1, opt_, false, d1, df, &x1, who());
  return df;
}

Value affine_coupling_block(Value x, HalfNet F, HalfNet G, AffineOptions options,
                            std::source_location where) {
  Tape& tape = x.tape();
  std::unique_ptr<AffineCouplingOp> op;
  try {
    op = std::make_unique<AffineCouplingOp>(tape.params(), tape.dtype(),
                                            coupling_scope(tape, "affine_coupling"), std::move(F),
                                            std::move(G), options);
  } catch (const Error& e) {
    throw error_at(where, e);
  }
  return record_coupling(x, std::move(op), where);
}

}  // namespace frugal
