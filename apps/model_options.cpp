// The bundled-network options of `frugal memory`, `frugal bench` and `frugal graph`.
#include "apps/model_options.h"

#include <cstdio>
#include <limits>
#include <tuple>
#include <vector>

#include "apps/options.h"

#include "core/error.h"
#include "models/registry.h"
#include "recompute/budget.h"

namespace frugal {

void add_recompute_option(CLI::App* c, Recompute* r) {
  c->add_option_function<std::string>(
       "--recompute",
       [r](const std::string& s) {
         *r = s == "cheap" ? Recompute::cheap : s == "all" ? Recompute::all : Recompute::none;
       },
       "Planned training: op outputs dropped after forward and rebuilt in backward, with the "
       "same bits: none; cheap (BatchNorm, activations, adds, pools, concat where rebuilding "
       "lowers the planned arena; no convolution); all (every op that can be, convolutions too, "
       "whatever it costs)")
      ->check(CLI::IsMember({"none", "cheap", "all"}))
      ->default_str(recompute_name(*r));
}

void add_pack_option(CLI::App* c, bool* pack) {
  c->add_flag("--pack", *pack,
              "Planned training: ReLU outputs that backward reads leave the arena after their "
              "last forward reader and wait for backward packed (a bit per element and the "
              "nonzero values, in memory of their own sized by the data); nothing recomputed, "
              "the same bits");
}

void add_bn_from_output_option(CLI::App* c, bool* on) {
  c->add_flag("--bn-from-output", *on,
              "Training: a batch norm whose output a later op's backward keeps (a SiLU, a "
              "convolution) computes its gradients from that output instead of its input, which "
              "then dies after forward (InPlace-ABN's trick; nothing recomputed). Gradients "
              "round differently from the default's; a batch norm weight of 0 is an error");
}

void add_ln_from_output_option(CLI::App* c, bool* on) {
  c->add_flag("--ln-from-output", *on,
              "Training: a layer norm whose output a later op's backward keeps (a linear "
              "layer's) computes its gradients from that output instead of its input, which then "
              "dies after forward (nothing recomputed). Gradients round differently from the "
              "default's; a layer norm weight of 0 is an error");
}

void check_from_output_flags(const ModelChoice& o, const char* command) {
  for (auto [on, flag, norms] : {std::tuple{o.bn_from_output, "--bn-from-output", "batch norms"},
                                 {o.ln_from_output, "--ln-from-output", "layer norms"}})
    FRUGAL_CHECK(!on || o.mode == Mode::training, command, " ", flag, ": changes what ", norms,
                 " keep for backward; use --mode training");
}

void print_norms_from_output(int batch_norms, int layer_norms) {
  for (auto [n, flag, norms] :
       {std::tuple{batch_norms, "bn", "batch"}, {layer_norms, "ln", "layer"}})
    if (n >= 0)
      std::printf(
          "%s-from-output: %d %s norms take their gradients from their outputs (which a "
          "later backward keeps), so their inputs die after forward\n",
          flag, n, norms);
}

void add_levels_option(CLI::App* c, int* levels) {
  c->add_option("--checkpoint-levels", *levels,
                "With --memory-budget on the CIFAR ResNets: 2 lets a checkpointed run checkpoint "
                "its own blocks again while it is rebuilt (less memory, those blocks rebuilt "
                "twice), 1 keeps every run in one level")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
}

void add_model_options(CLI::App* c, const std::shared_ptr<ModelChoice>& o,
                       const ModelOptionSet& which) {
  std::vector<std::string> names;
  for (const ModelSpec& s : model_specs()) names.push_back(s.name);
  c->add_option("--model", o->model, "Network (see `frugal memory --list`)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  c->add_option_function<std::string>(
       "--onnx", [o](const std::string& file) { o->model = kOnnxModelPrefix + file; },
       "An ONNX model file (torch.onnx.export, opsets 11-17) instead of a bundled --model")
      ->check(CLI::ExistingFile);
  c->add_option("--batch", o->batch, "Batch size")->check(whole_number(1))->capture_default_str();
  c->add_option_function<std::string>(
       "--mode",
       [o](const std::string& m) { o->mode = m == "inference" ? Mode::inference : Mode::training; },
       which.mode_help)
      ->check(CLI::IsMember({"inference", "training"}))
      ->default_str(mode_name(o->mode));
  c->add_option_function<std::string>(
       "--optimizer",
       [o](const std::string& k) {
         o->optimizer = k == "adamw" ? OptimizerKind::adamw : OptimizerKind::sgd;
       },
       "Training: sgd (momentum 0.9: one state tensor per parameter) or adamw (two)")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->default_str(optimizer_name(o->optimizer));
  if (which.dtype)
    c->add_option_function<std::string>(
         "--dtype", [o](const std::string& d) { o->dtype = parse_dtype(d); }, "f32 or f64")
        ->check(CLI::IsMember({"f32", "f64"}))
        ->default_str(dtype_name(o->dtype));
  c->add_flag(
      "--no-dropout", [o](int64_t) { o->dropout = false; }, "Leave Dropout out");
  if (which.batch_norm)
    c->add_flag(
        "--no-batch-norm", [o](int64_t) { o->batch_norm = false; },
        "Leave BatchNorm out (ResNets)");
  c->add_option("--device", o->device, which.device_help)
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}))
      ->capture_default_str();
  add_bytes_option(
      c, "--workspace-limit", &o->workspace_limit,
      "The most scratch one convolution pass may take for a faster algorithm (cuDNN's "
      "workspace; K, M, G: powers of 1024). Within it the plan gives each pass the fastest "
      "algorithm its arena has room for (default: no limit)");
  add_bytes_option(c, "--workspace-growth", &o->workspace_growth,
                   "How many bytes the planned arena may grow so that convolutions get faster "
                   "algorithms (cuDNN's workspaces; K, M, G: powers of 1024). Default 0: only the "
                   "room the plan leaves free at each step",
                   /*zero_allowed=*/true);
  if (which.recompute) {
    c->add_option("--segments", o->segments, which.segments_help)
        ->check(whole_number(0, std::numeric_limits<int>::max()))
        ->capture_default_str();
    add_bytes_option(c, "--memory-budget", &o->memory_budget, which.budget_help);
    add_levels_option(c, &o->checkpoint_levels);
  }
  add_recompute_option(c, &o->recompute);
  add_pack_option(c, &o->pack);
  add_bn_from_output_option(c, &o->bn_from_output);
  add_ln_from_output_option(c, &o->ln_from_output);
}

}  // namespace frugal
