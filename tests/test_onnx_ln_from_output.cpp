// --ln-from-output on an imported model (tests/data/onnx/layer_norm_train_net: a vision
// transformer's blocks and ConvNeXt's in small, a training-mode export with PyTorch's float64
// parameter gradients of one step): which layer norms switch, PyTorch's gradients in f32 and
// f64 either way, planned == baseline bitwise with it on, and the memory it frees at batch 32.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/onnx.h"
#include "models/registry.h"
#include "models/step.h"
#include "run/executor.h"
#include "run/plan.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

std::string blocks() {
  return (onnx_data() / "layer_norm_train_net.onnx").string();
}

}  // namespace

TEST_CASE("onnx: layer norms from their outputs give PyTorch's parameter gradients") {
  // The attention's, the MLP's and ConvNeXt's layer norms feed linear layers: they switch; the
  // head's feeds a mean over the tokens: it keeps reading its input.
  for (DType t : {DType::f32, DType::f64}) {
    for (bool from_output : {false, true}) {
      CAPTURE(std::string(dtype_name(t)));
      CAPTURE(from_output);
      const double tolerance = t == DType::f32 ? 1e-4 : 1e-6;
      const ParamGradCheck c =
          compare_parameter_gradients(blocks(), t, false, tolerance, from_output);
      MESSAGE("layer_norm_train_net in ", std::string(dtype_name(t)),
              std::string(from_output ? " from outputs" : ""), ": the worst of ", c.params,
              " parameter gradients differs by ", c.worst, " of its scale (", c.worst_name, ")");
      CHECK(c.switched == (from_output ? 3 : 0));
      CHECK(c.params == 26);
      CHECK(c.over == 0);
    }
  }
}

TEST_CASE("onnx: layer norms from their outputs train planned == baseline bitwise") {
  const OnnxModel m = load_onnx(blocks());
  const std::vector<Tensor> base = onnx_train(m, MemoryMode::baseline, false, false, true);
  CHECK(differing(base, onnx_train(m, MemoryMode::planned, false, false, true)) == 0);
  // ... and the switch did something: the default step's gradients round otherwise.
  CHECK(differing(base, onnx_train(m, MemoryMode::baseline)) > 0);
}

TEST_CASE("onnx: --ln-from-output's model step frees the switched layer norms' inputs") {
  auto arena = [](bool from_output, int* switched) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store);
    const ModelStep step =
        record_model_step(tape, find_model(kOnnxModelPrefix + blocks()), 32, Mode::training,
                          {.layer_norm_from_output = from_output});
    *switched = step.layer_norms_from_output;
    const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                   {.keep = {step.loss.id()}, .alignment = 64});
    return l.plan.arena_bytes;
  };
  int none = -1, three = -1;
  const size_t plain = arena(false, &none), out = arena(true, &three);
  MESSAGE("layer_norm_train_net at batch 32: planned arena ", plain, " bytes, ", out,
          " with its layer norms from their outputs");
  CHECK(none == 0);
  CHECK(three == 3);
  CHECK(out < plain);
}
