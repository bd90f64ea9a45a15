// Reversible blocks (RevNet, Gomez et al. 2017): x = [x1, x2] split by channels,
// y1 = couple(x1, F(x2)), y2 = x2 + G(y1), y = [y1, y2]. Backward does not read x: it rebuilds
// x from y (x2 = y2 - G(y1), then x1 from y1 and F(x2)), running F and G forward once more with
// their tapes and reusing that recomputation for the gradients (one recompute per block). The
// rebuilt x is what the block before reads, so in a chain only the last output is stored.
// CouplingOp holds all of that; the additive block (ReversibleOp, couple = x1 + F(x2)) and the
// affine block (recompute/affine_coupling.h) differ only in the first half's coupling.
#pragma once

#include <memory>
#include <optional>
#include <source_location>

#include "layers/fixed_point.h"
#include "recompute/subgraph.h"

namespace frugal {

// A sub-network on one half of the channels.
using HalfNet = SubNet;

class CouplingOp : public Op {
 public:
  // Records F and G on tapes of their own over `params`, named under `scope` ("<scope>/F").
  // F maps a half to `f_factor` halves stacked along channels (1: additive, 2: scale and
  // shift); G maps a half to a half.
  CouplingOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F, HalfNet G,
             int f_factor);
  ~CouplingOp() override;

  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;
  bool updates_state() const override { return true; }

  // The trainable parameters of F and G, in the order they follow x among the op's inputs.
  const std::vector<Parameter*>& parameters() const { return params_; }
  // "<name> '<scope>'": how errors name this block.
  std::string who() const { return name() + " '" + scope_ + "'"; }
  // Op outputs F's and G's backward plans rebuild (SubGraph::set_recompute); set before the
  // op is recorded.
  void set_rebuilds(Recompute r) { rebuilds_ = r; }
  // Whether x takes a gradient (record_coupling sets it): dy's halves are then worked on in
  // dx's memory, else in scratch of their own.
  void set_input_grad(bool grad) { x_grad_ = grad; }

 protected:
  // y1 = couple(x1, f) with f = F(x2), in place: x1y1 holds x1 and receives y1.
  virtual void couple_forward(Backend& be, Tensor& x1y1, const Tensor& f) const = 0;
  // From y1, f = F(x2) and d1 = dy1 + G'(y1)^T dy2: writes x1, turns d1 into dx1 in place and
  // returns d f, F's upstream gradient (d1 itself, or written into df, which has f's shape).
  // x1 and y1 are one memory: read each element of y1 before writing that element of x1.
  virtual const Tensor& couple_backward(Backend& be, const Tensor& y1, const Tensor& f, Tensor& d1,
                                        Tensor& x1, Tensor& df) const = 0;
  // The second half, in place on x2y2 with g = G(y1): y2 = x2 + g in forward, x2 = y2 - g when
  // `rebuild`.
  virtual void couple_second(Backend& be, Tensor& x2y2, const Tensor& g, bool rebuild) const;

 private:
  struct Layout;
  // The scratch of a pass: F's and G's arenas planned for `mode` (training forward only:
  // `forward_only`) and the halves beside them.
  Layout layout(Mode mode, const Backend& backend, bool forward_only = false) const;

  ParamStore& store_;
  Recompute rebuilds_ = Recompute::none;
  bool x_grad_ = true;
  DType dtype_;
  std::string scope_;
  HalfNet f_, g_;
  int f_factor_;
  std::unique_ptr<SubGraph> F_, G_;
  std::vector<Parameter*> params_;
  TensorMeta x_, half_, f_out_;
};

struct ReversibleOptions {
  // Unset: floating-point coupling, as memcnn's: x is rebuilt within rounding, and in f32 a
  // ReLU in F or G fed from a rebuilt value within rounding of 0 can flip (docs/BENCHMARKS.md,
  // reversible (d)). Set: fixed-point coupling (layers/fixed_point.h): F(x2) and G(y1) are
  // rounded onto the grid before they are added, with a straight-through gradient, so x is
  // rebuilt bit for bit and gradients equal the stored twin's (add(x1, fixed_point(F(x2))))
  // bitwise. The block's input must lie on the grid: fixed_point(x) before a chain's first
  // block; an input off the grid or a sum outside its range throws, naming the block.
  std::optional<FixedPoint> fixed_point;
  // Op outputs of F and G that their backward plans rebuild instead of keeping (the step's
  // --recompute; memory/layout.h), with the same bits.
  Recompute rebuilds = Recompute::none;
};

// Additive coupling: y1 = x1 + F(x2), rebuilt as x1 = y1 - F(x2).
class ReversibleOp final : public CouplingOp {
 public:
  ReversibleOp(ParamStore& params, DType dtype, const std::string& scope, HalfNet F, HalfNet G,
               ReversibleOptions options = {})
      : CouplingOp(params, dtype, scope, std::move(F), std::move(G), 1), opt_(options) {}
  std::string name() const override { return "reversible"; }

 protected:
  void couple_forward(Backend& be, Tensor& x1y1, const Tensor& f) const override;
  const Tensor& couple_backward(Backend& be, const Tensor& y1, const Tensor& f, Tensor& d1,
                                Tensor& x1, Tensor& df) const override;
  void couple_second(Backend& be, Tensor& x2y2, const Tensor& g, bool rebuild) const override;

 private:
  // y = a + f, or a - f when `subtract`; on the grid (a + q(f)) when opt_.fixed_point is set.
  void add_half(Backend& be, const Tensor& a, const Tensor& f, bool subtract, Tensor& y) const;

  ReversibleOptions opt_;
};

// Records an additive reversible block over x (N, C, H, W) or (N, C) with C even; F and G map
// (N, C/2, ...) to the same shape. Parameters are named "reversible<k>/F/...".
Value reversible_block(Value x, HalfNet F, HalfNet G, ReversibleOptions options = {},
                       std::source_location where = std::source_location::current());

// A fresh scope for a block of kind `kind` in the tape's current scope ("stage1/reversible2").
std::string coupling_scope(Tape& tape, const std::string& kind);
// Records a coupling op over x and its parameters; shape errors carry `where`.
Value record_coupling(Value x, std::unique_ptr<CouplingOp> op, std::source_location where);

}  // namespace frugal
