// torchvision's models exported by PyTorch (scripts/onnx_fixtures.py --torchvision DIR, run
// with FRUGAL_ONNX_MODELS=DIR): PyTorch's outputs and input gradients, and planned == baseline.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "run/executor.h"
#include "tests/onnx_support.h"
#include "tests/skip.h"
#include "tests/worst.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {
// The .onnx files of the folder the environment variable `var` names, in name order; none
// (and the case skipped: tests/skip.h) where it is not set.
std::vector<fs::path> exports_in(const char* var) {
  const char* dir = std::getenv(var);
  if (dir == nullptr) {
    skip_case(std::string(var) + " is not set: nothing compared");
    return {};
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  return files;
}
}  // namespace

// Not in the default run's data: scripts/onnx_fixtures.py --torchvision DIR exports
// torchvision models with PyTorch's outputs, and FRUGAL_ONNX_MODELS=DIR points here.
TEST_CASE(
    "onnx: torchvision exports give PyTorch's outputs, planned == baseline (FRUGAL_ONNX_MODELS)") {
  const std::vector<fs::path> files = exports_in("FRUGAL_ONNX_MODELS");
  if (files.empty()) return;
  for (const fs::path& f : files) {
    CAPTURE(f.string());
    const OnnxModel m = load_onnx(f.string());
    fs::path io = f;
    io.replace_extension(".io");
    const std::vector<float> data = read_floats(io);
    const int64_t in = 2 * m.input.numel();
    // The output: (2, classes), or (2, classes, H, W) for a segmentation model.
    std::vector<int64_t> out_dims{2, m.classes};
    for (int64_t d : m.label_shape.dims()) out_dims.push_back(d);
    const Shape out_shape(out_dims);
    const int64_t out = out_shape.numel();
    REQUIRE(static_cast<int64_t>(data.size()) == in + out);
    const std::vector<float> got =
        onnx_forward(m, std::vector<float>(data.begin(), data.begin() + in));
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = worse(worst, static_cast<double>(std::abs(got[i] - data[in + i])));
      scale = std::max(scale, static_cast<double>(std::abs(data[in + i])));
    }
    MESSAGE(f.filename().string(), ": largest difference ", worst, " of outputs up to ", scale);
    CHECK(worst <= 1e-4 * scale);
    {  // Two SGD steps at batch 4, planned and baseline: the same bits.
      const std::vector<Tensor> base = onnx_train(m, MemoryMode::baseline);
      const std::vector<Tensor> planned = onnx_train(m, MemoryMode::planned);
      REQUIRE(base.size() == planned.size());
      size_t differ = 0;
      for (size_t i = 0; i < base.size(); ++i)
        differ += std::memcmp(base[i].raw(), planned[i].raw(), base[i].bytes()) != 0;
      CHECK(differ == 0);
    }
    // The input gradient of sum(R * y): frugal's backward (training mode; the export has no
    // BatchNorm or Dropout left) against PyTorch's.
    fs::path grad = f;
    grad.replace_extension(".grad");
    if (!fs::exists(grad)) continue;
    const std::vector<float> g = read_floats(grad);
    REQUIRE(static_cast<int64_t>(g.size()) == out + in);
    // PyTorch's gradient is of the eval-mode network; frugal's backward runs BatchNorm in
    // training mode, on batch statistics. Where the export kept a BatchNorm (one that follows
    // no convolution, as DenseNet's) the two are different functions.
    if (std::any_of(m.graph->nodes.begin(), m.graph->nodes.end(),
                    [](const OnnxNode& n) { return n.kind == OnnxKind::batch_norm; })) {
      MESSAGE(f.filename().string(),
              ": keeps BatchNorm, so its eval-mode input gradient is not compared");
      continue;
    }
    // Once with the direct stride-1 kernels (their long FMA chains round more: on AlexNet and
    // VGG, whose input gradients cancel heavily, that shows; reported, not required), once with
    // im2col + GEMM everywhere (required within 1e-4 of the largest).
    for (bool direct : {true, false}) {
      set_cpu_direct_conv(direct);
      ParamStore store(1);
      Tape tape(store);
      Value x = tape.input("x", batched(2, m.input), DType::f32, true);
      Value y = record_onnx(m, x);
      load_onnx_weights(store, m);
      Executor ex(tape, cpu_backend(), {.memory = MemoryMode::planned, .keep = {x, y}});
      Tensor xt = Tensor::empty(x.shape(), DType::f32);
      std::memcpy(xt.raw(), data.data(), xt.bytes());
      ex.set_input(x, xt);
      ex.forward();
      Tensor r = Tensor::empty(out_shape, DType::f32);
      std::memcpy(r.raw(), g.data(), r.bytes());
      std::pair<Value, Tensor> seed{y, r};
      ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
      const float* dx = ex.grad(x).data<float>();
      double gworst = 0, gscale = 0, diff2 = 0, norm2 = 0;
      for (int64_t i = 0; i < in; ++i) {
        const double want = g[static_cast<size_t>(out + i)];
        gworst = worse(gworst, std::abs(dx[i] - want));
        gscale = std::max(gscale, std::abs(want));
        diff2 += (dx[i] - want) * (dx[i] - want), norm2 += want * want;
      }
      const double l2 = std::sqrt(diff2 / norm2);
      set_cpu_direct_conv(true);
      MESSAGE(f.filename().string(), std::string(direct ? " (direct kernels)" : " (im2col)"),
              ": input gradient differs by ", gworst, " at most, of values up to ", gscale,
              "; relative L2 difference ", l2);
      CHECK(gscale > 0);
      // A ReLU or ReLU6 input within rounding of its kink may fall on the other side here than
      // in PyTorch: that element's derivative flips, and the input gradient moves a little
      // over its receptive field. On MobileNetV2 at 64 px (83 of its 1M ReLU6 inputs lie
      // within 1e-4 of a kink) the depthwise kernels' rounding flips some (4.9e-3 of the
      // largest, 3.5e-3 in L2) where the grouped im2col path's, agreeing with them within an
      // ulp, flips none (1e-6). So: within 1e-4 of the largest at every element, or 1e-2 in L2
      // with no element 1e-2 of the largest off.
      const bool close = gworst <= 1e-4 * gscale || (l2 <= 1e-2 && gworst <= 1e-2 * gscale);
      if (direct)
        WARN(close);
      else
        CHECK(close);
    }
  }
}

// Not in the default run's data: scripts/onnx_fixtures.py --torchvision-training DIR writes
// training-mode exports with PyTorch's parameter gradients of one step (float64, stored as f32),
// and FRUGAL_ONNX_TRAINING=DIR points here. frugal's step (BatchNorm on batch statistics as in
// PyTorch's train mode) must give every parameter's gradient within 1e-4 of that tensor's
// largest in f32, 1e-6 in f64.
TEST_CASE(
    "onnx: torchvision training exports give PyTorch's parameter gradients "
    "(FRUGAL_ONNX_TRAINING)") {
  const std::vector<fs::path> files = exports_in("FRUGAL_ONNX_TRAINING");
  if (files.empty()) return;
  for (const fs::path& f : files) {
    CAPTURE(f.string());
    // Recorded in f64 with the weights widened (required within 1e-6 of each tensor's scale: the
    // reference is stored rounded to f32), and in f32 (within 1e-4 reported, not required: a
    // ReLU input within f32 rounding of its kink takes the other side than in f64, and its
    // channel's gradient moves by that element's whole upstream gradient. On MobileNetV2 one
    // BatchNorm output, +2.07e-6 in f32 and -6.8e-7 in f64, moves one channel's shift gradient
    // by 1.3e-3 and every earlier layer's by up to 4.5% of its scale; PyTorch's own f32 step
    // crosses none there.) Each again with the batch norms whose output is kept reading it in
    // backward (--bn-from-output), and the layer norms likewise (--ln-from-output): the same
    // bounds.
    for (const auto& [t, from_output] : {std::pair{DType::f32, false},
                                         {DType::f64, false},
                                         {DType::f32, true},
                                         {DType::f64, true}}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(from_output);
      const double tolerance = t == DType::f32 ? 1e-4 : 1e-6;
      const ParamGradCheck c =
          compare_parameter_gradients(f, t, from_output, tolerance, from_output);
      if (from_output && c.switched == 0) continue;  // no norm's output is kept
      MESSAGE(f.filename().string(), " in ", std::string(dtype_name(t)),
              from_output ? " (" + std::to_string(c.switched) + " norms from their outputs)"
                          : std::string(),
              ": ", c.params, " parameter gradients (", c.vanishing,
              " below 1% of the largest); the worst differs by ", c.worst, " of its scale (",
              c.worst_name, "); ", c.over, " beyond ", tolerance);
      if (t == DType::f64)
        CHECK(c.over == 0);
      else
        WARN(c.over == 0);  // see above: a kink crossed in f32 rounding is reported
    }
  }
}
