// The registry: each bundled network's name, input and builder, in one table.
#include "models/registry.h"

#include <string>

#include "core/error.h"
#include "layers/nll_loss.h"
#include "layers/softmax_cross_entropy.h"
#include "models/alexnet.h"
#include "models/densenet.h"
#include "models/googlenet.h"
#include "models/onnx.h"
#include "models/resnet_cifar.h"
#include "models/resnet_imagenet.h"
#include "models/revnet.h"
#include "models/small_cnn.h"
#include "models/vgg.h"

namespace frugal {
namespace {

const Shape kImageNet{3, 224, 224};
const Shape kCifar{3, 32, 32};

ModelSpec cifar_resnet(int depth) {
  ModelSpec s{"resnet" + std::to_string(depth),
              "ResNet-" + std::to_string(depth) + " for CIFAR-10, basic blocks, shortcut B",
              kCifar,
              10,
              false,
              [depth](Value x, const ModelConfig& c) { return resnet_cifar(x, depth, c); }};
  s.chain_blocks = 3 * (depth - 2) / 6;
  return s;
}

ModelSpec revnet_spec(int depth) {
  ModelSpec s{"revnet" + std::to_string(depth),
              "RevNet-" + std::to_string(depth) +
                  " for CIFAR-10, reversible units (memcnn), inputs rebuilt in backward",
              kCifar,
              10,
              false,
              [depth](Value x, const ModelConfig& c) { return revnet(x, depth, c, c.reversible); }};
  s.reversible = true;
  return s;
}

ModelSpec vgg_spec(const char* name, const char* description, VggConfig which) {
  return {name, description, kImageNet,
          1000, true,        [which](Value x, const ModelConfig& c) { return vgg(x, which, c); }};
}

std::vector<ModelSpec> make_specs() {
  std::vector<ModelSpec> specs;
  specs.push_back({"small-cnn", "two conv blocks and a linear layer for 28x28 grey images",
                   Shape{1, 28, 28}, 10, false, [](Value x, const ModelConfig& c) {
                     return small_cnn(x, static_cast<int>(classes_or(c, 10)));
                   }});
  specs.push_back({"alexnet", "AlexNet, two towers, no LRN (optnet)", kImageNet, 1000, true,
                   [](Value x, const ModelConfig& c) { return alexnet(x, c); }});
  specs.push_back(vgg_spec("vgg-a", "VGG-A (VGG-11)", VggConfig::a));
  specs.push_back(vgg_spec("vgg16", "VGG-16 (configuration D)", VggConfig::d));
  specs.push_back(vgg_spec("vgg19", "VGG-19 (configuration E)", VggConfig::e));
  specs.push_back({"googlenet", "GoogLeNet, optnet's Inception variant, main and aux heads",
                   kImageNet, 1000, true,
                   [](Value x, const ModelConfig& c) { return googlenet(x, c); }});
  for (int depth : {20, 32, 56, 110}) specs.push_back(cifar_resnet(depth));
  for (int depth : {38, 110, 164}) specs.push_back(revnet_spec(depth));
  specs.push_back({"resnet1001", "ResNet-1001 for CIFAR-10, pre-activation bottlenecks", kCifar, 10,
                   false,
                   [](Value x, const ModelConfig& c) { return preact_resnet_cifar(x, 1001, c); }});
  specs.back().chain_blocks = 333;
  specs.push_back({"resnet18", "ResNet-18 for ImageNet, basic blocks", kImageNet, 1000, false,
                   [](Value x, const ModelConfig& c) { return resnet_imagenet(x, 18, c); }});
  specs.push_back({"resnet50", "ResNet-50 for ImageNet, bottlenecks", kImageNet, 1000, false,
                   [](Value x, const ModelConfig& c) { return resnet_imagenet(x, 50, c); }});
  specs.push_back({"densenet121", "DenseNet-BC-121 for ImageNet, growth 32 (torchvision's)",
                   kImageNet, 1000, false,
                   [](Value x, const ModelConfig& c) { return densenet121(x, c); }});
  for (int depth : {40, 100, 160})
    specs.push_back(
        {"densenet" + std::to_string(depth),
         "DenseNet-BC (L=" + std::to_string(depth) + ", k=12) for CIFAR-10", kCifar, 10, false,
         [depth](Value x, const ModelConfig& c) { return densenet_cifar(x, depth, 12, c); }});
  return specs;
}

}  // namespace

const std::vector<ModelSpec>& model_specs() {
  static const std::vector<ModelSpec> specs = make_specs();
  return specs;
}

const ModelSpec& find_model(const std::string& name) {
  if (name.starts_with(kOnnxModelPrefix))
    return onnx_model_spec(name.substr(kOnnxModelPrefix.size()));
  std::string names;
  for (const ModelSpec& s : model_specs()) {
    if (s.name == name) return s;
    names += (names.empty() ? "" : ", ") + s.name;
  }
  throw Error("unknown model '" + name + "'; valid names: " + names);
}

void check_images_only(const ModelSpec& spec, const std::string& command) {
  if (spec.extra_inputs.empty()) return;
  std::string names;
  for (const ModelInput& in : spec.extra_inputs)
    names += (names.empty() ? "'" : ", '") + in.name + "'";
  throw Error(command + ": " + spec.name + " reads " +
              (spec.extra_inputs.size() == 1 ? "input " : "inputs ") + names +
              " besides its images; " + command +
              " feeds images alone (frugal memory and frugal bench fill every input)");
}

Value model_loss(const ModelSpec& spec, Value output, Value labels) {
  if (spec.label_shape.rank() > 0) return pixel_cross_entropy(output, labels);
  return spec.log_softmax_output ? nll_loss(output, labels) : softmax_cross_entropy(output, labels);
}

}  // namespace frugal
