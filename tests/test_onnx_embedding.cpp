// nn.Embedding through ONNX (tests/data/onnx/embedding_net.onnx: images and an int64 class label
// gathering a row of a weight table): PyTorch's output, the label input drawn below the table's
// rows (zeros where arithmetic makes the indices), a Gather along another axis and a label
// outside the table refused by name, planned == baseline bitwise over two SGD steps, f64
// gradients against finite differences. The op itself: tests/test_embedding.cpp.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "layers/constant.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "models/registry.h"
#include "models/step.h"
#include "run/executor.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// embedding_net's output (3, 3) at x (3, 3, 6, 6) and its labels (3).
std::vector<float> embedding_forward(const OnnxModel& m, const float* xs, const float* labels) {
  return two_input_forward(m, xs, labels, {3, 3, 6, 6}, {3});
}

// Two SGD steps of embedding_net at batch 4 (labels drawn below the table's 7 rows): the
// loss, the input's and every parameter's gradient, then the parameters.
std::vector<Tensor> embedding_steps(const OnnxModel& m, MemoryMode memory) {
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("x", {4, 3, 6, 6}, DType::f32, true);
  Value c = tape.input("label", {4}, DType::f32);
  Value labels = tape.input("labels", {4}, DType::i32);
  const std::vector<Value> extra{c};
  Value loss = softmax_cross_entropy(record_onnx(m, x, extra), labels);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), sgd_step_options(memory, loss));
  std::vector<Tensor> out;
  for (int step = 0; step < 2; ++step) {
    ex.set_input(x, random_tensor(x.shape(), 5 + step, -1, 1, DType::f32));
    Tensor classes = Tensor::empty({4}, DType::f32);
    for (int64_t i = 0; i < 4; ++i)
      classes.data<float>()[i] = static_cast<float>((5 * i + 3 * step) % 7);
    ex.set_input(c, classes);
    ex.set_input(labels, random_labels(4, m.classes, 9 + step));
    step_and_collect(ex, tape, loss, std::span<const Value>(&x, 1), out);
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

}  // namespace

TEST_CASE("onnx: an nn.Embedding of an int64 label input gives PyTorch's output") {
  const OnnxModel m = load_onnx((onnx_data() / "embedding_net.onnx").string());
  REQUIRE(m.extra_inputs.size() == 1);
  CHECK(m.extra_inputs[0].name == "label");
  CHECK(m.extra_inputs[0].whole);
  CHECK(m.extra_inputs[0].below == 7);  // the table's rows
  // embedding_net.io: x (3, 3, 6, 6), the labels (3) as floats (6, 0, 6), then PyTorch's y.
  const std::vector<float> io = read_floats(onnx_data() / "embedding_net.io");
  REQUIRE(io.size() == 324 + 3 + 9);
  check_matches_pytorch("embedding_net", embedding_forward(m, io.data(), io.data() + 324),
                        std::span(io).subspan(327));
  // What frugal memory --run and bench give it: whole numbers below the table's 7 rows.
  const ModelSpec& spec =
      find_model(kOnnxModelPrefix + (onnx_data() / "embedding_net.onnx").string());
  REQUIRE(spec.extra_inputs.size() == 1);
  CHECK(spec.extra_inputs[0].below == 7);
  ParamStore shapes = ParamStore::shapes_only();
  Tape t2(shapes);
  const ModelStep step = record_model_step(t2, spec, 64, Mode::training);
  const Tensor drawn = random_extra_inputs(spec, step.extra_inputs, 5).at(0);
  std::set<float> distinct;
  for (int64_t i = 0; i < 64; ++i) distinct.insert(drawn.data<float>()[i]);
  CHECK(distinct == std::set<float>{0, 1, 2, 3, 4, 5, 6});
  // A Gather of the table along another axis: an error naming the node.
  onnx::ModelProto proto;
  std::ifstream in(onnx_data() / "embedding_net.onnx", std::ios::binary);
  REQUIRE(proto.ParseFromIstream(&in));
  onnx::NodeProto* gather = proto.mutable_graph()->mutable_node(0);
  REQUIRE(gather->op_type() == "Gather");
  auto* axis = attribute(gather, "axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  CHECK(error_for(proto).ends_with(
      "(Gather): a Gather of a weight at an activation's values is imported along axis 0 only"));
  // Indices computed from the label (label + 3): zeros drawn for it, which any table takes.
  onnx::ModelProto plus = proto;
  onnx::GraphProto* g = plus.mutable_graph();
  std::vector<onnx::NodeProto> nodes(g->node().begin(), g->node().end());
  nodes[0].clear_attribute();
  nodes[0].set_input(1, "label3");
  g->clear_node();
  add_ints(g, "three", {3}, true);
  add_node(g, "Add", "plus3", {"label", "three"}, "label3");
  for (const onnx::NodeProto& node : nodes) *g->add_node() = node;
  CHECK(load_model(plus).extra_inputs.at(0).below == 1);
  // A label outside the table: an error naming it.
  std::vector<float> bad(io.begin(), io.end());
  bad[325] = 7;
  CHECK_THROWS_WITH_AS(embedding_forward(m, bad.data(), bad.data() + 324),
                       doctest::Contains("embedding: index 7 at position 1 of the indices [3] "
                                         "is outside the table's 7 rows"),
                       Error);
}

TEST_CASE("onnx: an nn.Embedding's model trains planned == baseline, gradcheck in f64") {
  const OnnxModel m = load_onnx((onnx_data() / "embedding_net.onnx").string());
  const std::vector<Tensor> base = embedding_steps(m, MemoryMode::baseline);
  const std::vector<Tensor> planned = embedding_steps(m, MemoryMode::planned);
  REQUIRE(base.size() == planned.size());
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(base[i], planned[i]));
  }
  // The labels a constant of the tape (whole numbers that finite differences must not move):
  // the table's gradient among the parameters'.
  const auto build = randomized(m, 600);
  Tensor labels = Tensor::empty({3}, DType::f64);
  labels.data<double>()[0] = 6, labels.data<double>()[1] = 0, labels.data<double>()[2] = 6;
  check_gradients(
      [&](std::span<const Value> in) {
        const std::vector<Value> all{in[0], constant(in[0].tape(), labels)};
        return build(all);
      },
      {random_tensor({3, 3, 6, 6}, 83, -1, 1)}, {.tolerance = 1e-6});
}
