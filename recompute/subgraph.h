// SubGraph: a one-input, one-output sub-network recorded on a tape of its own over the
// model's parameters, run by executors planned into memory an op lends them (its scratch).
// Ops that recompute in backward (reversible blocks, checkpoint segments) are built on it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/tape.h"
#include "run/executor.h"

namespace frugal {

using SubNet = std::function<Value(Value)>;

class SubGraph {
 public:
  // Records `net` over an input of `in`'s shape under `scope`. Throws if net returns nothing.
  SubGraph(ParamStore& params, DType dtype, const std::string& scope, const SubNet& net,
           const TensorMeta& in);
  // Records `net` with the names it would get inline on `parent` (whose name counters then
  // advance as if it had been recorded there).
  SubGraph(Tape& parent, const SubNet& net, const TensorMeta& in);

  Value input() const { return in_; }
  Value output() const { return out_; }
  // The sub-network's own tape.
  Tape& tape() const { return *tape_; }
  // Trainable parameters, each once, in recording order.
  std::vector<Parameter*> parameters() const;
  // Bytes of a planned arena for this mode (the input included unless borrowed), cached per
  // backend and mode;
  // `forward_only`: a training forward with no backward after it (ExecutorOptions).
  size_t arena_bytes(Mode mode, const Backend& backend, bool forward_only = false) const;
  // The executor planned into `arena` (created on first use for this memory and plan); with
  // `outer`, the context of the op that runs it, whose synchronized batch norm (data parallel,
  // OpContext::sync_comm) the sub-graph's batch norms share.
  Executor& executor(Mode mode, Backend& backend, const Tensor& arena, bool forward_only = false,
                     const OpContext* outer = nullptr);
  // Op outputs the training (backward) plan rebuilds (memory/layout.h); set before planning.
  void set_recompute(Recompute r) { recompute_ = r; }
  // The input takes no bytes of the arena: each run binds a tensor its op holds
  // (Executor::bind_input) instead of copying it in; set before planning.
  void set_borrow_input(bool borrow) { borrow_input_ = borrow; }
  // Adds (or, when `first`, copies) d parameter into `dw`; returns false if this sub-graph
  // does not use the parameter.
  bool param_grad(Executor& ex, const Parameter* p, Backend& backend, Tensor& dw, bool first) const;

 private:
  std::unique_ptr<Tape> tape_;
  Value in_, out_;
  Recompute recompute_ = Recompute::none;
  bool borrow_input_ = false;
  mutable std::map<std::pair<const Backend*, int>, size_t> arena_bytes_;
  // By the arena's storage, offset and mode (a device address is never read on the host).
  std::map<std::tuple<const Storage*, size_t, int>, std::unique_ptr<Executor>> executors_;
};

// A region of `scratch`: `bytes` u8 at `offset`, or a tensor of `meta` there.
Tensor scratch_region(const Tensor& scratch, size_t offset, size_t bytes);
Tensor scratch_region(const Tensor& scratch, size_t offset, const TensorMeta& meta);

}  // namespace frugal
