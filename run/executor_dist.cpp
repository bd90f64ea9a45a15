// Executor, data parallel: gradient buckets reduced across ranks while backward goes on, the
// fused updates of their parameters, and ZeRO's sharded optimizer state.
#include <algorithm>
#include <chrono>

#include "run/executor.h"

namespace frugal {

size_t default_grad_bucket_bytes(const Tape& tape, int zero) {
  size_t total = 0;
  for (const ValueNode& v : tape.values())
    if (v.param && v.param->trainable) total += v.param->meta.bytes();
  return std::clamp<size_t>(total / (zero > 0 ? 32 : 8), size_t{64} << 10, size_t{25} << 20);
}

// Reductions still in flight (a step that threw) must finish before their memory goes.
void Executor::wait_buckets() noexcept {
  for (CommHandle& h : bucket_work_) try {
      h.wait();
    } catch (const std::exception&) {
    }
}

// Starts the reductions of the buckets whose last gradient became final at `step`, then
// finishes those due at it and updates their parameters (in bucket order).
void Executor::sync_buckets(int step) {
  const auto& buckets = layout_.live.buckets;
  for (size_t b = 0; b < buckets.size(); ++b) {
    if (buckets[b].ready_step != step) continue;
    Tensor& grads = buffers_[static_cast<size_t>(buckets[b].buffer)];
    if (opt_.zero >= 2) {
      const ChunkRange mine = chunk_of(grads.numel(), opt_.comm->size(), opt_.comm->rank());
      Tensor part = grads.elements(mine.begin, mine.size());
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
  // Parameter v's elements in this rank's chunk: [lo, lo + n) of the bucket, from element
  // lo - o of the parameter and lo - mine.begin of the state chunk.
  struct Overlap {
    int64_t o, lo, n;
  };
  auto overlap = [&](int v) {
    const int64_t o = bucket_offset(v);
    const int64_t end = o + tape_.values()[static_cast<size_t>(v)].param->value.numel();
    const int64_t lo = std::max(o, mine.begin);
    return Overlap{o, lo, std::max<int64_t>(std::min(end, mine.end) - lo, 0)};
  };
  if (!shard_m_[b].defined()) {  // the first update, or resumed: from the parameters' state
    for (Tensor* t : {&shard_m_[b], &shard_v_[b]}) {
      if (t == &shard_v_[b] && !adamw) continue;
      *t = Tensor::empty({mine.size()}, grads.dtype(), Role::optimizer_state, alloc_);
      backend_.fill(*t, 0.0);
    }
    for (int v : bucket.params) {
      Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
      const Overlap r = overlap(v);
      for (auto [whole, shard] :
           {std::pair{&p->momentum, &shard_m_[b]}, std::pair{&p->second_moment, &shard_v_[b]}}) {
        if (r.n > 0 && whole->defined() && shard->defined()) {
          Tensor into = shard->elements(r.lo - mine.begin, r.n);
          backend_.copy(whole->elements(r.lo - r.o, r.n), into);
        }
        *whole = Tensor();  // the state lives in the ranks' chunks from now on
      }
    }
  }
  for (int v : bucket.params) {
    const Overlap r = overlap(v);
    if (r.n == 0) continue;
    Tensor w = tape_.values()[static_cast<size_t>(v)].param->value.elements(r.lo - r.o, r.n);
    Tensor m = shard_m_[b].elements(r.lo - mine.begin, r.n);
    if (adamw) {
      Tensor sv = shard_v_[b].elements(r.lo - mine.begin, r.n);
      backend_.adamw_step(w, grads.elements(r.lo, r.n), m, sv, c);
    } else {
      backend_.sgd_step(w, grads.elements(r.lo, r.n), m, c);
    }
    Tensor into = grads.elements(r.lo, r.n);
    backend_.copy(w, into);
  }
  opt_.comm->all_gather(grads.elements(mine.begin, mine.size()), grads).wait();
  for (int v : bucket.params) {
    const Tensor& w = tape_.values()[static_cast<size_t>(v)].param->value;
    Tensor whole = w.elements(0, w.numel());
    backend_.copy(grads.elements(bucket_offset(v), w.numel()), whole);
  }
}

void Executor::gather_optimizer_state() {
  if (opt_.zero < 1 || !opt_.comm) return;
  const auto& buckets = layout_.live.buckets;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const int64_t n = buffers_[static_cast<size_t>(buckets[b].buffer)].numel();
    const ChunkRange mine = chunk_of(n, opt_.comm->size(), opt_.comm->rank());
    for (const Tensor* shard : {&shard_m_[b], &shard_v_[b]}) {
      if (!shard->defined()) continue;  // no update yet, or SGD's second moment
      Tensor whole = Tensor::empty({n}, shard->dtype(), Role::optimizer_state, alloc_);
      Tensor part = whole.elements(mine.begin, mine.size());
      backend_.copy(*shard, part);
      opt_.comm->all_gather(part, whole).wait();
      for (int v : buckets[b].params) {
        Parameter* p = tape_.values()[static_cast<size_t>(v)].param;
        Tensor& state = shard == &shard_m_[b] ? p->momentum : p->second_moment;
        state = Tensor::empty(p->value.shape(), p->value.dtype(), Role::optimizer_state, alloc_);
        Tensor into = state.elements(0, state.numel());
        backend_.copy(whole.elements(bucket_offset(v), state.numel()), into);
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

}  // namespace frugal
