// ONNX import's errors for ops over activations that do not fit what frugal imports:
// LayerNorm and InstanceNormalization, Pow, Expand's broadcasting, the reductions, Gather, LSTM,
// GRU and RNN, comparisons and Where, ScatterND each name the node, its op type and the reason
// (tests/test_onnx_errors.cpp has bad files and the other ops). Past 400 lines: a case per op,
// each editing one fixture the same way (error_with_first).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <string>

#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "models/onnx_scatter.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

// The load error of m with its first node of type `op` changed by edit(node).
template <typename Edit>
std::string error_with_first(const onnx::ModelProto& m, const std::string& op, Edit edit) {
  onnx::ModelProto e = m;
  for (auto& n : *e.mutable_graph()->mutable_node())
    if (n.op_type() == op) {
      edit(n);
      break;
    }
  return error_for(e);
}

TEST_CASE(
    "onnx: normalizations, broadcasts, reductions and gathers that do not fit are errors "
    "naming what is wrong") {
  {  // LayerNormalization over the batch axis or with a scale of other axes; Pow by infinity.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "norm_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto batch = m, wide = m, cube = m;
    auto first_norm = [](onnx::ModelProto& p) -> onnx::NodeProto* {
      for (auto& n : *p.mutable_graph()->mutable_node())
        if (n.op_type() == "LayerNormalization") return &n;
      return nullptr;
    };
    attribute(first_norm(batch), "axis")->set_i(0);
    CHECK(error_for(batch).ends_with(
        "(LayerNormalization): LayerNorm over axis 0 of [1,6,5,8] normalizes the batch axis; "
        "frugal imports those from axis 1 on"));
    attribute(first_norm(wide), "axis")->set_i(-2);
    CHECK(
        error_for(wide).ends_with("(LayerNormalization): scale [8] for axes 2 to 3 of "
                                  "[1,6,5,8]: frugal imports a scale of the normalized axes' "
                                  "shape"));
    std::string exponent;
    for (auto& n : cube.graph().node())
      if (n.op_type() == "Pow") exponent = n.input(1);
    for (auto& n : *cube.mutable_graph()->mutable_node())
      if (n.op_type() == "Constant" && n.output(0) == exponent) {
        onnx::TensorProto* t = attribute(&n, "value")->mutable_t();
        t->clear_raw_data();
        t->add_float_data(INFINITY);
      }
    CHECK(error_for(cube).ends_with("(Pow): the exponent must be a finite constant scalar"));
    // Without its bias input, a LayerNormalization takes a fixed zero bias (not a weight).
    onnx::ModelProto unbiased = m;
    onnx::NodeProto* norm = first_norm(unbiased);
    const std::string bias = norm->input(2);
    norm->mutable_input()->RemoveLast();
    CHECK(error_for(unbiased).empty());
    const std::string bytes = unbiased.SerializeAsString();
    const OnnxModel loaded = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
    const std::string zero = norm->output(0) + ".zero_bias";
    REQUIRE(loaded.graph->params.count(zero) == 1);
    CHECK_FALSE(loaded.graph->params.at(zero));
    CHECK(loaded.graph->params.count(bias) == 0);
    CHECK(loaded.graph->initializers.at(zero).shape() == Shape{8});
  }
  {  // Expand over the batch axis, to a shape that does not broadcast, or to a higher rank.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "expand_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    auto with_shape = [&](std::vector<int64_t> shape) {
      onnx::ModelProto e = m;
      onnx::GraphProto* g = e.mutable_graph();
      onnx::NodeProto* c = g->add_node();
      c->set_op_type("Constant");
      c->set_name("fixed");
      c->add_output("fixed_shape");
      onnx::AttributeProto* value = attribute(c, "value");
      value->set_type(onnx::AttributeProto::TENSOR);
      onnx::TensorProto* t = value->mutable_t();
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(shape.size()));
      for (int64_t d : shape) t->add_int64_data(d);
      // The constant first, so that the Expand after it reads it.
      for (int i = g->node_size() - 1; i > 0; --i) g->mutable_node()->SwapElements(i, i - 1);
      for (auto& n : *g->mutable_node())
        if (n.op_type() == "Expand" && n.input(1) != "fixed_shape") {
          n.set_input(1, "fixed_shape");
          break;
        }
      return error_for(e);
    };
    CHECK(with_shape({1, 6, 5, 4}).empty());  // the batch of the check's export is 1
    CHECK(with_shape({3, 6, 5, 4})
              .ends_with("(Expand): Expand of [1,1,5,4] to (3,6,5,4): broadcasting over the batch "
                         "axis is not "
                         "imported"));
    // Recorded when the Mul reading it needs the expanded shape: the error names the Expand
    // alone, not the Mul as well.
    CHECK(with_shape({3, 6, 5, 4}).find("(Mul)") == std::string::npos);
    CHECK(with_shape({1, 6, 7, 4})
              .ends_with("(Expand): Expand of [1,1,5,4] to (1,6,7,4): axis 2 is 5 and 7, which do "
                         "not broadcast"));
    CHECK(with_shape({2, 1, 6, 5, 4})
              .ends_with("(Expand): Expand of [1,1,5,4] to (2,1,6,5,4): the new leading axes would "
                         "stand in front "
                         "of the batch axis; frugal imports expansions that keep it first"));
  }
  {  // The other reductions: over the batch axis, outside the rank, without axes; ReduceProd.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "reduce11_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto batch = m, outside = m, none = m, prod = m;
    for (auto& n : *batch.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceMax") attribute(&n, "axes")->set_ints(0, 0);
    CHECK(error_for(batch).find("(ReduceMax): reduce_max over axes (0) of [1,6,5,4] includes "
                                "the batch axis; frugal imports reductions over the other "
                                "axes") != std::string::npos);
    for (auto& n : *outside.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceMin") attribute(&n, "axes")->set_ints(0, 9);
    CHECK(error_for(outside).find("(ReduceMin): reduce_min over axes (9) of [1,6,5]: axis 9 is "
                                  "outside the rank") != std::string::npos);
    for (auto& n : *none.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceL1") attribute(&n, "axes")->clear_ints();
    CHECK(error_for(none).ends_with(
        "(ReduceL1): no axes: the reduction over every axis, the batch's included"));
    for (auto& n : *prod.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceLogSumExp") n.set_op_type("ReduceProd");
    CHECK(error_for(prod).find("(ReduceProd): op not imported yet;") != std::string::npos);
    // At opset 13 ReduceSum's axes are an input: empty, the reduction over every axis.
    onnx::ModelProto m13;
    std::ifstream in13(onnx_data() / "reduce_net.onnx", std::ios::binary);
    REQUIRE(m13.ParseFromIstream(&in13));
    std::string axes;
    for (auto& n : m13.graph().node())
      if (n.op_type() == "ReduceSum" && axes.empty()) axes = n.input(1);
    for (auto& n : *m13.mutable_graph()->mutable_node())
      if (n.op_type() == "Constant" && n.output(0) == axes) {
        onnx::TensorProto* t = attribute(&n, "value")->mutable_t();
        t->clear_raw_data();
        t->clear_int64_data();
        t->set_dims(0, 0);
      }
    CHECK(error_for(m13).ends_with(
        "(ReduceSum): no axes: the reduction over every axis, the batch's included"));
  }
  {  // ELU, CELU and SELU with constants that are not finite, CELU's alpha of 0.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "activation_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto elu = m, selu = m, celu = m;
    auto set = [](onnx::ModelProto& model, const char* op, const char* name, float value) {
      for (auto& n : *model.mutable_graph()->mutable_node())
        if (n.op_type() == "Elu") {
          n.set_op_type(op);
          attribute(&n, name)->set_type(onnx::AttributeProto::FLOAT);
          attribute(&n, name)->set_f(value);
        }
    };
    set(elu, "Elu", "alpha", INFINITY);
    CHECK(error_for(elu).ends_with("(Elu): alpha must be finite"));
    set(selu, "Selu", "gamma", NAN);
    CHECK(error_for(selu).ends_with("(Selu): alpha and gamma must be finite"));
    set(celu, "Celu", "alpha", 0);
    CHECK(error_for(celu).ends_with("(Celu): alpha must be finite and not 0"));
  }
  {  // InstanceNormalization with a scale that is not one per channel, or a zero epsilon.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "instance_norm_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto scale = m, eps = m;
    for (auto& n : *scale.mutable_graph()->mutable_node())
      if (n.op_type() == "InstanceNormalization") {
        n.set_input(1, "fc.bias");
        break;
      }
    CHECK(
        error_for(scale).ends_with("(InstanceNormalization): InstanceNormalization of "
                                   "[1,8,6,5]: its scale [5] is not one value per channel (8)"));
    for (auto& n : *eps.mutable_graph()->mutable_node())
      if (n.op_type() == "InstanceNormalization") attribute(&n, "epsilon")->set_f(0);
    CHECK(error_for(eps).ends_with("(InstanceNormalization): epsilon must be positive"));
  }
  {  // PRelu whose slope is neither one per channel nor a single value.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "prelu_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.op_type() == "PRelu") {
        n.set_input(1, "fc.bias");  // five values for eight channels
        break;
      }
    CHECK(
        error_for(m).ends_with("(PRelu): PRelu of [1,8,6,5]: its slope [5] is neither one value "
                               "per channel (8, along axis 1) nor a single one"));
  }
  {  // Gather over an activation along the batch axis, or by an index outside the axis.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "gather_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto batch = m, outside = m;
    for (auto& n : *batch.mutable_graph()->mutable_node())
      if (n.op_type() == "Gather") attribute(&n, "axis")->set_i(0);
    CHECK(error_for(batch).ends_with("(Gather): a Gather along the batch axis is not imported"));
    std::string index;
    for (auto& n : outside.graph().node())
      if (n.op_type() == "Gather") index = n.input(1);
    for (auto& n : *outside.mutable_graph()->mutable_node())
      if (n.op_type() == "Constant" && n.output(0) == index) {
        onnx::TensorProto* t = attribute(&n, "value")->mutable_t();
        t->clear_raw_data();
        t->clear_int64_data();
        t->add_int64_data(7);
      }
    CHECK(error_for(outside).find("(Gather): gather: index 7 outside axis 1") != std::string::npos);
  }
}

// Einsum: any equation of one or two operands imports (models/onnx_einsum.h); an ellipsis, a
// diagonal, a letter the operands lack, no output, or a second activation whose batch axis is
// not its first letter is an error naming the equation.
TEST_CASE("onnx: an Einsum that does not fit is an error naming the equation") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "einsum_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  auto with = [&](const std::string& equation) {
    onnx::ModelProto e = m;
    for (auto& n : *e.mutable_graph()->mutable_node())
      if (n.op_type() == "Einsum") {
        attribute(&n, "equation")->set_s(equation);
        break;
      }
    return error_for(e);
  };
  std::string first;  // the first Einsum's name
  for (const auto& n : m.graph().node())
    if (first.empty() && n.op_type() == "Einsum") first = n.name();
  CHECK(with("bh i d, bh j d -> bh i j").empty());  // spaces are ignored
  CHECK(with("bhid,bhjd->bhij").empty());
  // In general (the output reordered, an axis summed out of one operand alone, nothing
  // contracted): the Einsum imports, whatever the nodes after it make of its shape.
  for (const char* general : {"bhid,bhjd->bhji", "bhid,bhjd->bhid", "bhid,bhje->bhij"}) {
    CAPTURE(general);
    const std::string e = with(general);
    CAPTURE(e);
    CHECK(e.find("node '" + first + "'") == std::string::npos);
  }
  for (const char* bad : {"...id,...jd->...ij", "bhid,bhjd", "bhid,hbjd->bhij", "bhii,bhjd->bhij",
                          "bhid,bhjd->bhiij", "bhid,bhjd->bhik", "bhid,bhjd->hbij"}) {
    CAPTURE(bad);
    const std::string e = with(bad);
    CHECK(e.find("(Einsum): equation '") != std::string::npos);
  }
}

TEST_CASE("onnx: timm's ops where they do not fit are errors naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "timm_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto node = [](onnx::ModelProto& p, const std::string& op) -> onnx::NodeProto* {
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.op_type() == op) return &n;
    return nullptr;
  };
  // Attention's unbind along an axis 0 that is the batch's (the Transpose keeping it first).
  onnx::ModelProto batch = m;
  for (auto& n : *batch.mutable_graph()->mutable_node())
    if (n.op_type() == "Transpose" && n.output(0) == node(batch, "Split")->input(0)) {
      onnx::AttributeProto* perm = attribute(&n, "perm");
      perm->clear_ints();
      for (int p : {0, 2, 3, 1, 4}) perm->add_ints(p);
    }
  CHECK(error_for(batch).ends_with("(Split): a Split along the batch axis is not imported"));
  // LeViT's Flatten at axis 0: the batch axis would move.
  onnx::ModelProto flat = m;
  attribute(node(flat, "Flatten"), "axis")->set_i(0);
  CHECK(error_for(flat).ends_with(
      "(Flatten): axis 0 would move the batch axis; frugal imports axes from 1 on"));
  // ECA's 1-D convolution given a 3-D window (kernel_shape) but the pads of a 1-D one.
  onnx::ModelProto cube = m;
  for (auto& n : *cube.mutable_graph()->mutable_node())
    if (n.op_type() == "Conv" && attribute(&n, "kernel_shape")->ints_size() == 1) {
      attribute(&n, "kernel_shape")->add_ints(3);
      attribute(&n, "kernel_shape")->add_ints(3);
    }
  CHECK(error_for(cube).ends_with(
      "(Conv): a 3-D window needs kernel_shape of three values, strides and dilations of three "
      "where written, and six pads"));
  // torch.clamp(t, -1.5, 2) with its bounds crossed: min 3 above max 2.
  onnx::ModelProto crossed = m;
  std::string low;
  for (auto& n : crossed.graph().node())
    if (n.op_type() == "Clip" && n.input_size() == 3) low = n.input(1);
  REQUIRE(!low.empty());
  for (auto& n : *crossed.mutable_graph()->mutable_node())
    if (n.op_type() == "Constant" && n.output(0) == low) {
      onnx::TensorProto* t = attribute(&n, "value")->mutable_t();
      t->clear_raw_data();
      t->add_float_data(3);
    }
  CHECK(error_for(crossed).ends_with(
      "(Clip): bounds [3.000000, 2.000000]: expected numbers with min <= max"));
  // A Cast of an activation to its own type is nothing; to float64 in a float32 model, an error.
  for (int64_t to : {onnx::TensorProto::FLOAT, onnx::TensorProto::DOUBLE}) {
    CAPTURE(to);
    onnx::ModelProto cast = m;
    auto* nodes = cast.mutable_graph()->mutable_node();
    int flatten = 0;
    while (nodes->Get(flatten).op_type() != "Flatten") ++flatten;
    onnx::NodeProto* c = nodes->Add();
    c->set_name("cast");
    c->set_op_type("Cast");
    c->add_input(nodes->Get(flatten).input(0));
    c->add_output("cast_out");
    attribute(c, "to")->set_i(to);
    attribute(c, "to")->set_type(onnx::AttributeProto::INT);
    for (int i = nodes->size() - 1; i > flatten; --i) nodes->SwapElements(i, i - 1);
    nodes->Mutable(flatten + 1)->set_input(0, "cast_out");
    if (to == onnx::TensorProto::FLOAT)
      CHECK(error_for(cast).empty());
    else
      CHECK(error_for(cast).ends_with(
          "(Cast): a Cast of an activation to other than the model's own type, float"));
  }
}

TEST_CASE("onnx: a Tile that does not fit is an error naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "tile_static_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  // GCViT's query repeated (4, 4, 1): its repeat counts rewritten.
  auto with_repeats = [&](std::vector<int64_t> repeats) {
    onnx::ModelProto e = m;
    std::string name;
    for (auto& n : e.graph().node())
      if (n.op_type() == "Tile" && n.name() == "/Tile_3") name = n.input(1);
    for (auto& n : *e.mutable_graph()->mutable_node())
      if (n.op_type() == "Constant" && n.output(0) == name) {
        onnx::TensorProto* t = attribute(&n, "value")->mutable_t();
        t->clear_raw_data();
        t->clear_int64_data();
        t->clear_dims();
        t->add_dims(static_cast<int64_t>(repeats.size()));
        for (int64_t r : repeats) t->add_int64_data(r);
      }
    return error_for(e);
  };
  CHECK(with_repeats({4, 4, 1}).empty());
  CHECK(with_repeats({4, 4}).ends_with(
      "(Tile): Tile of [1,1,8] by (4,4): expected one repeat count per axis"));
  CHECK(with_repeats({4, 0, 1}).ends_with(
      "(Tile): Tile of [1,1,8] by (4,0,1): frugal imports repeat counts of 1 to 65536"));
}

TEST_CASE("onnx: a 3-D convolution frugal does not import is an error naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "conv3d_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  // The first Conv3d, LambdaNetworks' (3, 3, 1) window padded (1, 1, 0), rewritten.
  auto with_window = [&](std::vector<int64_t> kernel, std::vector<int64_t> pads) {
    onnx::ModelProto e = m;
    for (auto& n : *e.mutable_graph()->mutable_node())
      if (n.op_type() == "Conv" && attribute(&n, "kernel_shape")->ints_size() == 3) {
        attribute(&n, "kernel_shape")->clear_ints();
        for (int64_t k : kernel) attribute(&n, "kernel_shape")->add_ints(k);
        attribute(&n, "pads")->clear_ints();
        for (int64_t p : pads) attribute(&n, "pads")->add_ints(p);
        break;
      }
    return error_for(e);
  };
  CHECK(with_window({3, 3, 1}, {1, 1, 0, 1, 1, 0}).empty());
  // 1 wide along no axis: the general 3-D path (models/onnx_conv3d.h), whose window must be
  // the weight's; padded along its 1-wide axis, it imports that way too.
  CHECK(with_window({3, 3, 2}, {1, 1, 0, 1, 1, 0})
            .ends_with("(Conv): kernel_shape (3, 3, 2) but the weight is [2,1,3,3,1]"));
  CHECK(with_window({3, 3, 1}, {1, 1, 1, 1, 1, 0}).empty());
  // 1 deep (Conv3dOp) where the weight is 3 deep.
  CHECK(with_window({1, 3, 3}, {0, 0, 0, 0, 0, 0})
            .ends_with("(Conv): kernel_shape (1, 3, 3) but the weight is [2,1,3,3,1]"));
}

TEST_CASE("onnx: bicubic resizing and stacking that frugal does not import are errors") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "bicubic_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto first = [](onnx::ModelProto& p, const std::string& op) -> onnx::NodeProto* {
    for (auto& n : *p.mutable_graph()->mutable_node())
      if (n.op_type() == op) return &n;
    return nullptr;
  };
  onnx::ModelProto outside = m, coeff = m, crop = m, batch = m;
  onnx::AttributeProto* e = attribute(first(outside, "Resize"), "exclude_outside");
  e->set_type(onnx::AttributeProto::INT);
  e->set_i(1);
  CHECK(error_for(outside).ends_with(
      "(Resize): exclude_outside 1 is not imported (PyTorch exports 0: the edge repeated)"));
  attribute(first(coeff, "Resize"), "cubic_coeff_a")->set_f(NAN);
  CHECK(error_for(coeff).ends_with("(Resize): cubic_coeff_a is not a finite number"));
  attribute(first(crop, "Resize"), "coordinate_transformation_mode")->set_s("tf_crop_and_resize");
  CHECK(error_for(crop).ends_with(
      "(Resize): coordinate_transformation_mode tf_crop_and_resize is not imported in cubic "
      "mode"));
  // The stack's mean over axis 1 instead, the batch's: the output is not (N, ...).
  for (auto& n : *batch.mutable_graph()->mutable_node())
    if (n.op_type() == "ReduceMean" && attribute(&n, "axes")->ints(0) == 0)
      attribute(&n, "axes")->set_ints(0, 1);
  CHECK(
      error_for(batch).ends_with("the output 'y' is [2,5] for a batch of 1: its first axis "
                                 "must be the batch's (reshapes and transposes may move the "
                                 "batch axis on the way, but it must come back first)"));
}

TEST_CASE("onnx: an LSTM frugal does not import is an error naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "lstm_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto edited = [&](auto edit) { return error_with_first(m, "LSTM", edit); };
  auto set_int = [](onnx::NodeProto& n, const char* name, int64_t v) {
    onnx::AttributeProto* a = attribute(&n, name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
  CHECK(edited([&](onnx::NodeProto& n) {
          set_int(n, "layout", 1);
        }).ends_with("(LSTM): layout 1 (batch first) is not imported"));
  CHECK(edited([&](onnx::NodeProto& n) {
          set_int(n, "input_forget", 1);
        }).ends_with("(LSTM): input_forget 1 is not imported"));
  CHECK(edited([&](onnx::NodeProto& n) {
          set_int(n, "hidden_size", 4);
        }).ends_with("(LSTM): LSTM of [5,4,4]: W is [2,12,4], expected [2,16,4]"));
  CHECK(edited([&](onnx::NodeProto& n) {
          attribute(&n, "direction")->set_s("sideways");
        }).ends_with("(LSTM): direction sideways is not forward, reverse or bidirectional"));
  CHECK(edited([&](onnx::NodeProto& n) {
          onnx::AttributeProto* a = attribute(&n, "activations");
          a->set_type(onnx::AttributeProto::STRINGS);
          for (const char* f : {"Sigmoid", "Relu", "Tanh", "Sigmoid", "Tanh", "Tanh"})
            a->add_strings(f);
        }).ends_with("(LSTM): activations other than Sigmoid, Tanh, Tanh are not imported"));
  CHECK(edited([&](onnx::NodeProto& n) {
          n.set_input(4, n.input(5));
        }).ends_with("(LSTM): sequence_lens is not imported (every sequence full length)"));
}

TEST_CASE("onnx: a GRU frugal does not import is an error naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "gru_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto edited = [&](auto edit) { return error_with_first(m, "GRU", edit); };
  CHECK(edited([](onnx::NodeProto& n) { attribute(&n, "linear_before_reset")->set_i(0); })
            .ends_with("(GRU): linear_before_reset 0 is not imported (PyTorch's nn.GRU exports "
                       "1)"));
  CHECK(edited([](onnx::NodeProto& n) {
          attribute(&n, "hidden_size")->set_i(4);
        }).ends_with("(GRU): GRU of [5,4,4]: W is [2,9,4], expected [2,12,4]"));
  CHECK(edited([](onnx::NodeProto& n) {
          onnx::AttributeProto* a = attribute(&n, "activations");
          a->set_type(onnx::AttributeProto::STRINGS);
          for (const char* f : {"Sigmoid", "Tanh", "Relu", "Tanh"}) a->add_strings(f);
        }).ends_with("(GRU): activations other than Sigmoid, Tanh are not imported"));
  CHECK(edited([](onnx::NodeProto& n) {
          n.add_output("c_out");
        }).ends_with("(GRU): 3 outputs; a GRU has Y and Y_h"));
}

TEST_CASE("onnx: comparisons and Where frugal does not import are errors naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "where_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  const std::string conv = "/conv/Conv_output_0";  // a float activation, no mask
  CHECK(error_with_first(m, "Where", [&](onnx::NodeProto& n) { n.set_input(0, conv); })
            .ends_with("(Where): input 0 ('/conv/Conv_output_0') is neither a comparison's "
                       "output over activations nor computed from shapes and constants"));
  CHECK(error_with_first(m, "And", [&](onnx::NodeProto& n) { n.set_input(1, conv); })
            .ends_with("(And): input 1 ('/conv/Conv_output_0') is not a comparison's output over "
                       "activations"));
  for (const char* logical : {"Or", "Xor"}) {  // of two masks: imports; of an activation: not
    CHECK(error_with_first(m, "And", [&](onnx::NodeProto& n) { n.set_op_type(logical); }).empty());
    CHECK(error_with_first(m, "And",
                           [&](onnx::NodeProto& n) {
                             n.set_op_type(logical);
                             n.set_input(1, conv);
                           })
              .ends_with("(" + std::string(logical) +
                         "): input 1 ('/conv/Conv_output_0') is not a comparison's output over "
                         "activations"));
  }
  CHECK(error_with_first(m, "Cast", [&](onnx::NodeProto& n) {
          if (n.input(0) == "/GreaterOrEqual_output_0") n.set_input(0, conv);
        }).empty());  // the first Cast is over shape values: unchanged
  onnx::ModelProto to_bool = m;
  for (auto& n : *to_bool.mutable_graph()->mutable_node())
    if (n.op_type() == "Cast" && n.input(0) == "/GreaterOrEqual_output_0") n.set_input(0, conv);
  CHECK(error_for(to_bool).ends_with(
      "(Cast): a Cast of an activation to other than the model's own type, float"));
  // A condition that does not broadcast against the branches, found while recording.
  onnx::ModelProto wide = m;
  for (auto& n : *wide.mutable_graph()->mutable_node())
    if (n.op_type() == "Where" && n.input(0) == "/And_output_0") n.set_input(2, "/MatMul_output_0");
  CHECK(
      error_for(wide).ends_with("(Where): where: condition [1,20,6], a [1,20,6], b [1,20,20]: "
                                "shapes [1,20,6] and [1,20,20] do not broadcast (axis -1: 6 "
                                "against 20)"));
}

// scatter_net with one more ScatterND into its output (N, 5) at the indices given, from
// constant updates (N, 1): the error of loading it or of recording it at a batch of 2.
std::string scatter_error(const std::vector<int64_t>& dims, const std::vector<int64_t>& index,
                          const std::string& reduction = "none") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "scatter_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  onnx::GraphProto* g = m.mutable_graph();
  auto constant = [&](const std::string& name, onnx::TensorProto::DataType type,
                      const std::vector<int64_t>& shape) {
    onnx::NodeProto* c = g->add_node();
    c->set_op_type("Constant");
    c->add_output(name);
    onnx::AttributeProto* v = c->add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    v->mutable_t()->set_data_type(type);
    for (int64_t d : shape) v->mutable_t()->add_dims(d);
    return v->mutable_t();
  };
  onnx::TensorProto* idx = constant("idx", onnx::TensorProto::INT64, dims);
  for (int64_t i : index) idx->add_int64_data(i);
  std::vector<int64_t> udims(dims.begin(), dims.end() - 1);
  int64_t count = 1;
  for (int64_t d : udims) count *= d;
  onnx::TensorProto* upd = constant("upd", onnx::TensorProto::FLOAT, udims);
  for (int64_t i = 0; i < count; ++i) upd->add_float_data(0.5f);
  onnx::NodeProto* s = g->add_node();
  s->set_op_type("ScatterND");
  s->set_name("late");
  for (const char* i : {"y", "idx", "upd"}) s->add_input(i);
  s->add_output("scattered");
  if (reduction != "none") {
    onnx::AttributeProto* a = s->add_attribute();
    a->set_name("reduction");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(reduction);
  }
  g->mutable_output(0)->set_name("scattered");
  const std::string bytes = m.SerializeAsString();
  try {  // (recorded at the batch of 2 the constant indices were written for)
    const OnnxModel loaded = load_onnx_bytes("scatter.onnx", bytes.data(), bytes.size());
    const std::vector<float> io = read_floats(onnx_data() / "scatter_net.io");
    onnx_forward(loaded, std::vector<float>(io.begin(), io.begin() + 2 * loaded.input.numel()));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("onnx: a ScatterND frugal does not import is an error naming what is wrong") {
  // One index tuple per sample into scatter_net's output (N, 5): loads (checked at a batch of
  // 1), and at a batch of 2 its indices' first axis is no longer the batch.
  CHECK(
      scatter_error({1, 1, 2}, {0, 3})
          .find("node 'late' (ScatterND): indices [1,1,2] into [2,5]: frugal imports indices whose "
                "first axis is the batch") != std::string::npos);
  CHECK(scatter_error({1, 1, 2}, {0, 3}, "add")
            .ends_with("(ScatterND): only reduction 'none' is imported"));
  // At a batch of 2, by hand: a sample written from another's updates, samples written at
  // different positions, an index out of range, updates of the wrong shape.
  ParamStore store;
  Tape tape(store);
  Value data = tape.input("data", {2, 5}, DType::f32);
  Value updates = tape.input("updates", {2, 1}, DType::f32);
  auto error = [&](std::vector<int64_t> index, Value u) -> std::string {
    try {
      record_scatter(IntTensor{.dims = {2, 1, 2}, .values = std::move(index)}, data, u);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error({0, 3, 1, 3}, updates).empty());
  CHECK(error({1, 3, 0, 3}, updates) ==
        "index tuple 0 of [2,1,2] writes sample 1 from sample 0's updates; frugal imports each "
        "sample's slices from its own");
  CHECK(error({0, 3, 1, 2}, updates) ==
        "sample 1's slices differ from sample 0's; frugal imports the same positions in every "
        "sample");
  CHECK(error({0, 3, 1, 5}, updates) == "index 5 outside axis 1 of [2,5]");
  CHECK(error({0, 3, 1, 3}, data) == "updates [2,5] where indices [2,1,2] into [2,5] need [2,1]");
}

TEST_CASE("onnx: an RNN frugal does not import is an error naming what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "rnn_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto edited = [&](auto edit) { return error_with_first(m, "RNN", edit); };
  auto activations = [](std::initializer_list<const char*> fs) {
    return [fs](onnx::NodeProto& n) {
      onnx::AttributeProto* a = attribute(&n, "activations");
      a->clear_strings();
      for (const char* f : fs) a->add_strings(f);
    };
  };
  CHECK(edited(activations({"Sigmoid", "Tanh"}))
            .ends_with("(RNN): activation Sigmoid is not imported (Tanh and Relu are)"));
  CHECK(edited(activations({"Tanh", "Relu", "Tanh"}))
            .ends_with("(RNN): 3 activations for 2 direction(s)"));
  CHECK(edited(activations({"Relu"})).empty());  // one for both directions
  CHECK(edited([](onnx::NodeProto& n) {
          onnx::AttributeProto* a = n.add_attribute();
          a->set_name("activation_alpha");
          a->set_type(onnx::AttributeProto::FLOATS);
          a->add_floats(0.5f);
        }).ends_with("(RNN): activation_alpha and activation_beta are not imported"));
  CHECK(edited([](onnx::NodeProto& n) {
          n.add_output("c_out");
        }).ends_with("(RNN): 3 outputs; an RNN has Y and Y_h"));
  CHECK(edited([](onnx::NodeProto& n) {
          attribute(&n, "hidden_size")->set_i(4);
        }).ends_with("(RNN): RNN of [5,4,4]: W is [2,3,4], expected [2,4,4]"));
}
