// What the ONNX tests share (tests/test_onnx.cpp, tests/test_onnx_torchvision.cpp): the
// fixtures' folder, their float files, and a model's forward and two training steps.
#pragma once

#include <filesystem>
#include <vector>

#include "core/tensor.h"
#include "models/onnx.h"
#include "run/executor.h"

namespace frugal::testing {

// tests/data/onnx: the small models of scripts/onnx_fixtures.py.
std::filesystem::path onnx_data();
// A file of little-endian float32 values.
std::vector<float> read_floats(const std::filesystem::path& path);
// The model's forward on x (batch 2, inference) with the file's weights.
std::vector<float> onnx_forward(const OnnxModel& m, const std::vector<float>& x);
// Two SGD steps of the model with a softmax cross-entropy head at batch 4: losses, d x, every
// parameter gradient and every parameter and running statistic after them.
std::vector<Tensor> onnx_train(const OnnxModel& m, MemoryMode memory);

}  // namespace frugal::testing
