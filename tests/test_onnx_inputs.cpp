// Models of several inputs (tests/data/onnx/inputs_net.onnx: images, a diffusion model's
// timestep and a mask): PyTorch's output, planned == baseline bitwise with every input's
// gradient, f64 gradients against finite differences through all three inputs, the commands
// that feed images alone refusing them, and errors naming the input at fault. An int64 timestep
// (int_input_net.onnx, read through a Cast): PyTorch's output, whole numbers drawn for it, f64
// gradients. Several outputs: tests/test_onnx_outputs.cpp.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <span>
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

OnnxModel inputs_net() {
  return load_onnx((onnx_data() / "inputs_net.onnx").string());
}

// Two SGD steps at batch 3: the loss, every input's gradient, every parameter gradient, then
// every parameter and statistic.
std::vector<Tensor> train_steps(const OnnxModel& m, MemoryMode memory) {
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("x", batched(3, m.input), DType::f32, true);
  Value t = tape.input("t", batched(3, m.extra_inputs[0].sample), DType::f32, true);
  Value k = tape.input("m", batched(3, m.extra_inputs[1].sample), DType::f32, true);
  const Shape label_shape = batched(3, m.label_shape);
  Value labels = tape.input("labels", label_shape, DType::i32);
  const std::vector<Value> extra{t, k};
  Value loss = pixel_cross_entropy(record_onnx(m, x, extra), labels);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), sgd_step_options(memory, loss));
  std::vector<Tensor> out;
  for (int step = 0; step < 2; ++step) {
    ex.set_input(x, random_tensor(x.shape(), 5 + step, -1, 1, DType::f32));
    ex.set_input(t, random_tensor(t.shape(), 7 + step, 0, 10, DType::f32));
    ex.set_input(k, random_tensor(k.shape(), 9 + step, 0, 1, DType::f32));
    ex.set_input(labels,
                 random_labels(label_shape.numel(), m.classes, 11 + step).reshape(label_shape));
    const Value grads[] = {x, t, k};
    step_and_collect(ex, tape, loss, grads, out);
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

// inputs_net with its second input `t` made int64, or fixed to a batch of 5 where x's is 2.
onnx::ModelProto edited(const std::function<void(onnx::ValueInfoProto&)>& edit) {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "inputs_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  for (auto& v : *m.mutable_graph()->mutable_input())
    if (v.name() == "t") edit(v);
  return m;
}

}  // namespace

TEST_CASE("onnx: a model of three inputs gives PyTorch's output") {
  const OnnxModel m = inputs_net();
  CHECK(m.input == Shape{3, 8, 8});
  REQUIRE(m.extra_inputs.size() == 2);
  CHECK(m.extra_inputs[0].name == "t");
  CHECK(m.extra_inputs[0].sample == Shape{});
  CHECK(m.extra_inputs[1].name == "m");
  CHECK(m.extra_inputs[1].sample == Shape{1, 8, 8});
  CHECK(m.label_shape == Shape{8, 8});
  // inputs_net.io: x (2, 3, 8, 8), t (2), m (2, 1, 8, 8), then PyTorch's y (2, 4, 8, 8).
  const std::vector<float> io = read_floats(onnx_data() / "inputs_net.io");
  REQUIRE(io.size() == 384 + 2 + 128 + 512);
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("images", {2, 3, 8, 8}, DType::f32);
  Value y = record_onnx(m, x);  // makes t and m inputs of the tape
  const std::vector<Value> extra = onnx_extra_inputs(m, x);
  REQUIRE(extra.size() == 2);
  CHECK(extra[0].shape() == Shape{2});
  CHECK(extra[1].shape() == Shape{2, 1, 8, 8});
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(x, host_floats({2, 3, 8, 8}, io.data()));
  ex.set_input(extra[0], host_floats({2}, io.data() + 384));
  ex.set_input(extra[1], host_floats({2, 1, 8, 8}, io.data() + 386));
  ex.forward();
  const Tensor& out = ex.value(y);
  check_matches_pytorch("inputs_net",
                        std::span(out.data<float>(), static_cast<size_t>(out.numel())),
                        std::span(io).subspan(514));
}

TEST_CASE("onnx: a model of three inputs trains planned == baseline bitwise") {
  const OnnxModel m = inputs_net();
  const std::vector<Tensor> base = train_steps(m, MemoryMode::baseline);
  const std::vector<Tensor> planned = train_steps(m, MemoryMode::planned);
  REQUIRE(base.size() == planned.size());
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    REQUIRE(base[i].bytes() == planned[i].bytes());
    CHECK(std::memcmp(base[i].raw(), planned[i].raw(), base[i].bytes()) == 0);
  }
  // The timestep's and the mask's gradients are not zero: both inputs reach the loss.
  for (int i : {2, 3}) {
    const float* g = base[static_cast<size_t>(i)].data<float>();
    CHECK(std::any_of(g, g + base[static_cast<size_t>(i)].numel(), [](float v) { return v != 0; }));
  }
}

TEST_CASE("onnx: gradcheck through a model's three inputs in f64") {
  const OnnxModel m = inputs_net();
  const auto build = randomized(m, 300);
  check_gradients(build,
                  {random_tensor({2, 3, 8, 8}, 61, -1, 1), random_tensor({2}, 62, 0, 3),
                   random_tensor({2, 1, 8, 8}, 63, 0, 1)},
                  {.tolerance = 1e-6});
}

TEST_CASE("onnx: a model of several inputs in the commands, and its errors") {
  const std::string path = (onnx_data() / "inputs_net.onnx").string();
  const ModelSpec& spec = find_model(kOnnxModelPrefix + path);
  CHECK(spec.extra_inputs == std::vector<ModelInput>{{"t", false}, {"m", false}});
  // frugal memory and bench record it with every input; train, evaluate, predict and segment
  // feed images alone and refuse it.
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store);
  const ModelStep step = record_model_step(tape, spec, 4, Mode::training);
  REQUIRE(step.extra_inputs.size() == 2);
  CHECK(step.extra_inputs[0].shape() == Shape{4});
  CHECK(step.extra_inputs[1].shape() == Shape{4, 1, 8, 8});
  const std::vector<Tensor> filled = random_extra_inputs(spec, step.extra_inputs, 3);
  REQUIRE(filled.size() == 2);
  CHECK(filled[1].shape() == Shape{4, 1, 8, 8});
  const std::string refused =
      "train: " + path + " reads inputs 't', 'm' besides its images; train feeds images alone";
  CHECK_THROWS_WITH_AS(check_images_only(spec, "train"), doctest::Contains(refused.c_str()), Error);
  CHECK_NOTHROW(check_images_only(find_model("resnet20"), "train"));

  const OnnxModel m = inputs_net();
  ParamStore s2(1);
  Tape t2(s2);
  Value x = t2.input("x", {2, 3, 8, 8}, DType::f32);
  Value t = t2.input("t", {3}, DType::f32);
  Value k = t2.input("m", {2, 1, 8, 8}, DType::f32);
  const std::vector<Value> wrong{t, k}, one{k};
  CHECK_THROWS_WITH_AS(record_onnx(m, x, wrong),
                       doctest::Contains("input 't' must be [2] f32 on the images' tape, got [3]"),
                       Error);
  CHECK_THROWS_WITH_AS(record_onnx(m, x, one), doctest::Contains("3 inputs, 2 given"), Error);

  CHECK(error_for(edited([](onnx::ValueInfoProto& v) {
          v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::STRING);
        })) ==
        "m.onnx: input 't' must be float or double (or int64 or int32, besides the image "
        "input)");
  CHECK(error_for(edited([](onnx::ValueInfoProto& v) {
          v.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::DOUBLE);
        })) ==
        "m.onnx: input 't' is f64 and the input 'x' f32; frugal imports models of one "
        "float type");
  {  // Every input's first axis is the batch, fixed alike or dynamic alike.
    onnx::ModelProto one = edited([](onnx::ValueInfoProto& v) {
      v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(1);
    });
    CHECK(error_for(one) ==
          "m.onnx: input 't' has a first axis of 1 where the image input 'x' has a dynamic "
          "batch; every input's first axis is the batch (an input broadcast over the batch is "
          "not imported: export it with the same dynamic_axes as the images)");
    auto* x0 = one.mutable_graph()->mutable_input(0);
    REQUIRE(x0->name() == "x");
    x0->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(2);
    CHECK(error_for(one).starts_with(
        "m.onnx: input 't' has a first axis of 1 where the image input 'x' has a batch of 2;"));
  }
  CHECK(error_for(edited([](onnx::ValueInfoProto& v) {
          v.mutable_type()->mutable_tensor_type()->mutable_shape()->clear_dim();
        })) ==
        "m.onnx: input 't' has 0 axes; an input besides the image input 'x' must have "
        "the batch axis first and at most 5 axes");
  CHECK(error_for(edited([](onnx::ValueInfoProto& v) { v.set_name("x"); })) ==
        "m.onnx: input 'x' is named twice");
}

TEST_CASE("onnx: an int64 timestep input, read through a Cast, gives PyTorch's output") {
  const OnnxModel m = load_onnx((onnx_data() / "int_input_net.onnx").string());
  REQUIRE(m.extra_inputs.size() == 1);
  CHECK(m.extra_inputs[0].name == "t");
  CHECK(m.extra_inputs[0].whole);  // int64 in the file, carried as whole numbers in f32
  // int_input_net.io: x (2, 3, 6, 6), t (2) as floats (17 and 503), then PyTorch's y (2, 3).
  const std::vector<float> io = read_floats(onnx_data() / "int_input_net.io");
  REQUIRE(io.size() == 216 + 2 + 6);
  check_matches_pytorch("int_input_net", two_input_forward(m, io.data(), io.data() + 216),
                        std::span(io).subspan(218));
  // What frugal memory --run and bench give it: whole numbers in [0, 1000).
  const std::string path = (onnx_data() / "int_input_net.onnx").string();
  const ModelSpec& spec = find_model(kOnnxModelPrefix + path);
  REQUIRE(spec.extra_inputs.size() == 1);
  CHECK(spec.extra_inputs[0].whole);
  ParamStore shapes = ParamStore::shapes_only();
  Tape t2(shapes);
  const ModelStep step = record_model_step(t2, spec, 64, Mode::training);
  const Tensor drawn = random_extra_inputs(spec, step.extra_inputs, 5).at(0);
  REQUIRE(drawn.numel() == 64);
  std::set<float> distinct;
  for (int64_t i = 0; i < 64; ++i) {
    const float v = drawn.data<float>()[i];
    CHECK(v == std::floor(v));
    CHECK(v >= 0);
    CHECK(v < 1000);
    distinct.insert(v);
  }
  CHECK(distinct.size() > 30);
}

TEST_CASE("onnx: gradcheck through an int64 timestep's model in f64") {
  const OnnxModel m = load_onnx((onnx_data() / "int_input_net.onnx").string());
  const auto build = randomized(m, 500);
  Tensor t = Tensor::empty({2}, DType::f64);
  t.data<double>()[0] = 17, t.data<double>()[1] = 503;
  check_gradients(build, {random_tensor({2, 3, 6, 6}, 81, -1, 1), t}, {.tolerance = 1e-6});
}

namespace {

// int_input_net with `prefix` nodes in front of its first (the Cast of t to float), which then
// reads `reads` instead of t.
onnx::ModelProto int_input_with(const std::function<void(onnx::GraphProto*)>& prefix,
                                const std::string& reads) {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "int_input_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<onnx::NodeProto> nodes(g->node().begin(), g->node().end());
  REQUIRE(nodes[0].op_type() == "Cast");
  nodes[0].set_input(0, reads);
  g->clear_node();
  prefix(g);
  for (const onnx::NodeProto& n : nodes) *g->add_node() = n;
  return m;
}

// The model's output at x = ramp, t = (t0, t1), its weights the file's.
std::vector<float> int_input_forward(const onnx::ModelProto& proto, float t0, float t1) {
  const std::vector<float> xs = ramp(216), ts{t0, t1};
  return two_input_forward(load_model(proto), xs.data(), ts.data());
}

}  // namespace

TEST_CASE("onnx: integer inputs: exact arithmetic imports, the rest is refused by name") {
  onnx::ModelProto plain;
  {
    std::ifstream in(onnx_data() / "int_input_net.onnx", std::ios::binary);
    REQUIRE(plain.ParseFromIstream(&in));
  }
  const std::vector<float> at_18 = int_input_forward(plain, 18, 504);
  // t + 1 with an int64 1 (a constant beside the input), then the Cast: t = (17, 503) gives
  // what (18, 504) gives the file as it is; its weights load.
  const onnx::ModelProto plus = int_input_with(
      [](onnx::GraphProto* g) {
        add_ints(g, "one", {1}, true);
        add_node(g, "Add", "plus", {"t", "one"}, "t1");
      },
      "t1");
  CHECK(int_input_forward(plus, 17, 503) == at_18);
  // A Cast to int64 first (t.long()): an identity over whole numbers.
  const onnx::ModelProto longs = int_input_with(
      [](onnx::GraphProto* g) {
        auto* to = attribute(add_node(g, "Cast", "long", {"t"}, "tl"), "to");
        to->set_type(onnx::AttributeProto::INT);
        to->set_i(onnx::TensorProto::INT64);
      },
      "tl");
  CHECK(int_input_forward(longs, 18, 504) == at_18);
  // Integer division computed in floats would be wrong: refused, naming the node and input.
  const onnx::ModelProto div = int_input_with(
      [](onnx::GraphProto* g) {
        add_ints(g, "seven", {7}, true);
        add_node(g, "Div", "div", {"t", "seven"}, "t7");
      },
      "t7");
  CHECK(error_for(div).starts_with(
      "m.onnx: node 'div' (Div): reads 't', whole numbers from the integer input 't', in Div; "
      "frugal carries integer inputs in the model's float type"));
  // As a shape (Reshape's target): refused as indices or a shape.
  const onnx::ModelProto shape = int_input_with(
      [](onnx::GraphProto* g) {
        add_node(g, "Reshape", "reshape", {"t", "t"}, "tr");
      },
      "tr");
  CHECK(
      error_for(shape).starts_with("m.onnx: node 'reshape' (Reshape): reads 't', whole numbers "
                                   "from the integer input 't', as indices of an activation or "
                                   "a shape (of a weight table's rows, nn.Embedding, they are "
                                   "imported)"));
  // int32 as int64; an integer image input is refused.
  onnx::ModelProto int32 = plain;
  int32.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT32);
  CHECK(load_model(int32).extra_inputs.at(0).whole);
  onnx::ModelProto first = plain;
  first.mutable_graph()->mutable_input()->SwapElements(0, 1);
  CHECK(error_for(first) == "m.onnx: input 't' must be float or double");
}
