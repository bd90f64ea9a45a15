// Memory budgets for the bundled networks: recording a step, measuring its chain of blocks,
// and fitting a checkpoint schedule to a budget with the real planner as the judge.
#include "train/step_budget.h"
#include "run/plan.h"

#include <algorithm>

#include "core/backend.h"
#include "core/error.h"
#include "memory/layout.h"
#include "models/registry.h"
#include "models/step.h"
#include "recompute/checkpoint.h"

namespace frugal {
namespace {

// A step recorded on its own shape-only store.
struct RecordedStep {
  ParamStore store = ParamStore::shapes_only();
  Tape tape{store};
  std::vector<int> keep;

  explicit RecordedStep(const TrainingStep& s) : tape(store, s.dtype) {
    FRUGAL_CHECK(s.batch > 0, "training step: batch must be positive, got ", s.batch);
    const ModelStep step =
        record_model_step(tape, find_model(s.model), s.batch, Mode::training, s.config);
    keep = {step.loss.id()};
    if (s.keep_logits) keep.insert(keep.end(), {step.logits.id(), step.labels.id()});
  }
};

// Bytes of each alias group alive both at the last forward step and the first backward step
// (what forward leaves for backward), inputs and weight gradients aside.
size_t bytes_across_forward_end(const Liveness& live) {
  const size_t count = live.buffers.size();
  std::vector<int> first(count), last(count);
  std::vector<size_t> bytes(count, 0);
  for (size_t i = 0; i < count; ++i) {
    first[i] = live.buffers[i].first;
    last[i] = live.buffers[i].last;
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t r = static_cast<size_t>(live.alias_root(static_cast<int>(i)));
    first[r] = std::min(first[r], live.buffers[i].first);
    last[r] = std::max(last[r], live.buffers[i].last);
    bytes[r] = std::max(bytes[r], live.buffers[i].bytes);
  }
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const Buffer& b = live.buffers[i];
    if (b.alias_of < 0 && b.kind != BufferKind::input && b.role != Role::param_grad &&
        first[i] < live.ops && last[i] >= live.ops)
      total += bytes[i];
  }
  return total;
}

// One checkpointed segment, measured as the chain's model needs it.
ChainBlock measure_segment(const SubGraph& body, const Backend& backend) {
  ChainBlock b;
  b.input = body.input().meta().bytes();
  b.output = body.output().meta().bytes();
  b.arena = body.arena_bytes(Mode::training, backend);
  for (const Parameter* p : body.parameters()) b.param_grads += p->meta.bytes();
  b.flops = forward_flops(body.tape());
  // As SubGraph plans it: the output kept, weight gradients kept to the end.
  const Layout layout = memory_layout(body.tape(), Mode::training, MemoryMode::planned, backend,
                                      {.keep_param_grads = true,
                                       .keep = {body.output().id()},
                                       .alignment = backend.allocator().alignment()});
  const size_t across = bytes_across_forward_end(layout.live);
  b.held = across > b.output ? across - b.output : 0;
  return b;
}

const Backend& backend_of(const TrainingStep& s) {
  return s.backend ? *s.backend : cpu_backend();
}

// The real planned peak of the step with some runs checkpointed.
PlannedPeak step_peak(const TrainingStep& step) {
  return [step](const std::vector<BlockRun>& runs) {
    TrainingStep s = step;
    s.config.segments = 0;
    s.config.checkpoint_runs = runs;
    return planned_step_peak(s);
  };
}

}  // namespace

size_t planned_step_peak(const TrainingStep& step) {
  RecordedStep r(step);
  const Backend& be = backend_of(step);
  return memory_layout(r.tape, Mode::training, MemoryMode::planned, be,
                       {.optimizer = true,
                        .keep = r.keep,
                        .alignment = be.allocator().alignment(),
                        .workspace_limit = step.workspace_limit,
                        .workspace_growth = step.workspace_growth,
                        .recompute = step.recompute,
                        .pack = step.pack})
      .plan.arena_bytes;
}

double forward_flops(const Tape& tape) {
  double flops = 0;
  for (const OpNode& node : tape.ops()) {
    const std::string name = node.op->name();
    const bool transposed = name == "conv_transpose2d" || name == "conv_transpose3d";
    if (transposed && node.inputs.size() >= 2) {
      // Each input element meets (C, K/g, kh, kw[, kd])'s K/g * window weights: the
      // multiply-adds the adjoint of a convolution with that weight does.
      const Shape& w = tape.value(node.inputs[1]).meta.shape;
      const double inputs = static_cast<double>(tape.value(node.inputs[0]).meta.shape.numel());
      flops += 2.0 * inputs * static_cast<double>(w.numel() / w[0]);
      continue;
    }
    for (int out : node.outputs) {
      const double elements = static_cast<double>(tape.value(out).meta.shape.numel());
      if ((name == "conv2d" || name == "conv3d" || name == "linear") && node.inputs.size() >= 2) {
        // (K, C, R, S), (K, C, kd, kh, kw) or (K, C)
        const Shape& w = tape.value(node.inputs[1]).meta.shape;
        flops += 2.0 * elements * static_cast<double>(w.numel() / w[0]);
      } else {
        flops += elements;
      }
    }
  }
  return flops;
}

namespace {
// forward_flops with each checkpoint op's segment counted in its place.
double inline_flops(const Tape& tape) {
  double flops = forward_flops(tape);
  for (const OpNode& node : tape.ops())
    if (const auto* c = dynamic_cast<const CheckpointOp*>(node.op.get()))
      flops += inline_flops(c->body().tape()) -
               static_cast<double>(c->body().output().meta().shape.numel());
  return flops;
}
// What the checkpoint ops of `tape` run again in backward, their own inner ones included.
double rebuilt_flops(const Tape& tape) {
  double flops = 0;
  for (const OpNode& node : tape.ops())
    if (const auto* c = dynamic_cast<const CheckpointOp*>(node.op.get()))
      flops += inline_flops(c->body().tape()) + rebuilt_flops(c->body().tape());
  return flops;
}
}  // namespace

double inner_checkpoint_flops(const Tape& tape) {
  double flops = 0;
  for (const OpNode& node : tape.ops())
    if (const auto* c = dynamic_cast<const CheckpointOp*>(node.op.get()))
      flops += rebuilt_flops(c->body().tape());
  return flops;
}

std::vector<ChainBlock> measure_chain(const TrainingStep& step) {
  const ModelSpec& spec = find_model(step.model);
  std::string chained;
  for (const ModelSpec& s : model_specs())
    if (s.chain_blocks > 0) chained += (chained.empty() ? "" : ", ") + s.name;
  FRUGAL_CHECK(spec.chain_blocks > 0, "memory budget: ", spec.name,
               " has no chain of blocks to checkpoint (these have: ", chained, ")");
  TrainingStep every = step;
  every.config.segments = 0;
  every.config.checkpoint_runs.clear();
  for (int i = 0; i < spec.chain_blocks; ++i) every.config.checkpoint_runs.push_back({i, i + 1});
  RecordedStep r(every);
  std::vector<ChainBlock> blocks;
  for (const OpNode& node : r.tape.ops())
    if (const auto* c = dynamic_cast<const CheckpointOp*>(node.op.get()))
      blocks.push_back(measure_segment(c->body(), backend_of(step)));
  FRUGAL_CHECK(static_cast<int>(blocks.size()) == spec.chain_blocks, "memory budget: ", spec.name,
               " recorded ", blocks.size(), " checkpoint segments for its ", spec.chain_blocks,
               " blocks");
  return blocks;
}

BudgetSchedule fit_step_budget(const TrainingStep& step, size_t budget) {
  const std::vector<ChainBlock> blocks = measure_chain(step);
  const std::string what = step.model + " batch " + std::to_string(step.batch) + ", " +
                           dtype_name(step.dtype) + " training";
  return fit_memory_budget(blocks, budget, step_peak(step), what, step.checkpoint_levels);
}

BudgetSchedule minimum_step_memory(const TrainingStep& step) {
  BudgetSchedule m = minimum_memory(measure_chain(step), step_peak(step), step.checkpoint_levels);
  m.stored_peak = step_peak(step)({});
  ++m.plans;
  return m;
}

}  // namespace frugal
