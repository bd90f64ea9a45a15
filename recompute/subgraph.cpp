// SubGraph: recording, planning into borrowed memory, parameter gradients.
#include "recompute/subgraph.h"

#include <algorithm>
#include <optional>

namespace frugal {

namespace {
ExecutorOptions options(Mode mode, Value out, bool forward_only, Recompute recompute,
                        bool borrow_input) {
  ExecutorOptions o;
  o.borrow_inputs = borrow_input;
  o.mode = mode;
  o.forward_only = forward_only && mode == Mode::training;
  if (mode == Mode::training && !o.forward_only) o.recompute = recompute;
  o.memory = MemoryMode::planned;
  o.keep = {out};
  o.keep_param_grads = true;
  return o;
}
// Inference, training forward only, training: one plan (and one executor per arena) each.
int plan_key(Mode mode, bool forward_only) {
  return mode == Mode::inference ? 0 : forward_only ? 1 : 2;
}
}  // namespace

SubGraph::SubGraph(ParamStore& params, DType dtype, const std::string& scope, const SubNet& net,
                   const TensorMeta& in) {
  tape_ = std::make_unique<Tape>(params, dtype);
  std::optional<Tape::Scope> s;
  if (!scope.empty()) s.emplace(*tape_, scope);
  in_ = tape_->input("x", in.shape, in.dtype, true);
  out_ = net(in_);
  FRUGAL_CHECK(out_.valid() && &out_.tape() == tape_.get(),
               "sub-graph: the function must return a value it recorded");
}

SubGraph::SubGraph(Tape& parent, const SubNet& net, const TensorMeta& in) {
  tape_ = std::make_unique<Tape>(parent.params(), parent.dtype());
  tape_->continue_naming_from(parent);
  in_ = tape_->input("x", in.shape, in.dtype, true);
  out_ = net(in_);
  FRUGAL_CHECK(out_.valid() && &out_.tape() == tape_.get(),
               "sub-graph: the function must return a value it recorded");
  parent.continue_naming_from(*tape_);
}

std::vector<Parameter*> SubGraph::parameters() const {
  std::vector<Parameter*> ps;
  for (const ValueNode& v : tape_->values())
    if (v.kind == ValueKind::param && v.requires_grad &&
        std::find(ps.begin(), ps.end(), v.param) == ps.end())
      ps.push_back(v.param);
  return ps;
}

size_t SubGraph::arena_bytes(Mode mode, const Backend& backend, bool forward_only) const {
  size_t& bytes = arena_bytes_[{&backend, plan_key(mode, forward_only)}];
  if (bytes == 0)
    bytes = Executor::planned_bytes(*tape_, const_cast<Backend&>(backend),
                                    options(mode, out_, forward_only, recompute_, borrow_input_));
  return bytes;
}

Executor& SubGraph::executor(Mode mode, Backend& backend, const Tensor& arena, bool forward_only,
                             const OpContext* outer) {
  auto& ex = executors_[{arena.storage().get(), arena.offset(), plan_key(mode, forward_only)}];
  if (!ex) {
    ExecutorOptions o = options(mode, out_, forward_only, recompute_, borrow_input_);
    o.arena = arena;
    if (outer) {
      o.sync_bn_comm = outer->sync_comm_;
      o.sync_bn_scale = outer->sync_scale_;
    }
    ex = std::make_unique<Executor>(*tape_, backend, std::move(o));
  }
  return *ex;
}

bool SubGraph::param_grad(Executor& ex, const Parameter* p, Backend& backend, Tensor& dw,
                          bool first) const {
  bool used = false;
  for (size_t v = 0; v < tape_->values().size(); ++v) {
    if (tape_->values()[v].param != p) continue;
    const Tensor& g = ex.grad(Value(tape_.get(), static_cast<int>(v)));
    if (first && !used)
      backend.copy(g, dw);
    else
      backend.accumulate(g, dw);
    used = true;
  }
  return used;
}

Tensor scratch_region(const Tensor& scratch, size_t offset, size_t bytes) {
  return Tensor(scratch.storage(), scratch.offset() + offset, Shape{static_cast<int64_t>(bytes)},
                DType::u8);
}

Tensor scratch_region(const Tensor& scratch, size_t offset, const TensorMeta& meta) {
  return Tensor(scratch.storage(), scratch.offset() + offset, meta.shape, meta.dtype);
}

}  // namespace frugal
