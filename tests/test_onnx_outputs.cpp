// Models of several outputs (tests/data/onnx/outputs_net.onnx: a classifier with an auxiliary
// head, as Inception v3 and GoogLeNet train): PyTorch's outputs, a training step scoring both
// heads planned == baseline bitwise, f64 gradients through both, errors naming the output at
// fault.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <span>
#include <vector>

#include "check/gradcheck.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "models/registry.h"
#include "models/step.h"
#include "run/executor.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("onnx: a model of two outputs gives PyTorch's outputs") {
  const OnnxModel m = load_onnx((onnx_data() / "outputs_net.onnx").string());
  REQUIRE(m.graph->extra_outputs.size() == 1);
  CHECK(m.classes == 5);
  // outputs_net.io: x (2, 3, 8, 8), then PyTorch's y (2, 5) and aux (2, 5).
  const std::vector<float> io = read_floats(onnx_data() / "outputs_net.io");
  REQUIRE(io.size() == 384 + 10 + 10);
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("x", {2, 3, 8, 8}, DType::f32);
  const std::vector<Value> y = record_onnx_outputs(m, x);
  REQUIRE(y.size() == 2);
  CHECK(record_onnx(m, x).shape() == Shape{2, 5});  // the first output
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y[0], y[1]}});
  ex.set_input(x, host_floats({2, 3, 8, 8}, io.data()));
  ex.forward();
  for (int o = 0; o < 2; ++o) {
    const Tensor& got = ex.value(y[static_cast<size_t>(o)]);
    check_matches_pytorch("outputs_net output " + std::to_string(o),
                          std::span(got.data<float>(), static_cast<size_t>(got.numel())),
                          std::span(io).subspan(384 + 10 * static_cast<size_t>(o), 10));
  }
}

namespace {

// One SGD step of outputs_net through record_model_step (both heads' losses summed): the loss,
// every parameter gradient, then every parameter.
std::vector<Tensor> two_heads_step(MemoryMode memory) {
  const std::string path = (onnx_data() / "outputs_net.onnx").string();
  const ModelSpec& spec = find_model(kOnnxModelPrefix + path);
  ParamStore store(1);
  Tape tape(store);
  const ModelStep step = record_model_step(tape, spec, 4, Mode::training);
  REQUIRE(step.extra_outputs.size() == 1);
  load_onnx_weights(store, onnx_model(path));
  Executor ex(tape, cpu_backend(), sgd_step_options(memory, step.loss));
  ex.set_input(step.images, random_tensor(step.images.shape(), 21, -1, 1, DType::f32));
  ex.set_input(step.labels, random_labels(4, 5, 23));
  ex.forward();
  std::vector<Tensor> out{clone(ex.value(step.loss))};
  ex.backward(step.loss);
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && tape.values()[v].requires_grad) {
      const Value p(&tape, static_cast<int>(v));
      CAPTURE(tape.values()[v].name);
      const Tensor& g = ex.grad(p);
      const float* d = g.data<float>();
      // The auxiliary head learns too: its loss is in the sum.
      CHECK(std::any_of(d, d + g.numel(), [](float e) { return e != 0; }));
      out.push_back(clone(g));
    }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

}  // namespace

TEST_CASE("onnx: a model of two outputs trains both heads, planned == baseline bitwise") {
  const std::vector<Tensor> base = two_heads_step(MemoryMode::baseline);
  const std::vector<Tensor> planned = two_heads_step(MemoryMode::planned);
  REQUIRE(base.size() == planned.size());
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    REQUIRE(base[i].bytes() == planned[i].bytes());
    CHECK(std::memcmp(base[i].raw(), planned[i].raw(), base[i].bytes()) == 0);
  }
}

TEST_CASE("onnx: gradcheck through a model's two outputs in f64") {
  const OnnxModel m = load_onnx((onnx_data() / "outputs_net.onnx").string());
  const auto build = randomized(m, 400);  // both outputs
  check_gradients(build, {kink_free({2, 3, 8, 8}, 71)}, {.tolerance = 1e-6});
}

TEST_CASE("onnx: a model of several outputs, its errors") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "outputs_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  onnx::ModelProto twice = m, other = m;
  twice.mutable_graph()->mutable_output(1)->set_name("y");
  CHECK(error_for(twice) == "m.onnx: output 'y' is named twice");
  // A third output of another shape: conv1's map.
  other.mutable_graph()->add_output()->set_name("/conv1/Conv_output_0");
  CHECK(error_for(other) ==
        "m.onnx: the output '/conv1/Conv_output_0' is [1,8,8,8] and the first, 'y', [1,5]; frugal "
        "imports several outputs of one shape, each scored against the same labels");
  onnx::ModelProto input_out = m, weight_out = m, unnamed = m;
  input_out.mutable_graph()->mutable_output(1)->set_name("x");
  CHECK(error_for(input_out) == "m.onnx: the output 'x' is an input of the graph");
  weight_out.mutable_graph()->mutable_output(1)->set_name("fc.bias");
  CHECK(error_for(weight_out) ==
        "m.onnx: the output 'fc.bias' is a weight; frugal imports outputs that nodes compute");
  unnamed.mutable_graph()->mutable_output(1)->set_name("");
  CHECK(error_for(unnamed) == "m.onnx: output 1 has no name");
  CHECK(error_for(m).empty());
}
