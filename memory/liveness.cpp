// Liveness analysis: buffers and their lifetimes from a step description and its ops' roles.
// Over 400 lines on purpose: one Analysis whose passes (values, rebuilds, saved and scratch,
// gradients, aliases) read and extend the same state; the data-parallel buckets, which only
// read the result, live in grad_buckets.cpp.
#include "memory/liveness.h"

#include <algorithm>

#include "core/error.h"
#include "memory/grad_buckets.h"

namespace frugal {

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::input:
      return "input";
    case BufferKind::value:
      return "value";
    case BufferKind::saved:
      return "saved";
    case BufferKind::fwd_scratch:
      return "forward scratch";
    case BufferKind::bwd_scratch:
      return "backward scratch";
    case BufferKind::grad:
      return "grad";
    case BufferKind::grad_temp:
      return "grad (second contribution)";
    case BufferKind::rebuilt:
      return "rebuilt value";
    case BufferKind::grad_bucket:
      return "grad bucket";
  }
  return "?";
}

namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

Buffer make(BufferKind kind, Role role, const TensorMeta& meta) {
  Buffer b;
  b.kind = kind;
  b.role = role;
  b.meta = meta;
  return b;
}

class Analysis {
 public:
  Analysis(const Step& step, const LivenessOptions& opt) : step_(step), opt_(opt) {
    L_.mode = step.mode;
    L_.ops = static_cast<int>(step.ops.size());
    L_.steps = training() ? 2 * L_.ops + 1 : L_.ops + 1;
    for (const StepOp& op : step.ops) L_.roles.push_back(op.roles);
  }

  Liveness run() {
    const size_t nv = step_.values.size(), nops = step_.ops.size();
    L_.value_buffer.assign(nv, -1);
    L_.rebuilt_buffer.assign(nv, -1);
    L_.rebuild_step.assign(nv, -1);
    L_.rebuilt_from.assign(nv, -1);
    L_.op_rebuild_step.assign(nops, -1);
    L_.rebuilds_at.assign(static_cast<size_t>(L_.steps), {});
    L_.rebuild_scratch.assign(nops, -1);
    L_.packed.assign(nops, false);
    L_.unpacked_copies.assign(nv, {});
    rebuilt_reads_.assign(nv, 0);
    L_.first_backward_read.assign(nv, -1);
    L_.grad_buffer.assign(nv, -1);
    L_.update_step.assign(nv, -1);
    L_.saved_buffers.assign(nops, {});
    L_.fwd_scratch.assign(nops, -1);
    L_.bwd_scratch.assign(nops, -1);
    L_.grad_temp_buffers.assign(nops, {});
    if (training() && opt_.forward_only) {
      needs_grad_.assign(nops, {});
      runs_backward_.assign(nops, false);
      for (size_t k = 0; k < nops; ++k)
        L_.grad_temp_buffers[k].assign(step_.ops[k].inputs.size(), -1);
    } else if (training()) {
      find_gradient_flow();
      find_op_rebuilds();
    }
    add_values();
    add_op_buffers();
    if (training() && !opt_.forward_only) add_gradients();
    if (opt_.aliases) choose_aliases();
    return std::move(L_);
  }

 private:
  bool training() const { return L_.mode == Mode::training; }
  int final_step() const { return L_.steps - 1; }
  bool kept(int v) const { return contains(opt_.keep, v); }

  int add(Buffer b) {
    b.bytes = b.meta.bytes();
    L_.buffers.push_back(std::move(b));
    return static_cast<int>(L_.buffers.size()) - 1;
  }

  // Which op input slots receive a gradient, and which ops run a backward at all.
  void find_gradient_flow() {
    const auto& ops = step_.ops;
    needs_grad_.resize(ops.size());
    runs_backward_.assign(ops.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      needs_grad_[k] = step_.input_grads(ops[k]);
      for (bool g : needs_grad_[k]) runs_backward_[k] = runs_backward_[k] || g;
    }
  }

  bool reads_in_backward(int op, int slot) const {
    return training() && runs_backward_[static_cast<size_t>(op)] &&
           backward_reads_input(L_.roles[static_cast<size_t>(op)], slot,
                                needs_grad_[static_cast<size_t>(op)]);
  }

  void add_values() {
    const auto& values = step_.values;
    for (size_t v = 0; v < values.size(); ++v) {
      const StepValue& node = values[v];
      if (node.kind == StepValueKind::param) continue;
      Buffer b;
      b.meta = node.meta;
      b.value = static_cast<int>(v);
      if (node.kind == StepValueKind::input) {
        b.kind = BufferKind::input;
        b.role = Role::input;
        b.first = 0;
        b.last = final_step();
        b.label = node.name;
      } else {
        const int k = node.producer;
        b.kind = BufferKind::value;
        b.role = Role::output;
        b.first = k;
        b.last = k;
        b.label = step_.ops[static_cast<size_t>(k)].name + " " + std::to_string(k) + " out" +
                  (node.output_index ? std::to_string(node.output_index) : "");
      }
      // Forward readers, and backward readers through the roles (and rebuilds of later ops
      // that read it); reads from `from` on go to the rebuilt copy instead: after a reversible
      // block's backward writes it, or from the step before which the producer is rebuilt.
      const int op_rebuild = node.kind == StepValueKind::op_output
                                 ? L_.op_rebuild_step[static_cast<size_t>(node.producer)]
                                 : -1;
      const int block_rebuild = rebuild_step(static_cast<int>(v));
      const int rebuild = op_rebuild >= 0 ? op_rebuild : block_rebuild;
      const int from = op_rebuild >= 0 ? op_rebuild : block_rebuild + 1;
      int rebuilt_last = rebuild;
      std::vector<int> rebuilt_reads;  // the steps that read the rebuilt copy
      auto read_at = [&](int step) {
        if (rebuild >= 0 && step >= from) {
          rebuilt_last = std::max(rebuilt_last, step);
          rebuilt_reads.push_back(step);
          ++rebuilt_reads_[v];
        } else {
          b.last = std::max(b.last, step);
        }
      };
      for (int c : node.consumers) {
        b.last = std::max(b.last, c);
        const StepOp& cn = step_.ops[static_cast<size_t>(c)];
        const int c_rebuild = L_.op_rebuild_step[static_cast<size_t>(c)];
        for (size_t i = 0; i < cn.inputs.size(); ++i) {
          if (cn.inputs[i] != static_cast<int>(v)) continue;
          if (reads_in_backward(c, static_cast<int>(i))) {
            read_at(L_.backward_step(c));
            first_read(static_cast<int>(v), L_.backward_step(c));
          }
          if (c_rebuild >= 0 && rebuild_reads(c, static_cast<int>(i))) read_at(c_rebuild);
        }
      }
      if (node.kind == StepValueKind::op_output) {
        const int k = node.producer;
        if (training() && runs_backward_[static_cast<size_t>(k)] &&
            contains(L_.roles[static_cast<size_t>(k)].backward_reads_outputs, node.output_index)) {
          read_at(L_.backward_step(k));
          first_read(static_cast<int>(v), L_.backward_step(k));
        }
      }
      if (kept(static_cast<int>(v))) b.last = final_step();
      L_.value_buffer[v] = add(b);
      const bool packed = op_rebuild >= 0 && L_.packed[static_cast<size_t>(node.producer)];
      if (packed) {
        add_unpacked_copies(static_cast<int>(v), b.label, std::move(rebuilt_reads));
      } else if (rebuild >= 0) {
        Buffer r = make(BufferKind::rebuilt, Role::output, node.meta);
        r.value = static_cast<int>(v);
        r.first = rebuild;
        r.last = rebuilt_last;
        r.label = b.label + " (rebuilt)";
        L_.rebuilt_buffer[v] = add(std::move(r));
      }
      if (rebuild >= 0) {
        L_.rebuild_step[v] = rebuild;
        L_.rebuilt_from[v] = from;
      }
    }
  }

  // A packed output is unpacked again for each run of backward steps that read it (steps at
  // most one apart), each into a copy of its own that lives over that run only: unpacking
  // reads nothing in the arena, so a copy need not wait for far readers (a block's input read
  // by its shortcut's convolution first and by its first convolution a block later).
  void add_unpacked_copies(int v, const std::string& label, std::vector<int> reads) {
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    const StepValue& node = step_.value(v);
    std::vector<int>& copies = L_.unpacked_copies[static_cast<size_t>(v)];
    for (size_t i = 0; i < reads.size(); ++i) {
      if (i > 0 && reads[i] <= reads[i - 1] + 1) {
        L_.buffers[static_cast<size_t>(copies.back())].last = reads[i];
        continue;
      }
      Buffer r = make(BufferKind::rebuilt, Role::output, node.meta);
      r.value = v;
      r.first = r.last = reads[i];
      r.label = label;
      r.label += " (unpacked";
      if (!copies.empty()) {
        r.label += ' ';
        r.label += std::to_string(copies.size() + 1);
      }
      r.label += ")";
      copies.push_back(add(std::move(r)));
      if (copies.size() > 1) {  // unpacked again there (the first by find_op_rebuilds)
        std::vector<int>& at = L_.rebuilds_at[static_cast<size_t>(reads[i])];
        if (!contains(at, node.producer)) {
          at.push_back(node.producer);
          std::sort(at.begin(), at.end());
        }
      }
    }
    L_.rebuilt_buffer[static_cast<size_t>(v)] = copies.empty() ? -1 : copies.front();
  }

  // The step at which a backward rebuilds value v (the latest op that declares it), or -1.
  int rebuild_step(int v) const {
    if (!training()) return -1;
    int step = -1;
    for (int c : step_.value(v).consumers) {
      const StepOp& cn = step_.ops[static_cast<size_t>(c)];
      if (!runs_backward_[static_cast<size_t>(c)]) continue;
      for (int slot : L_.roles[static_cast<size_t>(c)].rebuilds_inputs)
        if (cn.inputs[static_cast<size_t>(slot)] == v && (step < 0 || L_.backward_step(c) < step))
          step = L_.backward_step(c);
    }
    return step;
  }

  void first_read(int v, int step) {
    int& f = L_.first_backward_read[static_cast<size_t>(v)];
    f = f < 0 ? step : std::min(f, step);
  }

  bool rebuild_reads(int op, int slot) const {
    return !L_.packed[static_cast<size_t>(op)] &&
           contains(L_.roles[static_cast<size_t>(op)].rebuild_reads_inputs, slot);
  }

  // The step before whose backward each op of options.rebuild is rebuilt: the first backward
  // step that reads one of its outputs, directly or through the rebuild of a later op (ops
  // are visited latest first, so those steps are known). Ops with nothing to rebuild for, a
  // kept output or an output a reversible block rebuilds are left out.
  void find_op_rebuilds() {
    std::vector<bool> wanted(step_.ops.size(), false), pack(step_.ops.size(), false);
    for (int k : opt_.rebuild)
      if (k >= 0 && static_cast<size_t>(k) < wanted.size()) wanted[static_cast<size_t>(k)] = true;
    for (int k : opt_.pack)
      if (k >= 0 && static_cast<size_t>(k) < pack.size() && !wanted[static_cast<size_t>(k)] &&
          L_.roles[static_cast<size_t>(k)].sparse_outputs)
        pack[static_cast<size_t>(k)] = true;
    for (int p = L_.ops - 1; p >= 0; --p) {
      const size_t pi = static_cast<size_t>(p);
      if (!(wanted[pi] && L_.roles[pi].rebuildable) && !pack[pi]) continue;
      const StepOp& node = step_.ops[pi];
      int s = -1;
      auto need = [&](int step) { s = s < 0 ? step : std::min(s, step); };
      bool excluded = false;
      for (int v : node.outputs) {
        if (kept(v) || rebuild_step(v) >= 0) excluded = true;
        for (int c : step_.value(v).consumers) {
          const StepOp& cn = step_.ops[static_cast<size_t>(c)];
          for (size_t i = 0; i < cn.inputs.size(); ++i) {
            if (cn.inputs[i] != v) continue;
            if (reads_in_backward(c, static_cast<int>(i))) need(L_.backward_step(c));
            const int c_rebuild = L_.op_rebuild_step[static_cast<size_t>(c)];
            if (c_rebuild >= 0 && rebuild_reads(c, static_cast<int>(i))) need(c_rebuild);
          }
        }
        if (runs_backward_[pi] &&
            contains(L_.roles[pi].backward_reads_outputs, step_.value(v).output_index))
          need(L_.backward_step(p));
      }
      if (excluded || s < 0) continue;
      L_.op_rebuild_step[pi] = s;
      L_.packed[pi] = pack[pi];
    }
    for (int p = 0; p < L_.ops; ++p)
      if (L_.op_rebuild_step[static_cast<size_t>(p)] >= 0)
        L_.rebuilds_at[static_cast<size_t>(L_.op_rebuild_step[static_cast<size_t>(p)])].push_back(
            p);
  }

  void add_op_buffers() {
    const auto& ops = step_.ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Roles& r = L_.roles[k];
      const int ki = static_cast<int>(k);
      const std::string name = ops[k].name + " " + std::to_string(k);
      const bool backward = training() && runs_backward_[k];
      for (size_t s = 0; s < r.saved.size(); ++s) {
        Buffer b = make(BufferKind::saved, Role::saved, r.saved[s]);
        b.op = ki;
        b.index = static_cast<int>(s);
        b.first = ki;
        b.last = backward ? L_.backward_step(ki) : ki;
        if (!L_.packed[k])
          b.last = std::max(b.last, L_.op_rebuild_step[k]);  // a rebuild rewrites it
        b.label = name + " saved" + std::to_string(s);
        L_.saved_buffers[k].push_back(add(std::move(b)));
      }
      // A pass that offers scratch choices gets its buffer even at 0 bytes: the workspace
      // choice (memory/workspace.h) may give it a faster algorithm's scratch in the plan.
      const bool forward_scratch = r.forward_scratch > 0 || !r.forward_choices.empty();
      if (forward_scratch) {
        Buffer b = make(BufferKind::fwd_scratch, Role::scratch, {});
        b.meta = {Shape{static_cast<int64_t>(r.forward_scratch)}, DType::u8};
        b.op = ki;
        b.first = b.last = ki;
        b.label = name + " scratch";
        L_.fwd_scratch[k] = add(std::move(b));
      }
      if (L_.op_rebuild_step[k] >= 0 && !L_.packed[k] && forward_scratch) {
        Buffer b = make(BufferKind::fwd_scratch, Role::scratch, {});
        b.meta = {Shape{static_cast<int64_t>(r.forward_scratch)}, DType::u8};
        b.op = ki;
        b.first = b.last = L_.op_rebuild_step[k];
        b.label = name + " rebuild scratch";
        L_.rebuild_scratch[k] = add(std::move(b));
      }
      if (backward && (r.backward_scratch > 0 || !r.backward_choices.empty())) {
        Buffer b = make(BufferKind::bwd_scratch, Role::scratch, {});
        b.meta = {Shape{static_cast<int64_t>(r.backward_scratch)}, DType::u8};
        b.op = ki;
        b.first = b.last = L_.backward_step(ki);
        b.label = name + " backward scratch";
        L_.bwd_scratch[k] = add(std::move(b));
      }
    }
  }

  // Gradient buffers. In backward order (ops descending, slots ascending) the first writer of
  // d v writes it directly; later contributions go to a one-step temporary and are summed in.
  void add_gradients() {
    const auto& ops = step_.ops;
    const auto& values = step_.values;
    const int n = L_.ops;
    std::vector<int> first_writer_op(values.size(), -1), min_consumer(values.size(), -1);
    for (int k = n - 1; k >= 0; --k) {
      const StepOp& node = ops[static_cast<size_t>(k)];
      L_.grad_temp_buffers[static_cast<size_t>(k)].assign(node.inputs.size(), -1);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (!needs_grad_[static_cast<size_t>(k)][i]) continue;
        const int v = node.inputs[i];
        min_consumer[static_cast<size_t>(v)] = k;
        if (first_writer_op[static_cast<size_t>(v)] < 0) {
          first_writer_op[static_cast<size_t>(v)] = k;
          first_slot_.emplace_back(k, static_cast<int>(i));
          continue;
        }
        Buffer t = make(BufferKind::grad_temp, Role::grad, values[v].meta);
        t.value = v;
        t.op = k;
        t.index = static_cast<int>(i);
        t.first = t.last = L_.backward_step(k);
        t.label = "d " + values[v].name + " (" + std::to_string(k) + "." + std::to_string(i) + ")";
        L_.grad_temp_buffers[static_cast<size_t>(k)][i] = add(std::move(t));
      }
    }
    for (size_t v = 0; v < values.size(); ++v) {
      const StepValue& node = values[v];
      if (!node.requires_grad) continue;
      Buffer g = make(BufferKind::grad, Role::grad, node.meta);
      g.value = static_cast<int>(v);
      // Written first by the backward of its latest consumer, or seeded when backward starts.
      g.first = first_writer_op[v] >= 0 ? L_.backward_step(first_writer_op[v]) : n;
      g.label = "d " + node.name + " " + std::to_string(v);
      if (node.kind == StepValueKind::op_output) {
        g.last = L_.backward_step(node.producer);
      } else if (node.kind == StepValueKind::input) {
        g.last = final_step();
      } else {
        g.role = Role::param_grad;
        if (first_writer_op[v] < 0) continue;  // a parameter this loss does not reach
        int update = (opt_.optimizer && opt_.fuse_optimizer) ? L_.backward_step(min_consumer[v])
                                                             : final_step();
        L_.update_step[v] = update;
        g.last = opt_.keep_param_grads || !opt_.optimizer ? final_step() : update;
      }
      if (kept(static_cast<int>(v))) g.last = final_step();
      L_.grad_buffer[v] = add(std::move(g));
      if (first_writer_op[v] < 0) L_.unwritten_grads.push_back(L_.grad_buffer[v]);
    }
    if (opt_.grad_bucket_bytes > 0) {
      std::vector<int> ready(values.size(), -1);  // where each gradient becomes final
      for (size_t v = 0; v < values.size(); ++v)
        if (min_consumer[v] >= 0) ready[v] = L_.backward_step(min_consumer[v]);
      add_grad_buckets(step_, opt_, ready, L_);
    }
  }

  // In place where the op allows it and nothing reads the input after this op.
  void choose_aliases() {
    const auto& ops = step_.ops;
    std::vector<bool> taken(L_.buffers.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      const StepOp& node = ops[k];
      for (const Alias& a : L_.roles[k].aliases) {
        const int in = L_.value_buffer[static_cast<size_t>(node.inputs[a.input])];
        const int out = L_.value_buffer[static_cast<size_t>(node.outputs[a.output])];
        if (in < 0 || out < 0) continue;
        Buffer& bi = L_.buffers[static_cast<size_t>(in)];
        Buffer& bo = L_.buffers[static_cast<size_t>(out)];
        if (bi.kind != BufferKind::value || taken[in] || bi.last != static_cast<int>(k) ||
            bi.bytes != bo.bytes || bo.alias_of >= 0)
          continue;
        bo.alias_of = L_.alias_root(in);
        taken[in] = true;
      }
    }
    if (!training()) return;
    // A rebuilt output may take the bytes of a rebuilt input read by nothing else.
    for (int q = 0; q < L_.ops; ++q) {
      const size_t qi = static_cast<size_t>(q);
      if (L_.op_rebuild_step[qi] < 0) continue;
      for (const Alias& a : L_.roles[qi].aliases) {
        const int u = ops[qi].inputs[static_cast<size_t>(a.input)];
        const int in = L_.rebuilt_buffer[static_cast<size_t>(u)];
        const int out = L_.rebuilt_buffer[static_cast<size_t>(ops[qi].outputs[a.output])];
        if (in < 0 || out < 0 ||
            L_.rebuild_step[static_cast<size_t>(u)] != L_.op_rebuild_step[qi] ||
            rebuilt_reads_[static_cast<size_t>(u)] != 1 || !rebuild_reads(q, a.input))
          continue;
        Buffer& bi = L_.buffers[static_cast<size_t>(in)];
        Buffer& bo = L_.buffers[static_cast<size_t>(out)];
        if (taken[static_cast<size_t>(in)] || bi.bytes != bo.bytes || bo.alias_of >= 0) continue;
        bo.alias_of = L_.alias_root(in);
        taken[static_cast<size_t>(in)] = true;
      }
    }
    // A reversible block's rebuilt input in place of its output, which dies at its backward.
    for (int k = 0; k < L_.ops; ++k) {
      const size_t ki = static_cast<size_t>(k);
      const int step = L_.backward_step(k);
      for (const Alias& a : L_.roles[ki].rebuild_aliases) {
        const int x = ops[ki].inputs[static_cast<size_t>(a.input)];
        const int r = L_.rebuilt_buffer[static_cast<size_t>(x)];
        if (r < 0 || L_.rebuild_step[static_cast<size_t>(x)] != step) continue;
        const int y = L_.value_at(ops[ki].outputs[static_cast<size_t>(a.output)], step);
        if (y < 0) continue;
        Buffer& by = L_.buffers[static_cast<size_t>(y)];
        Buffer& br = L_.buffers[static_cast<size_t>(r)];
        if (taken[static_cast<size_t>(y)] || by.last != step || by.bytes != br.bytes ||
            br.alias_of >= 0)
          continue;
        br.alias_of = L_.alias_root(y);
        taken[static_cast<size_t>(y)] = true;
      }
    }
    for (auto [k, i] : first_slot_) {
      const StepOp& node = ops[static_cast<size_t>(k)];
      for (const Alias& a : L_.roles[static_cast<size_t>(k)].grad_aliases) {
        if (a.input != i) continue;
        const int gi = L_.grad_buffer[static_cast<size_t>(node.inputs[i])];
        const int go = L_.grad_buffer[static_cast<size_t>(node.outputs[a.output])];
        if (gi < 0 || go < 0) continue;
        Buffer& bi = L_.buffers[static_cast<size_t>(gi)];
        Buffer& bo = L_.buffers[static_cast<size_t>(go)];
        const int step = L_.backward_step(k);
        if (bi.role != Role::grad || bo.role != Role::grad || taken[go] || bo.last != step ||
            bi.first != step || bi.bytes != bo.bytes || bi.alias_of >= 0)
          continue;
        bi.alias_of = L_.alias_root(go);
        taken[go] = true;
      }
    }
    // d x in x's own bytes (Roles::grad_takes_input) where x, and everything sharing its
    // bytes, dies at this backward and the op writes d x first (its latest consumer).
    for (auto [k, i] : first_slot_) {
      if (!opt_.grads_take_inputs) break;
      const StepOp& node = ops[static_cast<size_t>(k)];
      const std::vector<int>& takes = L_.roles[static_cast<size_t>(k)].grad_takes_input;
      if (std::find(takes.begin(), takes.end(), i) == takes.end()) continue;
      const int step = L_.backward_step(k);
      const int gi = L_.grad_buffer[static_cast<size_t>(node.inputs[i])];
      const int xi = L_.value_at(node.inputs[i], step);
      if (gi < 0 || xi < 0) continue;
      Buffer& bg = L_.buffers[static_cast<size_t>(gi)];
      const Buffer& bx = L_.buffers[static_cast<size_t>(xi)];
      if (bg.role != Role::grad || bg.first != step || bg.alias_of >= 0 || taken[xi] ||
          (bx.kind != BufferKind::value && bx.kind != BufferKind::rebuilt) ||
          bx.bytes != bg.bytes || bx.last != step)
        continue;
      const int root = L_.alias_root(xi);
      bool dead = true;  // no buffer of x's bytes outlives this step
      for (size_t b = 0; b < L_.buffers.size() && dead; ++b)
        if (L_.buffers[b].last > step && L_.alias_root(static_cast<int>(b)) == root) dead = false;
      if (!dead) continue;
      bg.alias_of = root;
      taken[xi] = true;
    }
  }

  const Step& step_;
  LivenessOptions opt_;
  Liveness L_;
  std::vector<std::vector<bool>> needs_grad_;
  std::vector<bool> runs_backward_;
  std::vector<std::pair<int, int>> first_slot_;  // (op, slot) writing a gradient directly
  std::vector<int> rebuilt_reads_;               // value id -> reads of its rebuilt copy
};

}  // namespace

Liveness analyze(const Step& step, const LivenessOptions& options) {
  return Analysis(step, options).run();
}

}  // namespace frugal
