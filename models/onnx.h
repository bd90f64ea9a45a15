// Bring your own model: an ONNX file (opsets 11-17, as torch.onnx.export writes them) read into
// a graph of frugal ops, then recorded onto a tape like any bundled network, so the planner,
// the executor and every command work on it. Initializers become parameters named as in the
// file (their values are loaded with load_onnx_weights); the graph's image input becomes the
// tape's input at the batch size asked for, and its other inputs (a timestep, a second image)
// inputs of the same batch.
//
// What it imports: the ops of README.md's ONNX list (convolutions of any groups, dilation and
// padding, normalizations, pooling, resizing, attention's products and softmax, data movement
// on any axis, elementwise arithmetic broadcast as numpy), shape arithmetic and the constants
// computed from it evaluated while recording. Anything else is an error naming the node, its
// op type and what is missing, when the file is read.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "models/registry.h"

namespace frugal {

struct OnnxGraph;  // the checked nodes and initializers (models/onnx.cpp)

// A graph input besides the image input: its name in the file and one sample's shape (the
// axes after the batch's; empty for one value a sample, a diffusion model's timestep).
struct OnnxInput {
  std::string name;
  Shape sample;
  // An integer input (int64 or int32: a diffusion model's timesteps, read through a Cast to
  // float): carried in the model's float type, whole numbers (exact below 2^24 in f32).
  bool whole = false;
  // Whole numbers drawn for it where frugal makes up inputs (`memory --run`, `bench`) lie in
  // [0, below): the rows of the smallest table it indexes (nn.Embedding), 1 (zeros) where
  // arithmetic over it gives a table's indices, else 1000.
  int64_t below = 1000;
};

struct OnnxModel {
  std::string path;
  Shape input;  // one sample: (F), (C, L), (C, H, W) or (C, D, H, W)
  // The graph's other inputs, in the file's order, of the model's float type with the batch
  // first: models of several inputs (an image and a timestep, two images, an image and a mask).
  std::vector<OnnxInput> extra_inputs;
  int64_t classes = 0;  // the output's features (N, classes), or its channels (N, classes, ...)
  // Models that label each position (output (N, classes, L), (N, classes, H, W) or
  // (N, classes, D, H, W)): the labels' (L), (H, W) or (D, H, W); classifiers: empty.
  Shape label_shape;
  DType dtype = DType::f32;  // the input's and weights' type: f64 for an export of model.double()
  std::shared_ptr<const OnnxGraph> graph;
};

// Reads and checks `path`: a missing, truncated or malformed file, an unsupported opset, op,
// attribute or dynamic shape is an error naming the file (and the node). With keep_weights
// false the model holds only the weights' shapes (load_onnx_weights reads the file again), so
// a process that records, plans and runs it holds its weights once, in the parameters.
OnnxModel load_onnx(const std::string& path, bool keep_weights = true);
// The same over bytes already in memory (`path` names them in messages; the fuzz target).
OnnxModel load_onnx_bytes(const std::string& path, const char* data, size_t size,
                          bool keep_weights = true);

// Records the model's forward over `images` (the batch, then `input`) on images' tape; returns
// (N, classes) or (N, classes, then label_shape). The model's extra inputs become inputs of the
// tape named as in the file, of images' batch (onnx_extra_inputs finds them again).
Value record_onnx(const OnnxModel& model, Value images);
// The same over every input: images, then one value per extra input (N, sample...).
Value record_onnx(const OnnxModel& model, Value images, std::span<const Value> extra);
// Every output of the model, the first what record_onnx returns, then the file's other outputs
// (auxiliary heads) in its order, each of the first's shape.
std::vector<Value> record_onnx_outputs(const OnnxModel& model, Value images);
std::vector<Value> record_onnx_outputs(const OnnxModel& model, Value images,
                                       std::span<const Value> extra);
// The tape inputs record_onnx(model, images) made for the model's extra inputs, in order.
std::vector<Value> onnx_extra_inputs(const OnnxModel& model, Value images);

// Copies the file's initializer values into the store's parameters of the same names (a
// shapes-only store is left alone; a model loaded without its weights reads the file again). Throws
// naming the parameter if the store lacks one.
void load_onnx_weights(ParamStore& store, const OnnxModel& model);

// A registry entry for the file (cached per path): find_model("onnx:" + path) returns it, so
// an ONNX model works wherever a bundled network does (the commands' --onnx FILE).
const ModelSpec& onnx_model_spec(const std::string& path);
// The file's model, loaded once without its weights (the one behind onnx_model_spec).
const OnnxModel& onnx_model(const std::string& path);
// For a model named "onnx:FILE" (find_model's), the file's exported weights into the store's
// parameters (load_onnx_weights); nothing for a bundled network, whose store initializes them.
inline void load_exported_weights(ParamStore& store, const std::string& model) {
  if (model.starts_with(kOnnxModelPrefix))
    load_onnx_weights(store, onnx_model(model.substr(kOnnxModelPrefix.size())));
}

}  // namespace frugal
