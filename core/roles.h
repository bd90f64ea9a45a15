// Roles: the contract between an op and the planner (what backward reads, what it saves, its
// scratch, which aliases it allows), as plain data. Ops declare them (autograd/op.h); the
// planner reads them from a step description (memory/step.h) and never sees an op.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace frugal {

enum class Mode { inference, training };
const char* mode_name(Mode m);

// Output `output` may take the bytes of input `input` (forward aliases), or the gradient of
// input `input` may take the bytes of the gradient of output `output` (gradient aliases).
struct Alias {
  int output = 0;
  int input = 0;
};

// One way a pass of an op can run, chosen by how much scratch it is given (cuDNN's convolution
// algorithms): the scratch it needs and the time it took when the backend measured it.
struct ScratchChoice {
  size_t bytes = 0;
  double seconds = 0;
  std::string name;  // "implicit precomputed GEMM", for the report
};

// An input that backward reads only to compute another input's gradient (Roles::reads_only_for).
struct ReadFor {
  int input = 0;  // the input read
  int grad = 0;   // the input whose gradient needs it
};

// The contract between an op and the planner (docs/ARCHITECTURE.md, "The roles contract").
struct Roles {
  std::vector<int> backward_reads_inputs;  // inputs backward reads (must stay alive)
  // Inputs of backward_reads_inputs read only for some gradients: such an input stays alive
  // for backward only where one of its listed gradients is wanted. A product's operand is read
  // for the other operand's gradient alone, so x * c with a constant c keeps c and lets x die.
  std::vector<ReadFor> reads_only_for;
  std::vector<int> backward_reads_outputs;  // outputs backward reads
  std::vector<TensorMeta> saved;            // extra state written in forward, read in backward
  size_t forward_scratch = 0;               // bytes, live during forward only
  size_t backward_scratch = 0;              // bytes, live during backward only
  // Where a pass runs faster with more scratch: its choices, scratch ascending and time
  // descending, the first being forward_scratch / backward_scratch. The planner may raise the
  // pass's scratch to a later choice where the arena has room (memory/workspace.h); the op's
  // kernel then runs the fastest way that fits the scratch it is given.
  std::vector<ScratchChoice> forward_choices, backward_choices;
  std::vector<Alias> aliases;       // output j may overwrite input i
  std::vector<Alias> grad_aliases;  // d input i may overwrite d output j
  // d input i may take input i's own bytes where nothing reads input i after this backward:
  // the op reads input i for the last time before it writes its gradient (conv2d, linear:
  // the weight gradient first, then the input gradient over the input).
  std::vector<int> grad_takes_input;
  // Inputs whose value backward rebuilds (reversible blocks): the op does not read them in
  // backward but writes them back, so they may die after forward; later backward readers of
  // that value read the rebuilt copy.
  std::vector<int> rebuilds_inputs;
  // The rebuilt copy of input i may take output j's bytes (the op reads all of output j before
  // it writes input i), where nothing reads output j after this backward.
  std::vector<Alias> rebuild_aliases;
  // Op-level recomputation (training): the op's outputs can be dropped after forward and
  // rebuilt in backward, just before their first backward reader, by Op::rebuild from the
  // inputs listed here (and the op's saved tensors, which it may rewrite with the same bits).
  // A rebuild never updates state (BatchNorm's running statistics) and replays randomness.
  bool rebuildable = false;
  // Rebuilt only under a memory budget that cannot be met otherwise (convolutions, linear
  // layers: a rebuild costs a real share of the step), never by Recompute::cheap.
  bool rebuild_expensive = false;
  std::vector<int> rebuild_reads_inputs;
  double rebuild_flops = 0;  // what one rebuild costs: arithmetic, and bytes read and written
  double rebuild_bytes = 0;
  // Training: the op's outputs are mostly zeros (a ReLU's), worth keeping packed (a bit per
  // element and the nonzero elements, Backend::pack) outside the arena from their last forward
  // reader to their first backward reader (ExecutorOptions::pack). Packing is lossless, so any
  // op could say so; it pays only where zeros are common.
  bool sparse_outputs = false;
};

// Which op outputs planned training drops after forward and rebuilds in backward
// (Roles::rebuildable; baseline never does): none; `cheap`, the rebuildable ops whose rebuild
// lowers the planned arena (memory/rebuild.h), convolutions and linear layers never; `all`,
// every rebuildable op, those too (tests: the rebuilds must give the same bits whatever they
// cost).
enum class Recompute { none, cheap, all };
const char* recompute_name(Recompute r);

// Whether backward reads input `slot` of an op with roles r, given which of its inputs get a
// gradient (grads[i]): in backward_reads_inputs, and not only for gradients nobody wants.
bool backward_reads_input(const Roles& r, int slot, const std::vector<bool>& grads);

// Marks r rebuildable from inputs `reads`, one rebuild costing `flops` arithmetic operations
// and moving `bytes_moved` bytes (read and written).
void set_rebuildable(Roles& r, std::vector<int> reads, double flops, double bytes_moved);

}  // namespace frugal
