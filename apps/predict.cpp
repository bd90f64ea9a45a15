// `frugal predict`: the top classes of images under a trained model. The checkpoint (from
// `frugal train --save` on an image folder) gives the class names and the input size; each
// image is decoded and centre-cropped as evaluation does it, and one inference step runs over
// all of them.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/options.h"
#include "core/backend.h"
#include "core/error.h"
#include "data/image_folder.h"
#include "data/safetensors.h"
#include "models/step.h"
#include "run/executor.h"
#include "train/train_data.h"
#include "train/weights.h"

namespace frugal {
namespace {

struct PredictOptions {
  std::string model = "resnet18";
  std::string weights;
  std::vector<std::string> images;
  int64_t image_size = 0;  // 0: the checkpoint's, else the model's
  double crop_fraction = 0.875;
  int top = 5;
  std::string device = "cpu";
};

// The class names a checkpoint carries ("classes": a JSON array), or "class <i>" for each of
// `classes` when it has none.
std::vector<std::string> class_names(const Safetensors& file, const std::string& path) {
  auto it = file.metadata.find("classes");
  if (it == file.metadata.end()) return {};
  try {
    const nlohmann::json j = nlohmann::json::parse(it->second);
    FRUGAL_CHECK(j.is_array() && !j.empty(), path, ": metadata 'classes' is not a list of names");
    std::vector<std::string> names;
    for (const auto& n : j) {
      FRUGAL_CHECK(n.is_string(), path, ": metadata 'classes' holds a non-name");
      names.push_back(n.get<std::string>());
    }
    return names;
  } catch (const nlohmann::json::exception&) {
    throw Error(path + ": metadata 'classes' is not JSON");
  }
}

void run_predict(const PredictOptions& o) {
  const Safetensors file = load_safetensors(o.weights);
  std::vector<std::string> names = class_names(file, o.weights);
  const int64_t size = o.image_size > 0 ? o.image_size : saved_image_size(file, o.weights);
  const ModelSpec model = model_at_size(find_model(o.model), size);
  FRUGAL_CHECK(model.input.rank() == 3 && model.input[0] == 3 && model.input[1] == model.input[2],
               o.model, " takes ", model.input, "; predict reads 3-channel square images");
  const int64_t classes = names.empty() ? model.classes : static_cast<int64_t>(names.size());
  if (names.empty())
    for (int64_t c = 0; c < classes; ++c) names.push_back("class " + std::to_string(c));

  Backend& be = backend_named(o.device);
  ParamStore params(0, be);
  Tape tape(params);
  const int64_t N = static_cast<int64_t>(o.images.size());
  check_images_only(model, "predict");
  const ModelStep step =
      record_model_step(tape, model, N, Mode::inference, ModelConfig{.classes = classes});
  load_weights(params, file, o.weights, model.name, false);
  Executor ex(tape, be,
              {.mode = Mode::inference, .memory = MemoryMode::planned, .keep = {step.logits}});
  std::vector<ImageFile> files;
  for (const std::string& p : o.images) files.push_back({p, 0});
  ImageSource source{files, {.size = model.input[1], .crop_fraction = o.crop_fraction}};
  Tensor x = Tensor::empty(model_input_shape(model, N), DType::f32);
  const int64_t per = x.numel() / N;
  for (int64_t i = 0; i < N; ++i) load_sample(source, i, 0, 0, x.data<float>() + i * per, nullptr);
  ex.set_input(step.images, x);
  ex.forward();
  const Tensor out = clone_to_host(be, ex.value(step.logits));
  const int64_t K = out.shape()[1];
  const int64_t shown = std::min<int64_t>(o.top, classes);
  for (int64_t i = 0; i < N; ++i) {
    // Softmax over the first `classes` columns (GoogLeNet puts its auxiliary head after them).
    std::vector<double> p(static_cast<size_t>(classes));
    double most = -INFINITY, sum = 0;
    for (int64_t c = 0; c < classes; ++c) most = std::max(most, element_as_double(out, i * K + c));
    for (int64_t c = 0; c < classes; ++c)
      sum += p[static_cast<size_t>(c)] = std::exp(element_as_double(out, i * K + c) - most);
    std::vector<int64_t> order(static_cast<size_t>(classes));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)];
    });
    std::printf("%s\n", o.images[static_cast<size_t>(i)].c_str());
    for (int64_t k = 0; k < shown; ++k) {
      const int64_t c = order[static_cast<size_t>(k)];
      std::printf("  %6.2f%%  %s\n", 100.0 * p[static_cast<size_t>(c)] / sum,
                  names[static_cast<size_t>(c)].c_str());
    }
  }
}

}  // namespace

Action add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* c = app.add_subcommand(
      "predict", "Top classes of image files under a model trained on an image folder");
  std::vector<std::string> names;
  for (const ModelSpec& m : model_specs()) names.push_back(m.name);
  c->add_option("--model", o->model, "Model the weights belong to")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  c->add_option("--weights", o->weights, "Checkpoint from frugal train --save")->required();
  c->add_option("images", o->images, "JPEG or PNG files")->required();
  c->add_option("--image-size", o->image_size,
                "Side of the square input (default: the checkpoint's, else the model's)")
      ->check(whole_number(0, 4096));
  c->add_option("--crop-fraction", o->crop_fraction,
                "The centre crop as a fraction of the shorter side")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  c->add_option("--top", o->top, "Classes shown per image")
      ->check(whole_number(1, 1000))
      ->capture_default_str();
  c->add_option("--device", o->device, "cpu, sim or cuda")
      ->check(CLI::IsMember({"cpu", "sim", "cuda"}))
      ->capture_default_str();
  return [o] { run_predict(*o); };
}

}  // namespace frugal
