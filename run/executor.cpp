// Executor: memory binding (baseline or planned arena), forward, backward, fused optimizer.
// (Just past 400 lines: binding, the contexts and the passes share the executor's state.)
#include "run/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/rng.h"
#include "run/plan.h"

namespace frugal {

namespace {
LayoutOptions layout_options(const ExecutorOptions& o, size_t alignment, bool inputs_in_arena) {
  LayoutOptions l;
  l.optimizer = o.optimizer.has_value();
  l.keep_param_grads = o.keep_param_grads;
  for (const Value& v : o.keep) l.keep.push_back(v.id());
  l.alignment = alignment;
  l.encodings_as_recorded = o.encodings_as_recorded;
  l.inputs_in_arena = inputs_in_arena;
  l.workspace_limit = o.workspace_limit;
  l.workspace_growth = o.workspace_growth;
  l.recompute = o.recompute;
  l.pack = o.pack;
  l.forward_only = o.forward_only;
  l.rebuild_budget = o.rebuild_budget;
  l.grad_bucket_bytes = o.comm ? o.grad_bucket_bytes : 0;
  return l;
}

}  // namespace

Executor::Executor(Tape& tape, Backend& backend, ExecutorOptions options)
    : Executor(tape, backend, std::move(options), backend.allocator()) {}

Executor::Executor(Tape& tape, Backend& backend, ExecutorOptions options, Allocator& alloc)
    : tape_(tape), backend_(backend), opt_(std::move(options)), alloc_(alloc) {
  FRUGAL_CHECK(tape_.params().materialized(), "executor: the tape's parameter store holds ",
               "shapes only (made for planning); record the model over a real store to run it");
  FRUGAL_CHECK(alloc_.device() == backend_.device(), "executor: the allocator's memory is on ",
               alloc_.device().str(), ", the backend runs on ", backend_.device().str());
  for (const ValueNode& v : tape_.values())
    FRUGAL_CHECK(v.param == nullptr || v.param->value.device() == backend_.device(),
                 "executor: parameter '", v.param->name, "' lives on ",
                 v.param->value.device().str(), ", the backend runs on ", backend_.device().str(),
                 " (make the ParamStore with this backend)");
  FRUGAL_CHECK(!opt_.arena.defined() || opt_.arena.device() == backend_.device(),
               "executor: the borrowed arena lives on ", opt_.arena.device().str(),
               ", the backend runs on ", backend_.device().str());
  for (const Value& v : opt_.keep)
    FRUGAL_CHECK(v.valid() && &v.tape() == &tape_, "executor: a kept value is not on this tape");
  FRUGAL_CHECK(opt_.recompute == Recompute::none ||
                   (opt_.memory == MemoryMode::planned && opt_.mode == Mode::training),
               "executor: recompute '", recompute_name(opt_.recompute),
               "' rebuilds activations for backward in planned memory; this step is ",
               mode_name(opt_.mode), " in ", memory_mode_name(opt_.memory), " memory");
  FRUGAL_CHECK(!opt_.pack || (opt_.memory == MemoryMode::planned && opt_.mode == Mode::training &&
                              !opt_.forward_only),
               "executor: pack keeps ReLU outputs packed for backward in planned memory; this "
               "step is ",
               mode_name(opt_.mode), opt_.forward_only ? " (forward only)" : "", " in ",
               memory_mode_name(opt_.memory), " memory");
  FRUGAL_CHECK(!opt_.pack || backend_.offers_packing(), "executor: pack: no packing kernels on ",
               backend_.device().str(), "; train without packing there");
  FRUGAL_CHECK(opt_.zero == 0 || opt_.comm, "executor: ZeRO stage ", opt_.zero,
               " shards optimizer state over ranks; it needs a communicator");
  if (opt_.comm) {
    FRUGAL_CHECK(opt_.mode == Mode::training && !opt_.forward_only,
                 "executor: a communicator sums gradients; this step has none");
    if (opt_.grad_bucket_bytes == 0)
      opt_.grad_bucket_bytes = default_grad_bucket_bytes(tape_, opt_.zero);
    FRUGAL_CHECK(opt_.zero >= 0 && opt_.zero <= 2, "executor: ZeRO stage ", opt_.zero,
                 " is not 0, 1 or 2");
    grad_scale_ = 1.0 / opt_.comm->size();
  }
  layout_ = memory_layout(
      tape_, opt_.mode, opt_.memory, backend_,
      layout_options(opt_, alloc_.alignment(), opt_.arena.defined() && !opt_.borrow_inputs));
  bind();
}

Executor::~Executor() {
  wait_buckets();
}

size_t Executor::planned_bytes(Tape& tape, Backend& backend, const ExecutorOptions& options,
                               size_t alignment) {
  if (alignment == 0) alignment = backend.allocator().alignment();
  return memory_layout(tape, options.mode, MemoryMode::planned, backend,
                       layout_options(options, alignment, !options.borrow_inputs))
      .plan.arena_bytes;
}

// Gives every buffer memory: its own storage (baseline) or an offset in one arena (planned).
void Executor::bind() {
  const auto& bufs = layout_.live.buffers;
  const bool planned = opt_.memory == MemoryMode::planned;
  buffers_.resize(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Buffer& b = bufs[i];
    if (b.view_of >= 0) continue;                                     // bound below, into its owner
    if (opt_.borrow_inputs && b.kind == BufferKind::input) continue;  // bind_input
    if (!planned || layout_.request[i] < 0) {
      // A pass offering scratch choices has a buffer even at 0 bytes; it needs no storage.
      if (b.bytes == 0 && b.role == Role::scratch) continue;
      auto s = std::make_shared<Storage>(alloc_, b.bytes, b.role);
      held_bytes_ += b.bytes;
      buffers_[i] = Tensor(s, 0, b.meta.shape, b.meta.dtype);
      owned_.push_back(std::move(s));
    }
  }
  if (planned) {
    const Plan& plan = layout_.plan;
    arena_bytes_ = plan.arena_bytes;
    std::shared_ptr<Storage> arena;
    size_t base = 0;
    if (opt_.arena.defined()) {
      FRUGAL_CHECK(opt_.arena.bytes() >= plan.arena_bytes, "executor: the borrowed arena has ",
                   opt_.arena.bytes(), " bytes, the plan needs ", plan.arena_bytes);
      arena = opt_.arena.storage();
      base = opt_.arena.offset();
    } else {
      arena = std::make_shared<Storage>(alloc_, plan.arena_bytes, Role::arena);
      held_bytes_ += plan.arena_bytes;
      owned_.push_back(arena);
    }
    for (size_t i = 0; i < bufs.size(); ++i) {
      if (layout_.request[i] < 0) continue;
      const Buffer& b = bufs[i];
      buffers_[i] = Tensor(arena, base + static_cast<size_t>(layout_.offset(static_cast<int>(i))),
                           b.meta.shape, b.meta.dtype);
    }
  }
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].view_of >= 0) {
      const Tensor& owner = buffers_[static_cast<size_t>(bufs[i].view_of)];
      buffers_[i] = Tensor(owner.storage(), owner.offset() + bufs[i].view_offset,
                           bufs[i].meta.shape, bufs[i].meta.dtype);
    }
  bucket_work_.resize(layout_.live.buckets.size());
  shard_m_.resize(layout_.live.buckets.size());
  shard_v_.resize(layout_.live.buckets.size());
  param_values_.resize(tape_.values().size());
  for (size_t v = 0; v < tape_.values().size(); ++v)
    if (const Parameter* p = tape_.values()[v].param) param_values_[v] = p->value;
  for (const OpNode& node : tape_.ops()) names_.push_back(node.op->name());
  rebuild_ctx_.resize(static_cast<size_t>(layout_.live.ops));
  packed_.resize(static_cast<size_t>(layout_.live.ops));
  for (int k = 0; k < layout_.live.ops; ++k) {
    forward_ctx_.push_back(context(k, Pass::forward));
    if (opt_.mode == Mode::training && !opt_.forward_only)
      backward_ctx_.push_back(context(k, Pass::backward));
    if (layout_.live.op_rebuild_step[static_cast<size_t>(k)] >= 0 &&
        !layout_.live.packed[static_cast<size_t>(k)])
      rebuild_ctx_[static_cast<size_t>(k)] = context(k, Pass::rebuild);
  }
  starts_at_.assign(static_cast<size_t>(layout_.live.steps), {});
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].kind != BufferKind::input && bufs[i].alias_of < 0 && bufs[i].view_of < 0)
      starts_at_[static_cast<size_t>(bufs[i].first)].push_back(static_cast<int>(i));
}

Tensor& Executor::input(Value v) {
  FRUGAL_CHECK(v.valid() && &v.tape() == &tape_ && tape_.value(v.id()).kind == ValueKind::input,
               "executor: value ", v.id(), " is not an input of this tape");
  return buffers_[static_cast<size_t>(layout_.live.value_buffer[static_cast<size_t>(v.id())])];
}

void Executor::bind_input(Value v, const Tensor& t) {
  FRUGAL_CHECK(opt_.borrow_inputs, "executor: bind_input needs ExecutorOptions::borrow_inputs");
  Tensor& slot = input(v);
  const Buffer& b =
      layout_.live
          .buffers[static_cast<size_t>(layout_.live.value_buffer[static_cast<size_t>(v.id())])];
  FRUGAL_CHECK(t.defined() && t.meta() == b.meta && t.device() == backend_.device(),
               "executor: input '", tape_.value(v.id()).name, "' is ", b.meta.shape, " ",
               dtype_name(b.meta.dtype), " on ", backend_.device().str(), ", bound to ", t.shape(),
               " ", dtype_name(t.dtype()), " on ", t.device().str());
  slot = t;  // contexts point at this slot: every op reads the bound tensor
}

void Executor::set_input(Value v, const Tensor& host) {
  Tensor& t = input(v);
  FRUGAL_CHECK(host.dtype() == t.dtype(), "executor: input '", tape_.value(v.id()).name, "' holds ",
               dtype_name(t.dtype()), ", got ", dtype_name(host.dtype()), " data ", host.shape(),
               " (convert the batch to ", dtype_name(t.dtype()), ")");
  FRUGAL_CHECK(host.meta() == t.meta(), "executor: input '", tape_.value(v.id()).name, "' is ",
               t.shape(), " ", dtype_name(t.dtype()), ", got ", host.shape(), " ",
               dtype_name(host.dtype()), " (record the model again for another shape)");
  backend_.copy_to_device(host, t);
}

const Tensor& Executor::value(Value v) const {
  const size_t id = static_cast<size_t>(v.id());
  if (tape_.values().at(id).kind == ValueKind::param) return param_values_[id];
  return buffers_[static_cast<size_t>(layout_.live.value_buffer[id])];
}

const Tensor& Executor::grad(Value v) const {
  const int b = layout_.live.grad_buffer.at(static_cast<size_t>(v.id()));
  FRUGAL_CHECK(b >= 0, "executor: value ", v.id(), " ('", tape_.value(v.id()).name,
               "') has no gradient");
  return buffers_[static_cast<size_t>(b)];
}

uint64_t Executor::step_seed() const {
  return fixed_seed_ ? *fixed_seed_ : random_bits(opt_.seed, 0x5eed, step_);
}

void Executor::poison(Tensor& t) {
  if (t.dtype() == DType::f32 || t.dtype() == DType::f64)
    backend_.fill(t, std::numeric_limits<double>::quiet_NaN());
  else
    backend_.fill(t, 0xA5);  // not NaN-able: a recognisable pattern
}

void Executor::start_lifetime(int step) {
  if (!opt_.poison) return;
  for (int b : starts_at_[static_cast<size_t>(step)]) poison(buffers_[static_cast<size_t>(b)]);
}

OpContext Executor::context(int k, Pass pass) {
  const OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  const Roles& r = layout_.live.roles[static_cast<size_t>(k)];
  const bool backward = pass == Pass::backward, rebuild = pass == Pass::rebuild;
  OpContext c;
  c.op_name = names_[static_cast<size_t>(k)].c_str();
  c.backward_pass = backward;
  c.backend_ = &backend_;
  c.mode_ = opt_.mode;
  c.sync_comm_ = opt_.sync_bn_comm;
  c.sync_scale_ = opt_.sync_bn_scale ? opt_.sync_bn_scale : &grad_scale_;
  const int step = backward  ? layout_.live.backward_step(k)
                   : rebuild ? layout_.live.op_rebuild_step[static_cast<size_t>(k)]
                             : k;
  auto tensor_of = [&](int v) -> Tensor* {
    if (tape_.value(v).kind == ValueKind::param) return &param_values_[static_cast<size_t>(v)];
    return &buffers_[static_cast<size_t>(layout_.live.value_at(v, step))];
  };
  auto buffer = [&](int b) -> Tensor* {
    return b >= 0 ? &buffers_[static_cast<size_t>(b)] : nullptr;
  };
  auto declared = [](const std::vector<int>& slots, size_t i) {
    return std::find(slots.begin(), slots.end(), static_cast<int>(i)) != slots.end();
  };
  const std::vector<bool> grads = tape_.input_grads(node);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const bool visible = backward  ? backward_reads_input(r, static_cast<int>(i), grads)
                         : rebuild ? declared(r.rebuild_reads_inputs, i)
                                   : true;
    c.inputs.push_back(visible ? tensor_of(node.inputs[i]) : nullptr);
  }
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    const bool visible = !backward || declared(r.backward_reads_outputs, j);
    // A rebuild writes the rebuilt copies (tensor_of at the rebuild step).
    c.outputs.push_back(visible ? tensor_of(node.outputs[j]) : nullptr);
  }
  for (int b : layout_.live.saved_buffers[static_cast<size_t>(k)]) c.saved_.push_back(buffer(b));
  c.scratch_ = buffer(backward  ? layout_.live.bwd_scratch[static_cast<size_t>(k)]
                      : rebuild ? layout_.live.rebuild_scratch[static_cast<size_t>(k)]
                                : layout_.live.fwd_scratch[static_cast<size_t>(k)]);
  if (backward) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const bool rebuilds = std::find(r.rebuilds_inputs.begin(), r.rebuilds_inputs.end(),
                                      static_cast<int>(i)) != r.rebuilds_inputs.end();
      const int rb = layout_.live.rebuilt_buffer[static_cast<size_t>(node.inputs[i])];
      c.rebuilt.push_back(rebuilds && rb >= 0 &&
                                  layout_.live.rebuild_step[static_cast<size_t>(node.inputs[i])] ==
                                      step
                              ? buffer(rb)
                              : nullptr);
    }
    for (int out : node.outputs)
      c.grad_outputs.push_back(buffer(layout_.live.grad_buffer[static_cast<size_t>(out)]));
    const auto& temps = layout_.live.grad_temp_buffers[static_cast<size_t>(k)];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      Tensor* g = nullptr;
      if (grads[i])
        g = temps[i] >= 0 ? buffer(temps[i])
                          : buffer(layout_.live.grad_buffer[static_cast<size_t>(node.inputs[i])]);
      c.grad_inputs.push_back(g);
    }
  }
  return c;
}

template <typename F>
void Executor::timed(double& slot, F&& f) {
  if (!opt_.profile) return f();
  const auto start = std::chrono::steady_clock::now();
  f();
  backend_.synchronize();
  slot += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Executor::reset_op_times() {
  op_times_.assign(tape_.ops().size(), OpTimes{});
  other_times_ = {};
  profiled_steps_ = 0;
}

void Executor::forward() {
  const int n = layout_.live.ops;
  forward_done_ = false;  // until this forward completes (a throw leaves no half step)
  if (opt_.borrow_inputs)
    for (size_t v = 0; v < tape_.values().size(); ++v)
      FRUGAL_CHECK(tape_.values()[v].kind != ValueKind::input ||
                       buffers_[static_cast<size_t>(layout_.live.value_buffer[v])].defined(),
                   "executor: input '", tape_.values()[v].name, "' is borrowed and not bound");
  if (opt_.check_finite) check_finite_before_forward();
  if (op_times_.size() != tape_.ops().size()) reset_op_times();
  if (opt_.profile) backend_.synchronize();  // the step's own time starts here
  for (int k = 0; k < n; ++k) {
    start_lifetime(k);
    OpContext& c = forward_ctx_[static_cast<size_t>(k)];
    c.seed_ = step_seed();
    c.update_state_ = update_state_;
    timed(op_times_[static_cast<size_t>(k)].forward_s,
          [&] { tape_.ops()[static_cast<size_t>(k)].op->forward(c); });
    if (opt_.check_finite) check_finite_after(k, false);
    if (layout_.live.packed[static_cast<size_t>(k)])
      timed(op_times_[static_cast<size_t>(k)].forward_s, [&] { pack_outputs(k); });
  }
  forward_done_ = true;
  if (opt_.mode == Mode::inference) ++step_, profiled_steps_ += opt_.profile;
}

void Executor::backward(Value loss) {
  FRUGAL_CHECK(loss.valid() && loss.shape().numel() == 1, "executor: backward(loss) needs a ",
               "one-element loss, got ", loss.shape());
  if (!one_.defined() || one_.meta() != loss.meta()) {
    one_ = Tensor::empty(loss.shape(), loss.dtype(), Role::grad, alloc_);
    backend_.fill(one_, 1.0);
  }
  std::pair<Value, Tensor> seed{loss, one_};
  backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
}

void Executor::backward(std::span<const std::pair<Value, Tensor>> seeds) {
  FRUGAL_CHECK(opt_.mode == Mode::training, "executor: backward in inference mode");
  FRUGAL_CHECK(!opt_.forward_only, "executor: backward on a forward-only executor");
  FRUGAL_CHECK(forward_done_, "executor: backward before forward");
  const int n = layout_.live.ops;
  for (int s = n; s < 2 * n; ++s) {
    start_lifetime(s);
    if (s == n) {
      // Gradients nobody writes (the loss, unused outputs) start at zero, then the seeds.
      for (int b : layout_.live.unwritten_grads)
        backend_.fill(buffers_[static_cast<size_t>(b)], 0.0);
      for (const auto& [v, t] : seeds) {
        FRUGAL_CHECK(
            v.valid() && &v.tape() == &tape_ &&
                std::count(layout_.live.unwritten_grads.begin(), layout_.live.unwritten_grads.end(),
                           layout_.live.grad_buffer[static_cast<size_t>(v.id())]) == 1,
            "executor: a backward seed must be a value with a gradient that no op's ",
            "backward writes (value ", v.id(), ")");
        Tensor& g = const_cast<Tensor&>(grad(v));
        FRUGAL_CHECK(g.meta() == t.meta(), "executor: seed for value ", v.id(), " is ", t.shape(),
                     ", expected ", g.shape());
        if (t.device() == backend_.device())
          backend_.copy(t, g);
        else
          backend_.copy_to_device(t, g);  // a seed from the host
      }
    }
    for (int k : layout_.live.rebuilds_at[static_cast<size_t>(s)]) {
      if (layout_.live.packed[static_cast<size_t>(k)]) {
        timed(op_times_[static_cast<size_t>(k)].rebuild_s, [&] { unpack_outputs(k, s); });
        continue;
      }
      OpContext& c = rebuild_ctx_[static_cast<size_t>(k)];
      c.seed_ = step_seed();
      c.update_state_ = false;
      timed(op_times_[static_cast<size_t>(k)].rebuild_s,
            [&] { tape_.ops()[static_cast<size_t>(k)].op->rebuild(c); });
    }
    run_backward_step(2 * n - 1 - s);
    timed(other_times_.update_s, [&] { sync_buckets(s); });
  }
  start_lifetime(layout_.live.final_step());
  timed(other_times_.update_s, [&] {
    sync_buckets(layout_.live.final_step());
    for (size_t v = 0; v < layout_.live.update_step.size(); ++v)
      if (layout_.live.update_step[v] == layout_.live.final_step() &&
          !bucketed(static_cast<int>(v)))
        optimizer_update(static_cast<int>(v));
  });
  forward_done_ = false;
  ++step_;
  profiled_steps_ += opt_.profile;
}

size_t Executor::packed_bytes() const {
  size_t bytes = 0;
  for (const PackedOutputs& p : packed_)
    for (const std::shared_ptr<Storage>& m : p.memory)
      if (m) bytes += m->bytes();
  return bytes;
}

// Op k's outputs, just written, into memory of their own (ExecutorOptions::pack): the memory
// an earlier step packed them into where it is large enough, else new memory (the old
// released first).
void Executor::pack_outputs(int k) {
  const OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  PackedOutputs& p = packed_[static_cast<size_t>(k)];
  p.memory.resize(node.outputs.size());
  p.packed.assign(node.outputs.size(), Tensor());
  for (size_t j = 0; j < node.outputs.size(); ++j) {
    const Tensor& y = buffers_[static_cast<size_t>(
        layout_.live.value_buffer[static_cast<size_t>(node.outputs[j])])];
    const int64_t values = backend_.pack_counts(y, pack_counts_);
    const int64_t bytes = frugal::packed_bytes(y.numel(), values, y.dtype());
    std::shared_ptr<Storage>& m = p.memory[j];
    if (!m || m->bytes() < static_cast<size_t>(bytes)) {
      m.reset();
      m = std::make_shared<Storage>(alloc_, static_cast<size_t>(bytes), Role::saved);
    }
    p.packed[j] = Tensor(m, 0, Shape{bytes}, DType::u8);
    backend_.pack(y, pack_counts_, p.packed[j]);
  }
}

// Op k's packed outputs into the copies unpacked at step s (Liveness::unpacked_copies: one
// per run of backward steps that read an output). The packed outputs stay for later copies.
void Executor::unpack_outputs(int k, int s) {
  const OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  PackedOutputs& p = packed_[static_cast<size_t>(k)];
  FRUGAL_CHECK(p.packed.size() == node.outputs.size(), "executor: op ", k, " (",
               names_[static_cast<size_t>(k)], ") has no packed outputs to unpack");
  for (size_t j = 0; j < node.outputs.size(); ++j)
    if (const int b = layout_.live.unpacked_at(node.outputs[j], s); b >= 0)
      backend_.unpack(p.packed[j], buffers_[static_cast<size_t>(b)]);
}

void Executor::run_backward_step(int k) {
  OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  OpContext& c = backward_ctx_[static_cast<size_t>(k)];
  bool any = false;
  for (Tensor* g : c.grad_inputs) any = any || g != nullptr;
  if (!any) return;
  c.seed_ = step_seed();
  c.update_state_ = update_state_;
  OpTimes& times = op_times_[static_cast<size_t>(k)];
  timed(times.backward_s, [&] { node.op->backward(c); });
  if (opt_.check_finite) check_finite_after(k, true);
  // Second contributions to a gradient, summed in slot order.
  const auto& temps = layout_.live.grad_temp_buffers[static_cast<size_t>(k)];
  timed(times.backward_s, [&] {
    for (size_t i = 0; i < temps.size(); ++i) {
      if (temps[i] < 0) continue;
      const int g = layout_.live.grad_buffer[static_cast<size_t>(node.inputs[i])];
      backend_.accumulate(buffers_[static_cast<size_t>(temps[i])],
                          buffers_[static_cast<size_t>(g)]);
    }
  });
  const int step = layout_.live.backward_step(k);
  timed(times.update_s, [&] {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      const bool repeated =
          std::find(node.inputs.begin(), node.inputs.begin() + i, v) != node.inputs.begin() + i;
      if (!repeated && layout_.live.update_step[static_cast<size_t>(v)] == step && !bucketed(v))
        optimizer_update(v);
    }
  });
}

void Executor::optimizer_update(int v) {
  if (!opt_.optimizer) return;
  Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
  const OptimizerConfig& c = *opt_.optimizer;
  const bool adamw = c.kind == OptimizerKind::adamw;
  auto state = [&](Tensor& t) {
    if (t.defined()) return;
    t = Tensor::empty(p->value.shape(), p->value.dtype(), Role::optimizer_state, alloc_);
    backend_.fill(t, 0.0);
  };
  state(p->momentum);
  if (adamw) state(p->second_moment);
  const Tensor& dw =
      buffers_[static_cast<size_t>(layout_.live.grad_buffer[static_cast<size_t>(v)])];
  if (adamw)
    backend_.adamw_step(p->value, dw, p->momentum, p->second_moment, c);
  else
    backend_.sgd_step(p->value, dw, p->momentum, c);
  if (!opt_.check_finite) return;
  const std::string bad = non_finite(p->value);
  FRUGAL_CHECK(bad.empty(), "check_finite: the ", adamw ? "AdamW" : "SGD", " update (lr ", c.lr,
               ") of parameter '", p->name, "' wrote ", bad, ", the first NaN or inf of step ",
               step_ + 1);
}

}  // namespace frugal
