// The options that pick a bundled network's step, shared by `frugal memory`, `frugal bench` and
// `frugal graph`: --model, --batch, --mode, --dtype, --no-dropout, --no-batch-norm, --segments,
// --memory-budget, --device and --optimizer, parsed straight into a ModelChoice.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/dtype.h"
#include "core/roles.h"
#include "memory/layout.h"

namespace frugal {

struct ModelChoice {
  std::string model = "resnet110";
  int64_t batch = 64;
  Mode mode = Mode::training;
  DType dtype = DType::f32;
  bool dropout = true;
  bool batch_norm = true;
  int segments = 0;            // CIFAR ResNets: checkpoint the chain of blocks in this many runs
  size_t memory_budget = 0;    // training: checkpoint runs whose planned arena fits (0: none)
  int checkpoint_levels = 2;   // 1: the budget's runs do not checkpoint inside themselves
  std::string device = "cpu";  // the backend whose kernels (their scratch) the step is planned for
  // The most scratch one convolution pass may take for a faster algorithm (cuDNN's workspace).
  size_t workspace_limit = std::numeric_limits<size_t>::max();
  size_t workspace_growth = 0;  // bytes the arena may grow for faster scratch
  // Training: the optimizer fused into backward (its state: SGD's momentum, AdamW's moments).
  OptimizerKind optimizer = OptimizerKind::sgd;
  // Planned training: op outputs dropped after forward and rebuilt in backward.
  Recompute recompute = Recompute::none;
  // Planned training: ReLU outputs kept packed between forward and backward (--pack).
  bool pack = false;
  // Training: batch norms read their output in backward where it is kept anyway
  // (--bn-from-output; ModelConfig::batch_norm_from_output).
  bool bn_from_output = false;
  // Training: layer norms likewise (--ln-from-output; ModelConfig::layer_norm_from_output).
  bool ln_from_output = false;
  // Set by the commands from --memory-budget on a network without a chain of blocks: rebuild
  // op outputs (convolutions too, where nothing cheaper fits) until the arena fits.
  size_t rebuild_budget = 0;
};

// Which of the options a command takes, and their help where it differs between commands.
struct ModelOptionSet {
  std::string mode_help = "inference or training";
  bool dtype = true;
  bool batch_norm = true;
  bool recompute = true;  // --segments and --memory-budget
  std::string device_help =
      "The device the step is planned for and runs on: cpu, sim (the simulated device) or cuda "
      "(its kernels' scratch and its allocator's alignment)";
  std::string segments_help =
      "CIFAR ResNets: checkpoint the chain of blocks in this many segments, as PyTorch's "
      "checkpoint_sequential (runs of blocks/N, all but the last checkpointed)";
  std::string budget_help =
      "Training: the planned arena fits this many bytes (K, M, G: powers of 1024; e.g. 200M, "
      "1.5G): the CIFAR ResNets checkpoint the runs of blocks with the least recompute; other "
      "networks rebuild op outputs in backward (convolutions where nothing cheaper fits)";
};

// Adds `--recompute none|cheap|all` writing into `*r`.
void add_recompute_option(CLI::App* c, Recompute* r);
// Adds `--pack` writing into `*pack`.
void add_pack_option(CLI::App* c, bool* pack);
// Adds `--bn-from-output` writing into `*on`.
void add_bn_from_output_option(CLI::App* c, bool* on);
// Adds `--ln-from-output` writing into `*on`.
void add_ln_from_output_option(CLI::App* c, bool* on);
// --bn-from-output and --ln-from-output change what training keeps: an error naming `command`
// (memory, bench, graph) and the flag where o.mode is inference.
void check_from_output_flags(const ModelChoice& o, const char* command);
// The lines memory, bench and train print for --bn-from-output and --ln-from-output: how many
// norms switched (-1: the flag was not given, no line).
void print_norms_from_output(int batch_norms, int layer_norms);
// Adds `--checkpoint-levels 1|2` (the CIFAR ResNets' budgets) writing into `*levels`.
void add_levels_option(CLI::App* c, int* levels);

// Adds the options to `c`; they write into `*o` as they are parsed (--memory-budget through
// parse_bytes, so a bad size is an error naming it).
void add_model_options(CLI::App* c, const std::shared_ptr<ModelChoice>& o,
                       const ModelOptionSet& which = {});

}  // namespace frugal
