// Data-parallel gradient buckets: parameter gradients packed, in the order they become final,
// into planned buffers that are reduced across ranks as one.
#include "memory/grad_buckets.h"

#include <algorithm>

#include "core/communicator.h"

namespace frugal {

void add_grad_buckets(const Step& step, const LivenessOptions& options, std::span<const int> ready,
                      Liveness& L) {
  const auto& values = step.values;
  std::vector<int> params;
  for (size_t v = 0; v < values.size(); ++v)
    if (values[v].kind == StepValueKind::param && L.grad_buffer[v] >= 0 && ready[v] >= 0)
      params.push_back(static_cast<int>(v));
  auto at = [&](int v) { return static_cast<size_t>(v); };
  std::stable_sort(params.begin(), params.end(),
                   [&](int a, int b) { return ready[at(a)] < ready[at(b)]; });
  const size_t align = std::max<size_t>(options.bucket_alignment, 1);
  auto aligned = [&](size_t b) { return (b + align - 1) / align * align; };
  auto grad = [&](int v) -> Buffer& { return L.buffers[at(L.grad_buffer[at(v)])]; };
  L.bucket_of.assign(values.size(), -1);
  // A bucket is reduced while the next one fills (it is waited for at the next one's ready
  // step), so a rank's gradient memory peaks where buckets overlap. A gradient joins the open
  // bucket only while that bucket stays within the cap and, with the closed buckets still live
  // at its first step, or with the next gradient (which overlaps it if that one is large),
  // within two caps; a gradient larger than the cap has a bucket of its own, and the small
  // buckets around it hold one gradient each.
  const size_t cap = options.grad_bucket_bytes;
  size_t bytes = 0;
  auto live_at = [&](int s, int open_ready) {  // closed buckets' bytes live at step s
    size_t sum = 0;
    for (size_t j = 0; j + 1 < L.buckets.size(); ++j) {
      const int last = j + 2 < L.buckets.size() ? L.buckets[j + 1].ready_step : open_ready;
      if (last >= s) sum += L.buffers[at(L.buckets[j].buffer)].bytes;
    }
    return sum;
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const int v = params[i];
    const Buffer& g = grad(v);
    bool join = !L.buckets.empty() && bytes + g.bytes <= cap &&
                L.buffers[at(L.buckets.back().buffer)].meta.dtype == g.meta.dtype;
    if (join && bytes > 0) {
      const size_t next = i + 1 < params.size() ? grad(params[i + 1]).bytes : 0;
      const int first = std::min(L.buffers[at(L.buckets.back().buffer)].first, g.first);
      join = live_at(first, ready[at(v)]) + bytes + g.bytes <= 2 * cap &&
             bytes + g.bytes + next <= 2 * cap;
    }
    if (!join) {
      Buffer b;
      b.kind = BufferKind::grad_bucket;
      b.role = Role::param_grad;
      b.meta = g.meta;
      b.first = g.first;
      b.label = "grad bucket " + std::to_string(L.buckets.size());
      L.buffers.push_back(std::move(b));
      GradBucket fresh;
      fresh.buffer = static_cast<int>(L.buffers.size()) - 1;
      L.buckets.push_back(std::move(fresh));
      bytes = 0;
    }
    GradBucket& k = L.buckets.back();
    Buffer& b = L.buffers[at(k.buffer)];
    Buffer& m = grad(v);
    m.view_of = k.buffer;
    m.view_offset = bytes;
    bytes = aligned(bytes + m.bytes);
    b.bytes = bytes;
    b.first = std::min(b.first, m.first);
    k.params.push_back(v);
    k.ready_step = ready[at(v)];
    L.bucket_of[at(v)] = static_cast<int>(L.buckets.size()) - 1;
  }
  // A bucket is waited for (and its parameters updated) when the next one starts reducing,
  // with a fused optimizer; otherwise at the final step.
  const bool fused = options.optimizer && options.fuse_optimizer && !options.keep_param_grads;
  const auto& keep = options.keep;
  for (size_t i = 0; i < L.buckets.size(); ++i) {
    GradBucket& k = L.buckets[i];
    Buffer& b = L.buffers[at(k.buffer)];
    b.meta =
        TensorMeta{Shape({static_cast<int64_t>(b.bytes / dtype_size(b.meta.dtype))}), b.meta.dtype};
    k.wait_step = fused && i + 1 < L.buckets.size() ? L.buckets[i + 1].ready_step : L.final_step();
    b.last = k.wait_step;
    for (int v : k.params) {
      Buffer& m = grad(v);
      if (std::find(keep.begin(), keep.end(), v) == keep.end()) m.last = k.wait_step;
      b.last = std::max(b.last, m.last);
      if (options.optimizer) L.update_step[at(v)] = k.wait_step;
    }
  }
}

size_t bucket_chunk_bytes(const Liveness& live, int ranks, int rank) {
  size_t bytes = 0;
  for (const GradBucket& b : live.buckets) {
    const Buffer& buffer = live.buffers[static_cast<size_t>(b.buffer)];
    bytes += static_cast<size_t>(chunk_of(buffer.meta.shape.numel(), ranks, rank).size()) *
             dtype_size(buffer.meta.dtype);
  }
  return bytes;
}

size_t param_grad_peak(const Liveness& live) {
  std::vector<long long> delta(static_cast<size_t>(live.steps) + 1, 0);
  for (const Buffer& b : live.buffers)
    if (b.role == Role::param_grad && b.view_of < 0 && b.alias_of < 0) {
      delta[static_cast<size_t>(b.first)] += static_cast<long long>(b.bytes);
      delta[static_cast<size_t>(b.last) + 1] -= static_cast<long long>(b.bytes);
    }
  long long live_bytes = 0;
  size_t peak = 0;
  for (long long d : delta) peak = std::max(peak, static_cast<size_t>(live_bytes += d));
  return peak;
}

}  // namespace frugal
