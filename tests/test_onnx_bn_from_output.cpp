// --bn-from-output on an imported model (tests/data/onnx/mbconv_train_net: EfficientNet's block
// in small, a training-mode export with PyTorch's float64 parameter gradients of one step):
// which batch norms switch, PyTorch's gradients in f32 and f64 either way, planned == baseline
// bitwise with it on, and the memory it frees at batch 32.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "layers/batchnorm2d.h"
#include "models/onnx.h"
#include "models/registry.h"
#include "models/step.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

std::string mbconv() {
  return (onnx_data() / "mbconv_train_net.onnx").string();
}

}  // namespace

TEST_CASE("onnx: batch norms from their outputs give PyTorch's parameter gradients") {
  // Stem, expansion and depthwise batch norms feed SiLUs, the head's a hardswish: they switch;
  // the projection's feeds the residual addition alone: it keeps reading its input.
  for (DType t : {DType::f32, DType::f64}) {
    for (bool from_output : {false, true}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(from_output);
      const double tolerance = t == DType::f32 ? 1e-4 : 1e-6;
      const ParamGradCheck c = compare_parameter_gradients(mbconv(), t, from_output, tolerance);
      MESSAGE("mbconv_train_net in ", std::string(dtype_name(t)),
              std::string(from_output ? " from outputs" : ""), ": the worst of ", c.params,
              " parameter gradients differs by ", c.worst, " of its scale (", c.worst_name, ")");
      CHECK(c.switched == (from_output ? 4 : 0));
      CHECK(c.params == 21);
      CHECK(c.over == 0);
    }
  }
}

TEST_CASE("onnx: batch norms from their outputs train planned == baseline bitwise") {
  const OnnxModel m = load_onnx(mbconv());
  const std::vector<Tensor> base = onnx_train(m, MemoryMode::baseline, false, true);
  // (Packing changes nothing here: the model has no ReLU.)
  CHECK(differing(base, onnx_train(m, MemoryMode::planned, false, true)) == 0);
  // ... and the switch did something: the default step's gradients round otherwise.
  CHECK(differing(base, onnx_train(m, MemoryMode::baseline)) > 0);
}

TEST_CASE("onnx: --bn-from-output's model step frees the switched batch norms' inputs") {
  auto arena = [](bool from_output, int* switched) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store);
    const ModelStep step =
        record_model_step(tape, find_model(kOnnxModelPrefix + mbconv()), 32, Mode::training,
                          {.batch_norm_from_output = from_output});
    *switched = step.batch_norms_from_output;
    const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                   {.keep = {step.loss.id()}, .alignment = 64});
    return l.plan.arena_bytes;
  };
  int none = -1, four = -1;
  const size_t plain = arena(false, &none), out = arena(true, &four);
  MESSAGE("mbconv_train_net at batch 32: planned arena ", plain, " bytes, ", out,
          " with its batch norms from their outputs");
  CHECK(none == 0);
  CHECK(four == 4);
  // At least the expansion's and the depthwise convolution's outputs (32 x 16 x 8 x 8 floats).
  CHECK(out + 2 * size_t{32 * 16 * 8 * 8 * 4} <= plain);
}
