// `frugal eval`: records a bundled model in inference, loads a weights file written by
// `frugal train --save` (or any safetensors file with the same names and shapes) and prints
// its accuracy on the test set.
#include <chrono>
#include <cstdio>

#include "apps/commands.h"
#include "apps/options.h"
#include "apps/progress.h"
#include "apps/train.h"
#include "core/backend.h"
#include "train/evaluate.h"
#include "train/train_data.h"
#include "train/weights.h"

namespace frugal {

void run_eval(const EvalCommand& c) {
  set_cpu_threads(capped_threads(c.threads));
  const Safetensors file = load_safetensors(c.weights);  // check the file before the data
  // The input as the run that saved the weights read it, unless the options say otherwise.
  FolderOptions folder = c.folder;
  if (folder.image_size == 0) folder.image_size = saved_image_size(file, c.weights);
  folder.resize = folder.resize || saved_resize(file, c.weights);
  check_images_only(find_model(c.model), "eval");  // before any data is read
  const ModelSpec model = model_at_size(find_model(c.model), folder.image_size);
  const Dataset test = load_data(c.data, model, false, {.train = 1, .test = c.batch}, 1, folder);
  ParamStore params(0, backend_named(c.device));
  Evaluator eval(params, model, test, c.batch, c.memory,
                 ModelConfig{.fixed_point_range = c.fixed_point_range});
  load_weights(params, file, c.weights, model.name, false);
  const auto start = std::chrono::steady_clock::now();
  const double accuracy = eval.accuracy();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s on %s: test accuracy %.2f%% (%lld images, %.1f s, %.0f img/s, memory %s)\n",
              model.name.c_str(), test.name.c_str(), 100.0 * accuracy, (long long)test.size(), s,
              double(test.size()) / s, mib(eval.memory_bytes()).c_str());
}

Action add_eval_command(CLI::App& app) {
  auto c = std::make_shared<EvalCommand>();
  auto memory = std::make_shared<std::string>("planned");
  CLI::App* eval = app.add_subcommand("eval", "Test accuracy of a model with saved weights");
  std::vector<std::string> names;
  for (const ModelSpec& m : model_specs()) names.push_back(m.name);
  eval->add_option_function<std::string>(
          "--onnx", [c](const std::string& file) { c->model = kOnnxModelPrefix + file; },
          "The ONNX model (file) the weights belong to, instead of a bundled --model")
      ->check(CLI::ExistingFile);
  eval->add_option("--model", c->model, "Model the weights belong to")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  eval->add_option("--weights", c->weights, "Weights file (.safetensors) from frugal train --save")
      ->required();
  eval->add_option("--data", c->data,
                   "Fashion-MNIST IDX directory, CIFAR-10 binary directory, an image folder "
                   "(its val/ is evaluated), or 'synthetic'")
      ->capture_default_str();
  eval->add_option("--batch", c->batch, "Test batch size")
      ->check(whole_number(1))
      ->capture_default_str();
  eval->add_option("--image-size", c->folder.image_size,
                   "The side of the square input the model was trained at (default: the "
                   "checkpoint's, else the model's)")
      ->check(whole_number(0, 4096))
      ->capture_default_str();
  eval->add_option("--workers", c->folder.workers, "Image folders: decode threads (0: the cores)")
      ->check(whole_number(0, 1024))
      ->capture_default_str();
  eval->add_option("--crop-fraction", c->folder.crop_fraction,
                   "Image folders: the centre crop as a fraction of the shorter side")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  eval->add_flag("--resize", c->folder.resize,
                 "IDX, CIFAR-10 and synthetic data: resample each image to fill the input, as "
                 "train --resize did (on by itself for a checkpoint that says so)");
  eval->add_flag("--skip-bad", c->folder.skip_bad,
                 "Image folders: replace files that fail to decode instead of stopping");
  auto float_coupling = std::make_shared<bool>(false);
  eval->add_flag("--float-coupling", *float_coupling,
                 "RevNets: memcnn's floating-point coupling (default: the fixed-point one)");
  eval->add_option("--threads", c->threads,
                   "CPU threads (0: all cores; more than the cores: capped)")
      ->check(whole_number(0, kMaxThreads))
      ->capture_default_str();
  eval->add_option("--device", c->device, "Where it runs: cpu, sim (the simulated device) or cuda")
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}))
      ->capture_default_str();
  eval->add_option("--memory", *memory, "Memory layout: planned (one arena) or baseline")
      ->check(CLI::IsMember({"planned", "baseline"}))
      ->capture_default_str();
  return [c, memory, float_coupling] {
    c->memory = *memory == "baseline" ? MemoryMode::baseline : MemoryMode::planned;
    if (*float_coupling) c->fixed_point_range = 0;
    run_eval(*c);
  };
}

}  // namespace frugal
