// The registry of bundled networks: one name per network (what `frugal train --model` takes),
// its input shape, default classes and a builder, so commands and benchmarks can record any
// of them without knowing its code.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "core/shape.h"
#include "models/model_config.h"

namespace frugal {

// An input a network reads besides its images (ModelSpec::extra_inputs): its name, and whether
// it holds whole numbers (an ONNX file's int64 input, a diffusion model's timestep or class
// labels, carried in the model's float type) and below what.
struct ModelInput {
  std::string name;
  bool whole = false;
  int64_t below = 1000;  // whole numbers drawn for it lie in [0, below)
  bool operator==(const ModelInput&) const = default;
};

struct ModelSpec {
  std::string name;         // "resnet110"
  std::string description;  // one line for --help and reports
  Shape input;              // one image: C, H, W
  int64_t classes;          // default number of classes (labels lie in [0, classes))
  bool log_softmax_output;  // output is log-probabilities (train with nll_loss), else logits
  // Records the network over images (N, input...) and returns its output (N, classes); for
  // GoogLeNet (N, 2 classes), its two heads side by side.
  std::function<Value(Value images, const ModelConfig&)> build;
  // Models of several outputs (an ONNX file's auxiliary heads): records the network and returns
  // every output, the first what `build` returns; training scores each against the same labels
  // and sums the losses (record_model_step). Empty: one output.
  std::function<std::vector<Value>(Value images, const ModelConfig&)> build_outputs = {};
  // Blocks of the chain that ModelConfig::checkpoint_runs cuts (CIFAR ResNets); 0: none.
  int chain_blocks = 0;
  // Built of reversible units unless ModelConfig::reversible is false (RevNets).
  bool reversible = false;
  // Segmentation models (ONNX imports whose output is (N, classes, H, W)): the labels' shape
  // per image, (H, W), scored per pixel (pixel_cross_entropy). Empty: one label per image.
  Shape label_shape = {};
  // Inputs the network reads besides the images (an ONNX model's timestep or second image):
  // `build` makes them inputs of the images' tape and batch, named so. Commands that feed
  // images from data refuse such models (check_images_only); memory and bench fill them.
  std::vector<ModelInput> extra_inputs = {};
};

// Throws, naming `command` and the inputs, when the network reads more than images.
void check_images_only(const ModelSpec& spec, const std::string& command);

// All bundled networks, in a fixed order: small-cnn, alexnet, vgg-a, vgg16, vgg19,
// googlenet, resnet20, resnet32, resnet56, resnet110, revnet38, revnet110, revnet164, resnet1001,
// resnet18, resnet50, densenet121, densenet40, densenet100, densenet160.
const std::vector<ModelSpec>& model_specs();

// The network called `name`, or for "onnx:FILE" the model in that ONNX file (models/onnx.h);
// throws frugal::Error listing the valid names otherwise.
inline const std::string kOnnxModelPrefix = "onnx:";
const ModelSpec& find_model(const std::string& name);

// The training loss of `output` against i32 labels (N): nll_loss for log-probability
// outputs, else the fused softmax cross-entropy. For GoogLeNet the labels index the main
// head's columns, so the auxiliary head gets no gradient.
Value model_loss(const ModelSpec& spec, Value output, Value labels);

}  // namespace frugal
