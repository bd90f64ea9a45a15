// What the ONNX tests share (tests/test_onnx.cpp, tests/test_onnx_torchvision.cpp, the
// gradchecks): the fixtures' folder, their float files, a model's input shape, its forward and
// two training steps, and its function for check_gradients.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/onnx.h"
#include "models/step.h"
#include "run/executor.h"

namespace frugal::testing {

// tests/data/onnx: the small models of scripts/onnx_fixtures.py.
std::filesystem::path onnx_data();
// A file of little-endian float32 values.
std::vector<float> read_floats(const std::filesystem::path& path);
// A forward output against PyTorch's on the same input: the largest difference (a NaN counts as
// infinitely far) within `tolerance` of the largest expected magnitude, which must exceed 0.01
// (not a vanishing output); reported under `what`.
void check_matches_pytorch(const std::string& what, std::span<const float> got,
                           std::span<const float> want, double tolerance = 1e-4);
// One SGD step's parameter gradients of a training-mode export (scripts/onnx_fixtures.py's
// export_training_with_grads: <name>.pgrad holds the f32 input (4, ...), the i32 labels (4)
// and PyTorch's float64 gradients stored as f32, in the order of <name>.pgrad.txt) against
// frugal's, recorded in `t` (the weights widened for f64), the batch norms whose output is
// kept reading it with `bn_from_output` (read_batch_norm_outputs). Each tensor is measured by
// its largest difference over its own largest value, or over a hundredth of the model's
// largest gradient where its own is smaller (a gradient that vanishes in exact arithmetic is
// rounding noise on both sides).
struct ParamGradCheck {
  int switched = 0;   // norms switched; with a *_from_output and none, nothing is compared
  size_t params = 0;  // parameter gradients compared
  int vanishing = 0;  // below 1% of the model's largest
  int over = 0;       // beyond `tolerance`
  double worst = 0;   // the largest relative difference, and whose
  std::string worst_name;
};
ParamGradCheck compare_parameter_gradients(const std::filesystem::path& onnx, DType t,
                                           bool bn_from_output, double tolerance,
                                           bool ln_from_output = false);
// A float32 host tensor of `shape` holding `values`.
Tensor host_floats(const Shape& shape, const float* values);
// The model's forward on x (batch 2, inference) with the file's weights.
std::vector<float> onnx_forward(const OnnxModel& m, const std::vector<float>& x);
// The forward (inference) of a model of an image input and one more, x of `x_shape` and its
// extra input of `t_shape` (int_input_net: x (2, 3, 6, 6) and t (2); embedding_net: x
// (3, 3, 6, 6) and its labels (3)), with the file's weights.
std::vector<float> two_input_forward(const OnnxModel& m, const float* xs, const float* ts,
                                     const Shape& x_shape = {2, 3, 6, 6},
                                     const Shape& t_shape = {2});
// Two SGD steps of the model with a softmax cross-entropy head at batch 4: losses, d x, every
// parameter gradient and every parameter and running statistic after them; `pack`: with
// ExecutorOptions::pack; `bn_from_output`: read_batch_norm_outputs on the tape.
std::vector<Tensor> onnx_train(const OnnxModel& m, MemoryMode memory, bool pack = false,
                               bool bn_from_output = false, bool ln_from_output = false);
// How many of two runs' tensors (onnx_train's) differ bitwise; a failed check where their counts
// differ.
size_t differing(const std::vector<Tensor>& a, const std::vector<Tensor>& b);
// One forward and backward of ex's training step, appended to out: the loss, the gradients of
// `inputs`, then every trainable parameter's gradient.
void step_and_collect(Executor& ex, Tape& tape, Value loss, std::span<const Value> inputs,
                      std::vector<Tensor>& out);
// The executor of the ONNX tests' SGD steps (lr 0.1, momentum 0.9): `memory`, test buffers
// poisoned where planned, `loss` kept, parameter gradients kept for comparison.
ExecutorOptions sgd_step_options(MemoryMode memory, Value loss);
// check_gradients' function of an imported model: m recorded over the inputs (the images, then
// its extra inputs), every output returned, its constants
// (attention's scale, say) the file's, every trainable weight of at most `max_rank` axes
// drawn in [-1, 1] (from `seed` on), away from the file's values; the others the file's.
std::function<std::vector<Value>(std::span<const Value>)> randomized(const OnnxModel& m,
                                                                     uint64_t seed,
                                                                     int max_rank = 8);

}  // namespace frugal::testing
