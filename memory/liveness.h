// Liveness: from a step description (its ops' roles and its mode), every buffer the step needs,
// with its size, role and lifetime [first, last] on one timeline: forward steps 0..n-1; in training
// the backward of op k at step 2n-1-k; then one final step (n in inference, 2n in training: the
// end-of-step optimizer and reading results). Also the aliases (in place) the planner may apply:
// only where the op allows it and nothing reads the input afterwards, backward readers included.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "memory/alias.h"
#include "memory/step.h"

namespace frugal {

enum class BufferKind {
  input,        // network input, fed by the user
  value,        // an op's output
  saved,        // an op's saved extra state
  fwd_scratch,  // forward scratch of one op
  bwd_scratch,  // backward scratch of one op
  grad,         // gradient of a value (params: Role::param_grad)
  grad_temp,    // a second contribution to a gradient, summed into it at once
  rebuilt,      // a value rebuilt in backward for later readers (a reversible block's input,
                // or the output of an op rebuilt before its first backward reader)
  grad_bucket,  // data-parallel training: parameter gradients reduced together across ranks;
                // its members are views into it (Buffer::view_of)
};
const char* buffer_kind_name(BufferKind k);

struct Buffer {
  BufferKind kind = BufferKind::value;
  Role role = Role::output;
  TensorMeta meta;
  size_t bytes = 0;
  int value = -1;           // value id (input, value, grad)
  int op = -1;              // op index (saved, scratch, grad_temp; a rebuild's scratch)
  int index = 0;            // saved slot, or input slot for grad_temp
  int first = 0, last = 0;  // inclusive timeline steps
  int alias_of = -1;        // takes the bytes of this buffer (set only when aliasing is enabled)
  // A view: this buffer's bytes are those of buffer view_of (a gradient bucket) from byte
  // view_offset on. Views are not placed themselves; their owner is.
  int view_of = -1;
  size_t view_offset = 0;
  std::string label;  // "conv2d3 out", for reports and pictures
};

struct LivenessOptions {
  bool aliases = true;            // apply allowed in-place aliases
  bool grads_take_inputs = true;  // with aliases: Roles::grad_takes_input too
  bool fuse_optimizer = true;     // parameter update right after its gradient is final
  bool optimizer = false;         // an optimizer step runs (param grads live until it)
  bool keep_param_grads = false;  // param grads live to the end of the step
  std::vector<int> keep;          // value ids whose buffers (and grads) live to the end
  // Training: ops whose outputs die after their last forward reader and are rebuilt in
  // backward (Roles::rebuildable), just before their first backward reader. Ops that are not
  // rebuildable, have a kept output or whose outputs no backward reads are left out.
  std::vector<int> rebuild;
  // Training: ops whose outputs (Roles::sparse_outputs) die after their last forward reader
  // as those of `rebuild` do, kept packed outside the arena meanwhile and unpacked into their
  // rebuilt copies before their first backward reader (ExecutorOptions::pack): a rebuild that
  // reads nothing in the arena. Ops also in `rebuild` are rebuilt, not packed.
  std::vector<int> pack;
  // Training kernels without a backward (the forward of a sub-graph whose backward runs on
  // another plan): no gradients, and nothing lives past its last forward reader for backward.
  bool forward_only = false;
  // Data-parallel training: > 0 gathers parameter gradients into buckets of about this many
  // bytes (at least one gradient each; one dtype each), in the order their gradients become
  // final, each member at an offset that is a multiple of bucket_alignment. A bucket is
  // reduced across ranks once its last member is final (its ready step) and the updates of its
  // members run once that reduction is done: at the next bucket's ready step with a fused
  // optimizer (one bucket reducing while backward goes on), else at the final step.
  size_t grad_bucket_bytes = 0;
  size_t bucket_alignment = 64;
};

// Parameter gradients reduced together (LivenessOptions::grad_bucket_bytes).
struct GradBucket {
  int buffer = -1;          // the BufferKind::grad_bucket buffer
  std::vector<int> params;  // param value ids, in the order they become final
  int ready_step = 0;       // the reduction starts after this step's backward
  int wait_step = 0;        // and is complete, with the members updated, after this one's
};

struct Liveness {
  Mode mode = Mode::training;
  int ops = 0;    // n
  int steps = 0;  // timeline length: n (inference) or 2n + 1 (training)
  std::vector<Buffer> buffers;
  std::vector<int> value_buffer;     // value id -> buffer, -1 for params
  std::vector<int> grad_buffer;      // value id -> gradient buffer, -1 if none
  std::vector<int> rebuilt_buffer;   // value id -> rebuilt copy, -1 if none
  std::vector<int> rebuild_step;     // value id -> step its rebuild is written, -1 if none
  std::vector<int> rebuilt_from;     // value id -> first step that reads the rebuilt copy
  std::vector<int> op_rebuild_step;  // op -> step before whose backward it is rebuilt, or -1
  std::vector<std::vector<int>> rebuilds_at;  // step -> ops rebuilt there, in tape order
  std::vector<int> rebuild_scratch;           // op -> its rebuild's scratch buffer or -1
  std::vector<bool> packed;  // op -> its outputs are packed, its rebuild an unpack (`pack`)
  // value id -> the copies a packed output is unpacked into, in step order: one per run of
  // backward steps that read it (rebuilt_buffer is the first; rebuilds_at lists the producer
  // at each copy's first step).
  std::vector<std::vector<int>> unpacked_copies;
  // value id -> the first backward step that reads it (a consumer's backward or its
  // producer's), -1 if none: where a rebuild of it would be needed at the latest.
  std::vector<int> first_backward_read;
  std::vector<std::vector<int>> saved_buffers;      // op -> buffers
  std::vector<int> fwd_scratch, bwd_scratch;        // op -> buffer or -1
  std::vector<std::vector<int>> grad_temp_buffers;  // op -> per input slot, buffer or -1
  std::vector<Roles> roles;                         // op -> its roles in this mode
  std::vector<int> unwritten_grads;  // gradient buffers no backward writes: seeded or zeroed
  std::vector<int> update_step;      // param value id -> step of its optimizer update, else -1
  std::vector<GradBucket> buckets;   // data-parallel training only
  std::vector<int> bucket_of;        // param value id -> its bucket, or -1

  int backward_step(int op) const { return 2 * ops - 1 - op; }
  // The buffer that holds value v when read at `step` (its rebuilt copy after a rebuild).
  int value_at(int v, int step) const {
    const size_t i = static_cast<size_t>(v);
    if (rebuilt_buffer[i] < 0 || step < rebuilt_from[i]) return value_buffer[i];
    int at = rebuilt_buffer[i];  // a packed output's: the copy unpacked last before `step`
    for (int c : unpacked_copies[i])
      if (buffers[static_cast<size_t>(c)].first <= step) at = c;
    return at;
  }
  // The copy of packed output v unpacked at `step`, or -1.
  int unpacked_at(int v, int step) const {
    for (int c : unpacked_copies[static_cast<size_t>(v)])
      if (buffers[static_cast<size_t>(c)].first == step) return c;
    return -1;
  }
  int final_step() const { return steps - 1; }
  // The buffer whose bytes buffer b takes: the root of its alias chain (b when unaliased).
  int alias_root(int b) const { return frugal::alias_root(buffers, b); }
};

Liveness analyze(const Step& step, const LivenessOptions& options);

// Data parallel, ZeRO: the bytes of rank `rank`'s chunks (chunk_of over each bucket's
// elements, core/communicator.h) of one optimizer-state tensor per bucket.
size_t bucket_chunk_bytes(const Liveness& live, int ranks, int rank);
// The most parameter-gradient bytes live at once (buckets, or the gradients themselves).
size_t param_grad_peak(const Liveness& live);

}  // namespace frugal
