// Executor: binds a tape, a memory layout (baseline: every buffer its own memory for the
// whole step; planned: one arena with offsets from the planner) and a backend, and runs
// forward, backward and the optimizer step. Results are bitwise equal in every memory mode.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "autograd/tape.h"
#include "core/communicator.h"
#include "core/error.h"
#include "memory/layout.h"

namespace frugal {

struct ExecutorOptions {
  Mode mode = Mode::training;
  MemoryMode memory = MemoryMode::baseline;
  // Fill every buffer with NaN when its lifetime starts (tests: an undeclared read fails).
  bool poison = false;
  uint64_t seed = 0;  // randomness (dropout) is a function of (seed, step, op)
  // Values readable after forward/backward: their buffers (and gradients) live to the end.
  std::vector<Value> keep = {};
  // Keep every parameter gradient until the end of the step (tests); otherwise with an
  // optimizer set, the planned mode frees each gradient right after its update.
  bool keep_param_grads = false;
  std::optional<OptimizerConfig> optimizer = std::nullopt;  // optimizer applied during backward
  // Saved encodings: chosen by the mode (baseline: full outputs, as Torch's modules; planned:
  // compact where that lets a tensor die), or left as recorded (tests of each encoding).
  bool encodings_as_recorded = false;
  // Planned mode: plan into this memory instead of allocating (a region of an outer plan's
  // scratch, for ops that run sub-graphs); inputs are then planned into it too.
  Tensor arena = {};
  // Look for NaN and +-inf through the backend: inputs and parameters before forward, each
  // op's outputs after its forward, its input gradients after its backward, each parameter
  // after its SGD update. The first one found throws, naming the op, the pass, the tensor and
  // the element (steps counted from 1). Sub-graphs run by an op (recompute/) are not checked
  // inside.
  bool check_finite = false;
  // The most scratch one op pass may take where more buys speed (cuDNN's workspace): within it,
  // each pass gets the fastest choice the planned arena has room for (memory/workspace.h).
  size_t workspace_limit = std::numeric_limits<size_t>::max();
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
  // Planned training: which ops' outputs die after forward and are rebuilt in backward
  // (memory/layout.h's Recompute), with results bitwise equal to not rebuilding them.
  Recompute recompute = Recompute::none;
  // Training mode without backward: the forward of a sub-graph whose backward runs on another
  // executor (checkpoint segments, reversible blocks) needs training kernels (batch
  // statistics, dropout) but no gradient buffers, and no tensor kept for a backward.
  bool forward_only = false;
  // Planned training: rebuild op outputs until the arena fits this many bytes (LayoutOptions::
  // rebuild_budget; convolutions too where nothing cheaper fits); 0: no budget.
  size_t rebuild_budget = 0;
  // Planned training: ReLU outputs that backward reads (Roles::sparse_outputs) leave the arena
  // after their last forward reader; each is packed right after its forward into memory of
  // its own (a bit per element and its nonzero elements, a ReLU's 31 bits each, Backend::pack,
  // Role::saved, as many bytes as its zeros leave) and unpacked into the arena before its first
  // backward reader. Nothing is recomputed and the step keeps its bits. The packed bytes depend on
  // the data; their memory stays from step to step (reused where large enough, grown where not),
  // which the step's peak, at the end of forward where every packed output is live, counts anyway,
  // up to how much an op's largest packed size so far exceeds this step's.
  bool pack = false;
  // Data-parallel training: each parameter gradient is summed over this communicator's ranks
  // (every rank's scaled by grad_scale first: set_grad_scale, 1/size by default) before its
  // update. The gradients live in buckets (planned buffers; each gradient a view into one)
  // whose reduction starts as soon as their last gradient is final and overlaps the rest of
  // backward; the updates of a bucket's parameters run once its reduction is done. Null: one
  // process. Every rank must record the same model.
  Communicator* comm = nullptr;
  // Bytes per gradient bucket; 0: default_grad_bucket_bytes(tape, zero).
  size_t grad_bucket_bytes = 0;
  // Data parallel, ZeRO: 0 every rank updates every parameter; 1 each rank holds the optimizer
  // state of, and updates, only its chunk of each bucket (chunk_of over the bucket's elements),
  // then the updated parameters are gathered from every rank; 2 as 1 with the gradients
  // reduce-scattered (each rank receives only its chunk's sum) instead of all-reduced. The
  // weights are the same bits at every level.
  int zero = 0;
  // Data parallel: the ranks batch norm shares its statistics with (all-reduced sums in
  // forward and backward; usually `comm`), else each rank's own; and this rank's share of the
  // loss, read at each step (null: this executor's set_grad_scale; a sub-graph run by an op of
  // a data-parallel step passes its outer executor's).
  Communicator* sync_bn_comm = nullptr;
  const double* sync_bn_scale = nullptr;
  // Inputs take no memory of their own: bind_input hands each one a tensor its caller holds
  // (a sub-graph reading a half its op keeps anyway) before forward.
  bool borrow_inputs = false;
  // Time each op's passes (Executor::op_times): wall clock, the backend synchronized after each
  // pass so that a device's work lands on the op that queued it (which costs a device some
  // speed: a profile, not a timing).
  bool profile = false;
};

// One op's time over the steps profiled (ExecutorOptions::profile), in seconds: its forward,
// its backward (with the sums of second gradient contributions), its rebuilds in backward
// (recompute), and the optimizer updates of the parameters whose gradients it finished.
struct OpTimes {
  double forward_s = 0, backward_s = 0, rebuild_s = 0, update_s = 0;
  double total() const { return forward_s + backward_s + rebuild_s + update_s; }
};

// The gradient bucket size an executor with a communicator uses when none is given: an eighth
// of the tape's trainable parameter bytes (ZeRO 1 and 2: a 32nd, since a rank's gradients,
// at most two buckets, then weigh against 1/N of the optimizer state), within
// [64 KiB, 25 MiB] (PyTorch DDP's cap).
size_t default_grad_bucket_bytes(const Tape& tape, int zero = 0);

class Executor {
 public:
  // Binds memory from the backend's allocator, or from `alloc`, which must be memory of the
  // backend's device (as must the tape's parameters: a ParamStore made for this backend).
  Executor(Tape& tape, Backend& backend, ExecutorOptions options);
  Executor(Tape& tape, Backend& backend, ExecutorOptions options, Allocator& alloc);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // The memory of input `v` (on the backend's device); write the batch into it before
  // forward(), through the backend where it is not host memory.
  Tensor& input(Value v);
  // Copies host memory into input `v` through the backend.
  void set_input(Value v, const Tensor& host);
  // With ExecutorOptions::borrow_inputs: input `v` reads `t` itself (same shape and dtype, on
  // the backend's device), which must hold its bytes until backward is done.
  void bind_input(Value v, const Tensor& t);

  void forward();
  // d loss = 1 for a one-element loss, then backward in reverse tape order; applies the
  // optimizer as each parameter's gradient becomes final. Ends the step.
  void backward(Value loss);
  // Backward from explicit upstream gradients (gradient checks), in host memory or on the
  // backend's device.
  void backward(std::span<const std::pair<Value, Tensor>> seeds);

  // A value's tensor; for values not in options.keep only valid while it is live.
  const Tensor& value(Value v) const;
  // Gradient of a kept value, an input with requires_grad, or a parameter (with
  // keep_param_grads or in baseline mode).
  const Tensor& grad(Value v) const;

  const Liveness& liveness() const { return layout_.live; }
  const Layout& layout() const { return layout_; }
  const ExecutorOptions& options() const { return opt_; }
  uint64_t step() const { return step_; }
  // Sets the step counter (randomness replays per step; resume continues a saved run).
  void set_step(uint64_t step) { step_ = step; }
  // Every op of this step sees exactly `seed` as OpContext::seed() (a sub-graph run by an op
  // draws what the op's own step draws).
  void set_step_seed(uint64_t seed) { fixed_seed_ = seed; }
  // While false, forward does not update state (a recomputation within one step).
  void set_update_state(bool update) { update_state_ = update; }
  // Bytes of a borrowed planned arena for these options (inputs included unless borrowed),
  // without allocating; alignment 0: the backend allocator's.
  static size_t planned_bytes(Tape& tape, Backend& backend, const ExecutorOptions& options,
                              size_t alignment = 0);
  // Changes the optimizer's settings between steps (learning-rate schedules). Only an
  // executor built with an optimizer has one to change.
  void set_optimizer(const OptimizerConfig& optimizer) {
    FRUGAL_CHECK(opt_.optimizer.has_value(),
                 "executor: set_optimizer on an executor without an optimizer");
    opt_.optimizer = optimizer;
  }
  // Bytes held by this executor (arena or per-buffer storage, and packed outputs' memory),
  // excluding parameters.
  size_t memory_bytes() const { return held_bytes_ + packed_bytes(); }
  // ExecutorOptions::pack: the bytes of the memory the packed outputs are held in now.
  size_t packed_bytes() const;
  size_t arena_bytes() const { return arena_bytes_; }
  // Data-parallel training: the factor this rank's gradients take before the sum over ranks
  // (b_r / B for a global batch B of which this rank holds b_r samples).
  void set_grad_scale(double scale) { grad_scale_ = scale; }
  // Seconds backward spent waiting for gradient reductions, summed over steps.
  double comm_wait_seconds() const { return comm_wait_seconds_; }
  // ZeRO: gathers every rank's optimizer-state chunks into the parameters' own state tensors
  // (Parameter::momentum, second_moment), for a checkpoint; a collective, so every rank calls
  // it. release_gathered_state() frees those copies again. Without ZeRO both do nothing.
  void gather_optimizer_state();
  void release_gathered_state();
  // Bytes of optimizer state this executor's updates hold (whole, or this rank's chunks).
  size_t optimizer_state_bytes() const;
  // With ExecutorOptions::profile: each op's times (tape order) summed over the steps since
  // the last reset, and what ran outside any op (the updates at the step's end, waiting for
  // gradient buckets); reset_op_times() starts again (after a warm-up step).
  const std::vector<OpTimes>& op_times() const { return op_times_; }
  const OpTimes& other_times() const { return other_times_; }
  int profiled_steps() const { return profiled_steps_; }
  void reset_op_times();

 private:
  void bind();
  void start_lifetime(int step);
  void run_backward_step(int op_index);
  void pack_outputs(int k);
  void unpack_outputs(int k, int s);
  void optimizer_update(int value_id);
  void sync_buckets(int step);
  void sharded_update(size_t bucket);
  int64_t bucket_offset(int value_id) const;
  bool bucketed(int value_id) const {
    const auto& of = layout_.live.bucket_of;
    return static_cast<size_t>(value_id) < of.size() && of[static_cast<size_t>(value_id)] >= 0;
  }
  void wait_buckets() noexcept;
  void check_finite_before_forward();
  void check_finite_after(int op_index, bool backward);
  std::string non_finite(const Tensor& t);
  void poison(Tensor& t);
  uint64_t step_seed() const;
  enum class Pass { forward, backward, rebuild };
  OpContext context(int op_index, Pass pass);

  Tape& tape_;
  Backend& backend_;
  ExecutorOptions opt_;
  Allocator& alloc_;
  Layout layout_;
  std::vector<Tensor> buffers_;                  // one per liveness buffer
  std::vector<std::vector<int>> starts_at_;      // step -> buffers whose lifetime starts
  std::vector<Tensor> param_values_;             // value id -> parameter tensor view
  std::vector<std::shared_ptr<Storage>> owned_;  // storage held by this executor
  std::vector<std::string> names_;               // op names (contexts point into them)
  std::vector<OpContext> forward_ctx_, backward_ctx_;
  std::vector<OpContext> rebuild_ctx_;  // op -> its rebuild's context (ops rebuilt in backward)
  // ExecutorOptions::pack: per op, the memory its outputs are packed into (kept from step to
  // step: each step's forward reuses it where it is large enough, so no step pays the
  // operating system's first touch of fresh pages) and the packed outputs of this step,
  // forward to backward.
  struct PackedOutputs {
    std::vector<std::shared_ptr<Storage>> memory;
    std::vector<Tensor> packed;
  };
  std::vector<PackedOutputs> packed_;
  std::vector<int64_t> pack_counts_;       // Backend::pack_counts's, reused
  std::vector<CommHandle> bucket_work_;    // bucket -> its reduction in flight
  std::vector<Tensor> shard_m_, shard_v_;  // ZeRO: bucket -> this rank's chunk of the state
  double grad_scale_ = 1.0, comm_wait_seconds_ = 0;
  Tensor one_;  // d loss / d loss
  size_t held_bytes_ = 0, arena_bytes_ = 0;
  uint64_t step_ = 0;
  bool forward_done_ = false;
  bool update_state_ = true;
  std::optional<uint64_t> fixed_seed_;
  std::vector<OpTimes> op_times_;  // with opt_.profile: op -> its time
  OpTimes other_times_;
  int profiled_steps_ = 0;
  // Runs f, adding its time to `slot` when profiling (the backend synchronized first).
  template <typename F>
  void timed(double& slot, F&& f);
};

}  // namespace frugal
