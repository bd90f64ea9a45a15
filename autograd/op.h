// Op: one recorded operation. An op infers its output shapes when recorded, declares its
// roles (what backward reads, what it saves, its scratch, which aliases it allows), and
// implements forward and backward against an OpContext that hands it exactly those buffers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/roles.h"
#include "core/tensor.h"

namespace frugal {

// What an op's forward or backward sees. Accessing a buffer the op did not declare for
// backward throws at once, naming the op.
class Communicator;

class OpContext {
 public:
  Backend& backend() const { return *backend_; }
  Mode mode() const { return mode_; }
  bool training() const { return mode_ == Mode::training; }
  // Seed for this op in this step: randomness is a function of (seed(), op stream, index).
  uint64_t seed() const { return seed_; }
  // False while a forward is recomputed: state (BatchNorm running statistics) must not be
  // updated a second time in one step.
  bool update_state() const { return update_state_; }
  // Data parallel with synchronized batch norm (ExecutorOptions::sync_bn_comm): the ranks
  // whose statistics are shared, else null, and the weight of this rank's loss in the global
  // one (its share of the batch).
  Communicator* sync_comm() const { return sync_comm_; }
  double sync_scale() const { return sync_scale_ ? *sync_scale_ : 1.0; }

  const Tensor& input(int i) const;
  Tensor& output(int j) const;
  Tensor& saved(int k) const;
  Tensor& scratch() const;
  bool has_scratch() const { return scratch_ != nullptr && scratch_->defined(); }
  // The scratch the plan gave the op, else an undefined tensor (a pass that needs none).
  Tensor scratch_or_none() const { return has_scratch() ? *scratch_ : Tensor(); }
  // Backward only.
  const Tensor& grad_output(int j) const;
  bool needs_grad_input(int i) const;
  Tensor& grad_input(int i) const;  // throws if !needs_grad_input(i)
  // Where backward writes input i back (declared in Roles::rebuilds_inputs).
  Tensor& rebuilt_input(int i) const;

  // Filled by the executor (or by a test driving an op directly).
  const char* op_name = "?";
  bool backward_pass = false;
  Backend* backend_ = nullptr;
  Mode mode_ = Mode::training;
  uint64_t seed_ = 0;
  bool update_state_ = true;
  Communicator* sync_comm_ = nullptr;
  const double* sync_scale_ = nullptr;
  std::vector<Tensor*> inputs, outputs, saved_, grad_outputs, grad_inputs, rebuilt;
  Tensor* scratch_ = nullptr;

 private:
  Tensor& pick(const std::vector<Tensor*>& v, int i, const char* what) const;
};

class Op {
 public:
  virtual ~Op() = default;
  // Short lowercase name, as in error messages and reports ("conv2d").
  virtual std::string name() const = 0;
  // Called once when the op is recorded: checks the inputs, returns the outputs' metas and
  // keeps whatever geometry forward/backward need. Throws naming the op and the shapes.
  virtual std::vector<TensorMeta> infer(std::span<const TensorMeta> inputs) = 0;
  // Whether input i can carry a gradient (false for labels or running statistics).
  virtual bool differentiable(int input) const { return input >= 0; }
  virtual Roles roles(Mode mode, const Backend& backend) const = 0;
  virtual void forward(const OpContext& ctx) = 0;
  virtual void backward(const OpContext& ctx) = 0;
  // Ops with state updated in forward (BatchNorm running stats) say so: recomputation must
  // not apply that update twice.
  virtual bool updates_state() const { return false; }
  // Ops whose roles say `rebuildable`: writes the outputs again in backward, with the same
  // bits as forward wrote them, from the inputs in Roles::rebuild_reads_inputs (the others are
  // null) and the saved tensors. The context is forward's, with update_state() false and the
  // step's seed. By default the forward itself, which must then rewrite its saved tensors
  // with the bits they hold.
  virtual void rebuild(const OpContext& ctx) { forward(ctx); }
  // Ops whose backward can read either a compact saved encoding (a 1-bit mask) or their own
  // full output say so; the planner picks the output where another op's backward keeps it
  // alive anyway, and the encoding where that lets the output die early.
  virtual bool has_compact_encoding() const { return false; }
  virtual void use_compact_encoding(bool /*compact*/) {}
  virtual bool compact_encoding() const { return false; }  // the encoding in use
  // Stable per-op stream for randomness, set by the tape when recorded (from the op's scope
  // and its count among ops of its kind there).
  uint64_t stream = 0;
};

// The roles of an elementwise op over n elements that may run in place: y may take x's bytes
// and, in training, dx may take dy's; backward reads a 1-bit mask saved in forward (saved(0),
// mask_bytes(n) u8 bytes) or, with `saves_mask` false, the op's own output y.
Roles in_place_mask_roles(Mode mode, int64_t n, bool saves_mask = true);

// In training, marks r rebuildable by forward from inputs `reads` (Roles::rebuildable): an
// elementwise or gathering op reading `read_bytes`, writing `out`, `flops` per output element.
void rebuild_by_forward(Roles& r, Mode mode, std::vector<int> reads, double read_bytes,
                        const TensorMeta& out, double flops_per_element);

// The roles of an elementwise op y = f(x) whose backward reads x (pow, clamp, GELU, ...): in
// training, dx may take dy's bytes and y is rebuildable from x (`flops` per element); in
// inference, y may take x's bytes (nothing reads x again).
Roles input_reading_roles(Mode mode, const TensorMeta& x, double flops_per_element);

}  // namespace frugal
