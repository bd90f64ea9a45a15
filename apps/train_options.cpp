// `frugal train`'s command line: every option, checked, into a TrainCommand.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/model_options.h"
#include "apps/options.h"
#include "apps/train.h"
#include "models/onnx.h"

namespace frugal {
namespace {

std::vector<std::string> all_model_names() {
  std::vector<std::string> names;
  for (const ModelSpec& m : model_specs()) names.push_back(m.name);
  return names;
}

}  // namespace

Action add_train_command(CLI::App& app) {
  auto c = std::make_shared<TrainCommand>();
  auto memory = std::make_shared<std::string>("planned");
  auto schedule = std::make_shared<std::string>("cosine");
  TrainOptions& t = c->train;
  CLI::App* train = app.add_subcommand(
      "train",
      "Train a bundled model (Fashion-MNIST, CIFAR-10 or synthetic data), then measure "
      "test accuracy after every epoch");
  train
      ->add_option_function<std::string>(
          "--onnx", [c](const std::string& file) { c->train.model = kOnnxModelPrefix + file; },
          "Train an ONNX model (torch.onnx.export, opsets 11-17) from its exported weights "
          "instead of a bundled --model")
      ->check(CLI::ExistingFile);
  train->add_option("--model", t.model, "Model to train")
      ->check(CLI::IsMember(all_model_names()))
      ->capture_default_str();
  train
      ->add_option("--data", t.data,
                   "Fashion-MNIST IDX directory, CIFAR-10 binary directory (data_batch_*.bin, "
                   "test_batch.bin), an image folder (train/<class>/ and val/<class>/ of JPEG and "
                   "PNG files), or 'synthetic'")
      ->capture_default_str();
  train->add_option("--epochs", t.epochs, "Passes over the training set")
      ->check(whole_number(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  train->add_option("--batch", t.batch, "Training batch size (the last partial batch is dropped)")
      ->check(whole_number(1))
      ->capture_default_str();
  auto optimizer = std::make_shared<std::string>("sgd");
  train
      ->add_option("--optimizer", *optimizer,
                   "sgd (with momentum, as torch.optim.SGD) or adamw (as torch.optim.AdamW); "
                   "either is fused into backward")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  train->add_option("--lr", t.lr, "Learning rate (peak; finite, above 0)")->capture_default_str();
  train->add_option("--momentum", t.momentum, "SGD momentum (in [0, 1))")->capture_default_str();
  train
      ->add_option("--weight-decay", t.weight_decay,
                   "Weight decay (finite, >= 0): SGD adds it to the gradient (L2), AdamW decays "
                   "the weights by lr x it (decoupled)")
      ->capture_default_str();
  train->add_option("--beta1", t.beta1, "AdamW: the first moment's decay (in [0, 1))")
      ->capture_default_str();
  train->add_option("--beta2", t.beta2, "AdamW: the second moment's decay (in [0, 1))")
      ->capture_default_str();
  train->add_option("--eps", t.eps, "AdamW: added to the denominator (finite, above 0)")
      ->capture_default_str();
  train
      ->add_option("--schedule", *schedule,
                   "Learning rate: constant, step (x0.1 at 50% and 75% of the steps) or cosine "
                   "(per step, to 0)")
      ->check(CLI::IsMember({"constant", "step", "cosine"}))
      ->capture_default_str();
  train->add_option("--warmup", t.warmup, "Steps of linear learning-rate warm-up")
      ->check(whole_number(0))
      ->capture_default_str();
  CLI::Option* augment = train->add_flag(
      "--augment,!--no-augment", t.augment,
      "Random crop (padding 4) and horizontal flip of training images; image folders: random "
      "resized crops and flips, on unless --no-augment");
  train
      ->add_option("--crop-fraction", c->folder.crop_fraction,
                   "Image folders: evaluation's centre crop as a fraction of the shorter side "
                   "(1: the whole side)")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  train->add_option("--seed", t.seed, "Seed for parameters, shuffling, augmentation, dropout")
      ->capture_default_str();
  train->add_option("--memory", *memory, "Memory layout: planned (one arena) or baseline")
      ->check(CLI::IsMember({"planned", "baseline"}))
      ->capture_default_str();
  add_bytes_option(
      train, "--workspace-limit", &c->train.workspace_limit,
      "The most scratch one convolution pass may take for a faster algorithm (cuDNN's "
      "workspace; K, M, G: powers of 1024); default: what the planned arena has room for");
  add_bytes_option(train, "--workspace-growth", &c->train.workspace_growth,
                   "How many bytes the planned arena may grow so that convolutions get faster "
                   "algorithms (cuDNN's workspaces; K, M, G: powers of 1024). Default 0: only the "
                   "room the plan leaves free at each step",
                   /*zero_allowed=*/true);
  add_recompute_option(train, &t.recompute);
  add_pack_option(train, &t.pack);
  add_bn_from_output_option(train, &t.bn_from_output);
  add_ln_from_output_option(train, &t.ln_from_output);
  train
      ->add_option("--image-size", t.image_size,
                   "Image folders and ImageNet-size networks: the side of the square input "
                   "(e.g. 112 or 64; default: the network's own)")
      ->check(whole_number(0, 4096))
      ->capture_default_str();
  train
      ->add_option("--workers", c->folder.workers,
                   "Image folders: threads decoding batches ahead of the step (0: the cores)")
      ->check(whole_number(0, 1024))
      ->capture_default_str();
  train->add_flag("--resize", c->folder.resize,
                  "IDX, CIFAR-10 and synthetic data: resample each image to fill the input "
                  "(bilinear, as image folders are read) instead of centring it in a frame");
  train->add_flag("--skip-bad", c->folder.skip_bad,
                  "Image folders: leave out badly named files and replace files that fail to "
                  "decode, counting them, instead of stopping with an error");
  add_bytes_option(train, "--memory-budget", &c->memory_budget,
                   "Fit the planned arena into this many bytes (K, M, G: powers of 1024; e.g. "
                   "200M): the CIFAR ResNets checkpoint runs of blocks with the least recompute, "
                   "other networks rebuild op outputs in backward");
  add_levels_option(train, &c->checkpoint_levels);
  auto float_coupling = std::make_shared<bool>(false);
  train->add_flag("--float-coupling", *float_coupling,
                  "RevNets: memcnn's floating-point coupling, whose rebuilt activations are "
                  "within rounding of the stored ones (default: the exact fixed-point coupling)");
  train->add_flag("--check-finite", t.check_finite,
                  "Look for NaN and inf after every op of every step; stop at the first, naming "
                  "the op, the pass (forward or backward), the tensor and the element (slower)");
  train
      ->add_option("--device", t.device,
                   "Where the step runs: cpu, sim (the simulated device: CPU kernels over memory "
                   "host code cannot touch, for tests) or cuda (where built)")
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}))
      ->capture_default_str();
  train
      ->add_option("--threads", t.threads,
                   "CPU threads (0: all cores; more than the cores: capped)")
      ->check(whole_number(0, kMaxThreads))
      ->capture_default_str();
  train->add_option("--steps", t.steps, "Training steps per epoch (0: the whole training set)")
      ->check(whole_number(0))
      ->capture_default_str();
  train->add_option("--eval-batch", t.eval_batch, "Test batch size")
      ->check(whole_number(1))
      ->capture_default_str();
  train
      ->add_option("--comm-timeout", c->comm_timeout,
                   "Several ranks (mpirun): seconds without a heartbeat after which a rank is "
                   "taken for dead and the job ends with an error naming it")
      ->check(CLI::Range(0.5, 86400.0))
      ->capture_default_str();
  train
      ->add_option("--zero", t.zero,
                   "Several ranks: ZeRO stage. 0: every rank holds all optimizer state; 1: each "
                   "holds and updates its chunk of it, parameters gathered after; 2: and each "
                   "receives only its chunk of the summed gradients (same bits at every stage)")
      ->check(CLI::Range(0, 2))
      ->capture_default_str();
  train->add_flag("--sync-bn", t.sync_bn,
                  "Several ranks: batch norm's statistics over the global batch (sums "
                  "all-reduced in forward and backward) instead of each rank's slice");
  add_bytes_option(train, "--bucket-size", &c->train.bucket_bytes,
                   "Several ranks: bytes of parameter gradients reduced together (K, M, G: "
                   "powers of 1024); default: an eighth of the parameters, 64K to 25M");
  train->add_option("--log", c->log, "Append one JSON line per epoch to this file");
  train->add_option("--save", c->save,
                    "Write a checkpoint (.safetensors) after every epoch; its folder is checked "
                    "to be writable before training starts");
  train->add_option("--resume", c->resume, "Continue from a checkpoint written by --save")
      ->check(CLI::ExistingFile);
  train
      ->add_option("--print-every", c->print_every,
                   "Without a terminal: print a line every N steps (0: ten per epoch)")
      ->check(whole_number(0));

  return [c, memory, schedule, float_coupling, augment, optimizer] {
    // Image folders train with augmentation unless --no-augment says otherwise.
    c->folder.augment = augment->count() == 0 || c->train.augment;
    c->train.memory = *memory == "baseline" ? MemoryMode::baseline : MemoryMode::planned;
    if (*float_coupling) c->train.fixed_point_range = 0;
    c->train.schedule = parse_schedule(*schedule);
    c->train.optimizer = *optimizer == "adamw" ? OptimizerKind::adamw : OptimizerKind::sgd;
    run_train(*c);
  };
}

}  // namespace frugal
