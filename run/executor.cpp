// Executor: memory binding (baseline or planned arena), forward, backward, fused optimizer.
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
  l.recompute = o.recompute;
  l.forward_only = o.forward_only;
  l.rebuild_budget = o.rebuild_budget;
  l.grad_bucket_bytes = o.comm ? o.grad_bucket_bytes : 0;
  return l;
}

// Elements [begin, end) of t's storage from t's first element, as a 1-D tensor.
Tensor flat_part(const Tensor& t, int64_t begin, int64_t end) {
  return Tensor(t.storage(), t.offset() + static_cast<size_t>(begin) * dtype_size(t.dtype()),
                {end - begin}, t.dtype());
}

}  // namespace

size_t default_grad_bucket_bytes(const Tape& tape, int zero) {
  size_t total = 0;
  for (const ValueNode& v : tape.values())
    if (v.param && v.param->trainable) total += v.param->meta.bytes();
  return std::clamp<size_t>(total / (zero > 0 ? 32 : 8), size_t{64} << 10, size_t{25} << 20);
}

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
  FRUGAL_CHECK(opt_.zero == 0 || opt_.comm, "executor: ZeRO stage ", opt_.zero,
               " shards optimizer state over ranks; it needs a communicator");
  FRUGAL_CHECK(!opt_.sync_batch_norm || opt_.comm,
               "executor: synchronized batch norm shares statistics over ranks; it needs a "
               "communicator");
  if (opt_.comm) {
    FRUGAL_CHECK(opt_.mode == Mode::training && !opt_.forward_only,
                 "executor: a communicator sums gradients; this step has none");
    if (opt_.grad_bucket_bytes == 0)
      opt_.grad_bucket_bytes = default_grad_bucket_bytes(tape_, opt_.zero);
    FRUGAL_CHECK(opt_.zero >= 0 && opt_.zero <= 2, "executor: ZeRO stage ", opt_.zero,
                 " is not 0, 1 or 2");
    grad_scale_ = 1.0 / opt_.comm->size();
  }
  layout_ = memory_layout(tape_, opt_.mode, opt_.memory, backend_,
                          layout_options(opt_, alloc_.alignment(), opt_.arena.defined()));
  bind();
}

Executor::~Executor() {
  wait_buckets();
}

// Reductions still in flight (a step that threw) must finish before their memory goes.
void Executor::wait_buckets() noexcept {
  for (CommHandle& h : bucket_work_) try {
      h.wait();
    } catch (const std::exception&) {
    }
}

size_t Executor::planned_bytes(Tape& tape, Backend& backend, const ExecutorOptions& options,
                               size_t alignment) {
  if (alignment == 0) alignment = backend.allocator().alignment();
  return memory_layout(tape, options.mode, MemoryMode::planned, backend,
                       layout_options(options, alignment, true))
      .plan.arena_bytes;
}

// Gives every buffer memory: its own storage (baseline) or an offset in one arena (planned).
void Executor::bind() {
  const auto& bufs = layout_.live.buffers;
  const bool planned = opt_.memory == MemoryMode::planned;
  buffers_.resize(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    const Buffer& b = bufs[i];
    if (b.view_of >= 0) continue;  // bound below, into its owner
    if (!planned || layout_.request[i] < 0) {
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
  for (int k = 0; k < layout_.live.ops; ++k) {
    forward_ctx_.push_back(context(k, Pass::forward));
    if (opt_.mode == Mode::training && !opt_.forward_only)
      backward_ctx_.push_back(context(k, Pass::backward));
    if (layout_.live.op_rebuild_step[static_cast<size_t>(k)] >= 0)
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
  c.sync_comm_ = opt_.sync_batch_norm ? opt_.comm : opt_.sync_bn_comm;
  c.sync_scale_ = opt_.sync_batch_norm ? &grad_scale_ : opt_.sync_bn_scale;
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
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const bool visible = backward  ? declared(r.backward_reads_inputs, i)
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
      if (node.op->differentiable(static_cast<int>(i)) && tape_.value(node.inputs[i]).requires_grad)
        g = temps[i] >= 0 ? buffer(temps[i])
                          : buffer(layout_.live.grad_buffer[static_cast<size_t>(node.inputs[i])]);
      c.grad_inputs.push_back(g);
    }
  }
  return c;
}

void Executor::forward() {
  const int n = layout_.live.ops;
  if (opt_.check_finite) check_finite_before_forward();
  for (int k = 0; k < n; ++k) {
    start_lifetime(k);
    OpContext& c = forward_ctx_[static_cast<size_t>(k)];
    c.seed_ = step_seed();
    c.update_state_ = update_state_;
    tape_.ops()[static_cast<size_t>(k)].op->forward(c);
    if (opt_.check_finite) check_finite_after(k, false);
  }
  forward_done_ = true;
  if (opt_.mode == Mode::inference) ++step_;
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
      OpContext& c = rebuild_ctx_[static_cast<size_t>(k)];
      c.seed_ = step_seed();
      c.update_state_ = false;
      tape_.ops()[static_cast<size_t>(k)].op->rebuild(c);
    }
    run_backward_step(2 * n - 1 - s);
    sync_buckets(s);
  }
  start_lifetime(layout_.live.final_step());
  sync_buckets(layout_.live.final_step());
  for (size_t v = 0; v < layout_.live.update_step.size(); ++v)
    if (layout_.live.update_step[v] == layout_.live.final_step() && !bucketed(static_cast<int>(v)))
      optimizer_update(static_cast<int>(v));
  forward_done_ = false;
  ++step_;
}

void Executor::run_backward_step(int k) {
  OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  OpContext& c = backward_ctx_[static_cast<size_t>(k)];
  bool any = false;
  for (Tensor* g : c.grad_inputs) any = any || g != nullptr;
  if (!any) return;
  c.seed_ = step_seed();
  c.update_state_ = update_state_;
  node.op->backward(c);
  if (opt_.check_finite) check_finite_after(k, true);
  // Second contributions to a gradient, summed in slot order.
  const auto& temps = layout_.live.grad_temp_buffers[static_cast<size_t>(k)];
  for (size_t i = 0; i < temps.size(); ++i) {
    if (temps[i] < 0) continue;
    const int g = layout_.live.grad_buffer[static_cast<size_t>(node.inputs[i])];
    backend_.accumulate(buffers_[static_cast<size_t>(temps[i])], buffers_[static_cast<size_t>(g)]);
  }
  const int step = layout_.live.backward_step(k);
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int v = node.inputs[i];
    const bool repeated =
        std::find(node.inputs.begin(), node.inputs.begin() + i, v) != node.inputs.begin() + i;
    if (!repeated && layout_.live.update_step[static_cast<size_t>(v)] == step && !bucketed(v))
      optimizer_update(v);
  }
}

// Data-parallel: starts the reductions of the buckets whose last gradient became final at
// `step`, then finishes those due at it and updates their parameters (in bucket order).
void Executor::sync_buckets(int step) {
  const auto& buckets = layout_.live.buckets;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].ready_step != step) continue;
    Tensor& grads = buffers_[static_cast<size_t>(buckets[b].buffer)];
    if (opt_.zero >= 2) {
      const ChunkRange mine = chunk_of(grads.numel(), opt_.comm->size(), opt_.comm->rank());
      Tensor part = bucket_part(b, mine.begin, mine.end);
      bucket_work_[b] = opt_.comm->reduce_scatter_sum(grads, part, grad_scale_);
    } else {
      bucket_work_[b] = opt_.comm->allreduce_sum(grads, grad_scale_);
    }
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].wait_step != step) continue;
    const auto start = std::chrono::steady_clock::now();
    bucket_work_[b].wait();
    comm_wait_seconds_ +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (opt_.zero >= 1 && opt_.optimizer) {
      sharded_update(b);
      continue;
    }
    for (int v : buckets[b].params)
      if (layout_.live.update_step[static_cast<size_t>(v)] == step) optimizer_update(v);
  }
}

// Elements [begin, end) of bucket b's buffer, as a 1-D tensor.
Tensor Executor::bucket_part(size_t b, int64_t begin, int64_t end) {
  const Tensor& t = buffers_[static_cast<size_t>(layout_.live.buckets[b].buffer)];
  return flat_part(t, begin, end);
}

// Parameter v's first element in its bucket.
int64_t Executor::bucket_offset(int v) const {
  const Buffer& g =
      layout_.live.buffers[static_cast<size_t>(layout_.live.grad_buffer[static_cast<size_t>(v)])];
  return static_cast<int64_t>(g.view_offset / dtype_size(g.meta.dtype));
}

// ZeRO: this rank updates the parameter elements in its chunk of bucket b with its chunk of
// the optimizer state, writes them into that chunk of the bucket, gathers every rank's chunk
// and copies the parameters back out.
void Executor::sharded_update(size_t b) {
  const GradBucket& bucket = layout_.live.buckets[b];
  Tensor& grads = buffers_[static_cast<size_t>(bucket.buffer)];
  const ChunkRange mine = chunk_of(grads.numel(), opt_.comm->size(), opt_.comm->rank());
  const OptimizerConfig& c = *opt_.optimizer;
  const bool adamw = c.kind == OptimizerKind::adamw;
  // This rank's elements of parameter v: [lo, hi) in bucket coordinates (empty if none).
  auto overlap = [&](int v) {
    const int64_t o = bucket_offset(v);
    const int64_t n = tape_.values()[static_cast<size_t>(v)].param->value.numel();
    return std::pair<int64_t, int64_t>{std::max(o, mine.begin), std::min(o + n, mine.end)};
  };
  if (!shard_m_[b].defined()) {  // the first update, or resumed: from the parameters' state
    for (Tensor* t : {&shard_m_[b], &shard_v_[b]}) {
      if (t == &shard_v_[b] && !adamw) continue;
      *t = Tensor::empty({mine.size()}, grads.dtype(), Role::optimizer_state, alloc_);
      backend_.fill(*t, 0.0);
    }
    for (int v : bucket.params) {
      Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
      const auto [lo, hi] = overlap(v);
      const int64_t o = bucket_offset(v);
      if (lo < hi && p->momentum.defined()) {
        Tensor m = flat_part(shard_m_[b], lo - mine.begin, hi - mine.begin);
        backend_.copy(flat_part(p->momentum, lo - o, hi - o), m);
      }
      if (lo < hi && adamw && p->second_moment.defined()) {
        Tensor sv = flat_part(shard_v_[b], lo - mine.begin, hi - mine.begin);
        backend_.copy(flat_part(p->second_moment, lo - o, hi - o), sv);
      }
      p->momentum = Tensor();  // the state lives in the ranks' chunks from now on
      p->second_moment = Tensor();
    }
  }
  for (int v : bucket.params) {
    const auto [lo, hi] = overlap(v);
    if (lo >= hi) continue;
    const int64_t o = bucket_offset(v);
    Tensor w = flat_part(tape_.values()[static_cast<size_t>(v)].param->value, lo - o, hi - o);
    const Tensor g = flat_part(grads, lo, hi);
    Tensor m = flat_part(shard_m_[b], lo - mine.begin, hi - mine.begin);
    if (adamw) {
      Tensor sv = flat_part(shard_v_[b], lo - mine.begin, hi - mine.begin);
      backend_.adamw_step(w, g, m, sv, c);
    } else {
      backend_.sgd_step(w, g, m, c);
    }
    Tensor into = bucket_part(b, lo, hi);
    backend_.copy(w, into);
  }
  const Tensor part = bucket_part(b, mine.begin, mine.end);
  opt_.comm->all_gather(part, grads).wait();
  for (int v : bucket.params) {
    Tensor& w = tape_.values()[static_cast<size_t>(v)].param->value;
    const int64_t o = bucket_offset(v);
    Tensor whole = flat_part(w, 0, w.numel());
    backend_.copy(bucket_part(b, o, o + w.numel()), whole);
  }
}

void Executor::gather_optimizer_state() {
  if (opt_.zero < 1 || !opt_.comm) return;
  const auto& buckets = layout_.live.buckets;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (!shard_m_[b].defined()) continue;  // no update yet: nothing to gather
    const Tensor& grads = buffers_[static_cast<size_t>(buckets[b].buffer)];
    const ChunkRange mine = chunk_of(grads.numel(), opt_.comm->size(), opt_.comm->rank());
    for (int which = 0; which < 2; ++which) {
      const Tensor& shard = which == 0 ? shard_m_[b] : shard_v_[b];
      if (!shard.defined()) continue;
      Tensor whole = Tensor::empty({grads.numel()}, grads.dtype(), Role::optimizer_state, alloc_);
      Tensor part = flat_part(whole, mine.begin, mine.end);
      backend_.copy(shard, part);
      opt_.comm->all_gather(part, whole).wait();
      for (int v : buckets[b].params) {
        Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
        Tensor& state = which == 0 ? p->momentum : p->second_moment;
        state = Tensor::empty(p->value.shape(), p->value.dtype(), Role::optimizer_state, alloc_);
        const int64_t o = bucket_offset(v);
        Tensor into = flat_part(state, 0, state.numel());
        backend_.copy(flat_part(whole, o, o + state.numel()), into);
      }
    }
  }
}

void Executor::release_gathered_state() {
  if (opt_.zero < 1 || !opt_.comm) return;
  for (const GradBucket& b : layout_.live.buckets)
    for (int v : b.params) {
      Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
      p->momentum = Tensor();
      p->second_moment = Tensor();
    }
}

size_t Executor::optimizer_state_bytes() const {
  size_t bytes = 0;
  for (const std::vector<Tensor>* shards : {&shard_m_, &shard_v_})
    for (const Tensor& s : *shards)
      if (s.defined()) bytes += s.bytes();
  for (const ValueNode& v : tape_.values())
    if (v.param)
      for (const Tensor* s : {&v.param->momentum, &v.param->second_moment})
        if (s->defined()) bytes += s->bytes();
  return bytes;
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

// "nan at element 7 [0, 1, 3] of [2, 2, 4]" for t's first NaN or +-inf, "" when t is finite.
// The element is read through the backend (one element copied to the host).
std::string Executor::non_finite(const Tensor& t) {
  const int64_t i = backend_.first_non_finite(t);
  if (i < 0) return "";
  const size_t size = dtype_size(t.dtype());
  Tensor one = Tensor::empty({1}, t.dtype());
  backend_.copy_to_host(
      Tensor(t.storage(), t.offset() + static_cast<size_t>(i) * size, {1}, t.dtype()), one);
  const Shape& s = t.shape();
  std::vector<int64_t> at(static_cast<size_t>(s.rank()));
  for (int64_t r = s.rank() - 1, rest = i; r >= 0; --r) {
    at[static_cast<size_t>(r)] = rest % s[static_cast<int>(r)];
    rest /= s[static_cast<int>(r)];
  }
  const double x = element_as_double(one, 0);
  const char* value = std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";  // a NaN's sign is noise
  return detail::concat(value, " at element ", i, " ", Shape(at), " of ", s);
}

void Executor::check_finite_before_forward() {
  for (size_t v = 0; v < tape_.values().size(); ++v) {
    const ValueNode& node = tape_.values()[v];
    if (node.kind == ValueKind::op_output ||
        (node.kind == ValueKind::input && layout_.live.value_buffer[v] < 0))
      continue;
    const std::string bad = non_finite(value(Value(&tape_, static_cast<int>(v))));
    FRUGAL_CHECK(bad.empty(),
                 "check_finite: ", node.kind == ValueKind::param ? "parameter '" : "input '",
                 node.name, "' holds ", bad, " before forward (step ", step_ + 1, ")");
  }
}

// Op k's outputs and saved tensors after its forward, or the input gradients it wrote in its
// backward (a second contribution to a gradient is checked before it is added).
void Executor::check_finite_after(int k, bool backward) {
  const OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  const OpContext& c = (backward ? backward_ctx_ : forward_ctx_)[static_cast<size_t>(k)];
  auto check = [&](const Tensor* t, const char* slot, size_t j, int v) {
    if (t == nullptr) return;
    const std::string bad = non_finite(*t);
    if (bad.empty()) return;
    throw Error(detail::concat("check_finite: op ", k, " '", names_[static_cast<size_t>(k)], "' (",
                               node.where, ") ", backward ? "backward" : "forward", " wrote ", bad,
                               " to ", slot, j, v >= 0 ? " ('" + tape_.value(v).name + "')" : "",
                               ", the first NaN or inf of step ", step_ + 1));
  };
  if (backward) {
    for (size_t i = 0; i < c.grad_inputs.size(); ++i)
      check(c.grad_inputs[i], "d input ", i, node.inputs[i]);
    return;
  }
  for (size_t j = 0; j < c.outputs.size(); ++j) check(c.outputs[j], "output ", j, node.outputs[j]);
  for (size_t j = 0; j < c.saved_.size(); ++j) check(c.saved_[j], "saved tensor ", j, -1);
}

}  // namespace frugal
