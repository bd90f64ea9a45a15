// ONNX import: two small models written by scripts/onnx_fixtures.py (every imported op) give
// the outputs of ONNX's reference evaluator; their training steps are bitwise equal planned and
// baseline; weights keep the file's names; and bad files, unsupported ops and attributes are
// errors naming the file, the node and what is missing.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "run/executor.h"
#include "tests/alloc_cap.h"
#include "tests/onnx_support.h"
#include "tests/temp_dir.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

namespace {

onnx::ModelProto tiny() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  for (int d : {4, 5, 5}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto weight = [&](const std::string& name, std::vector<int64_t> dims) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.01f * static_cast<float>(i % 7));
  };
  weight("w", {2, 4, 3, 3});
  weight("fc.w", {3, 18});
  onnx::NodeProto* conv = g->add_node();
  conv->set_name("conv");
  conv->set_op_type("Conv");
  conv->add_input("x");
  conv->add_input("w");
  conv->add_output("c");
  auto* k = conv->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(3);
  k->add_ints(3);
  onnx::NodeProto* flat = g->add_node();
  flat->set_name("flat");
  flat->set_op_type("Flatten");
  flat->add_input("c");
  flat->add_output("f");
  onnx::NodeProto* fc = g->add_node();
  fc->set_name("fc");
  fc->set_op_type("Gemm");
  fc->add_input("f");
  fc->add_input("fc.w");
  fc->add_output("y");
  auto* tb = fc->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  g->add_output()->set_name("y");
  return m;
}

std::string error_for(const onnx::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  return error_message([&] { load_onnx_bytes("m.onnx", bytes.data(), bytes.size()); });
}

onnx::AttributeProto* attribute(onnx::NodeProto* n, const std::string& name) {
  for (auto& a : *n->mutable_attribute())
    if (a.name() == name) return &a;
  auto* a = n->add_attribute();
  a->set_name(name);
  return a;
}

}  // namespace

TEST_CASE("onnx: imported models give ONNX's reference outputs") {
  // unet_seg: PyTorch's own eval-mode output (scripts/onnx_fixtures.py --segmentation --small),
  // a U-Net whose F.pad to the skip's size exports as shape arithmetic (ConstantOfShape, integer
  // Reshape, Slice with step -1, Transpose) and whose output is per pixel.
  for (const char* name : {"residual_net", "reshape_net", "mobile_net", "unet_net", "shuffle_net",
                           "unet_seg", "bilinear_net", "matmul_net"}) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    const std::vector<float> io = read_floats(onnx_data() / (std::string(name) + ".io"));
    const int64_t in = 2 * m.input.numel();
    REQUIRE(static_cast<int64_t>(io.size()) == in + 2 * m.classes * m.label_shape.numel());
    const std::vector<float> x(io.begin(), io.begin() + in), want(io.begin() + in, io.end());
    const std::vector<float> got = onnx_forward(m, x);
    REQUIRE(got.size() == want.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
      scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    }
    CHECK(scale > 0.01);  // not a vanishing output
    CHECK(worst <= 1e-4 * scale);
    MESSAGE(std::string(name), ": largest difference ", worst, " of outputs up to ", scale);
  }
  const OnnxModel r = load_onnx((onnx_data() / "residual_net.onnx").string());
  CHECK(r.input == Shape({3, 8, 8}));
  CHECK(r.classes == 5);
  CHECK(r.label_shape.rank() == 0);
  const OnnxModel u = load_onnx((onnx_data() / "unet_seg.onnx").string());
  CHECK(u.classes == 4);
  CHECK(u.label_shape == Shape({16, 16}));
}

TEST_CASE("onnx: a float64 export gives PyTorch's float64 output within 1e-10") {
  // scripts/onnx_fixtures.py --f64: model.double() exported by PyTorch, its output in f64.
  const std::string path = (onnx_data() / "double_net.onnx").string();
  const OnnxModel m = load_onnx(path);
  CHECK(m.dtype == DType::f64);
  std::ifstream in(onnx_data() / "double_net.io", std::ios::binary);
  std::vector<double> io((2 * m.input.numel() + 2 * m.classes));
  in.read(reinterpret_cast<char*>(io.data()), static_cast<std::streamsize>(io.size() * 8));
  REQUIRE(in.gcount() == static_cast<std::streamsize>(io.size() * 8));
  for (DType t : {DType::f64, DType::f32}) {  // recorded in f64, and rounded to f32
    ParamStore store(1);
    Tape tape(store, t);
    Value x = tape.input("x", Shape({2, m.input[0], m.input[1], m.input[2]}), t);
    Value y = record_onnx(m, x);
    load_onnx_weights(store, m);
    Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
    Tensor xt = Tensor::empty(x.shape(), t);
    for (int64_t i = 0; i < xt.numel(); ++i) {
      if (t == DType::f64)
        xt.data<double>()[i] = io[static_cast<size_t>(i)];
      else
        xt.data<float>()[i] = static_cast<float>(io[static_cast<size_t>(i)]);
    }
    ex.set_input(x, xt);
    ex.forward();
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < 2 * m.classes; ++i) {
      const double want = io[static_cast<size_t>(2 * m.input.numel() + i)];
      worst = std::max(worst, std::abs(element_as_double(ex.value(y), i) - want));
      scale = std::max(scale, std::abs(want));
    }
    MESSAGE(std::string(dtype_name(t)), ": largest difference ", worst, " of outputs up to ",
            scale);
    CHECK(scale > 0.01);
    CHECK(worst <= (t == DType::f64 ? 1e-10 : 1e-4) * scale);
  }
  // An initializer of the other float type than the input is refused by name.
  onnx::ModelProto mixed;
  std::ifstream file(path, std::ios::binary);
  REQUIRE(mixed.ParseFromIstream(&file));
  mixed.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::FLOAT);
  CHECK(error_for(mixed).starts_with("m.onnx: tensor '"));
  CHECK(error_for(mixed).ends_with(
      "is f64 and the input 'x' f32; frugal imports models of one float type"));
}

TEST_CASE("onnx: training an imported model is bitwise equal planned and baseline") {
  for (const char* name : {"residual_net", "reshape_net", "mobile_net", "train_net", "unet_net",
                           "shuffle_net", "unet_seg"}) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    const std::vector<Tensor> base = onnx_train(m, MemoryMode::baseline);
    const std::vector<Tensor> planned = onnx_train(m, MemoryMode::planned);
    REQUIRE(base.size() == planned.size());
    for (size_t i = 0; i < base.size(); ++i) {
      CAPTURE(i);
      REQUIRE(base[i].meta() == planned[i].meta());
      CHECK(std::memcmp(base[i].raw(), planned[i].raw(), base[i].bytes()) == 0);
    }
  }
}

TEST_CASE("onnx: a training-mode export keeps BatchNorm and Dropout") {
  const OnnxModel m = load_onnx((onnx_data() / "train_net.onnx").string());
  std::vector<OnnxKind> kinds;
  for (const OnnxNode& n : m.graph->nodes) kinds.push_back(n.kind);
  CHECK(std::count(kinds.begin(), kinds.end(), OnnxKind::batch_norm) == 1);
  REQUIRE(std::count(kinds.begin(), kinds.end(), OnnxKind::dropout) == 1);
  for (const OnnxNode& n : m.graph->nodes)
    if (n.kind == OnnxKind::dropout) CHECK(n.alpha == doctest::Approx(0.25));
  // Its running statistics are outputs no node may read.
  onnx::ModelProto bad;
  {
    std::ifstream in(onnx_data() / "train_net.onnx", std::ios::binary);
    REQUIRE(bad.ParseFromIstream(&in));
  }
  for (auto& n : *bad.mutable_graph()->mutable_node())
    if (n.op_type() == "Relu") n.set_input(0, "bn.mean_out");
  CHECK(error_for(bad).find("input 'bn.mean_out' is not produced before this node") !=
        std::string::npos);
}

TEST_CASE("onnx: weights keep the file's names; BatchNorm statistics are not trained") {
  const OnnxModel m = load_onnx((onnx_data() / "residual_net.onnx").string());
  ParamStore store(1);
  Tape tape(store);
  record_onnx(m, tape.input("x", {1, 3, 8, 8}, DType::f32));
  load_onnx_weights(store, m);
  for (const char* name : {"c1.weight", "c1.bias", "bn1.weight", "fc.weight", "fc.bias"}) {
    CAPTURE(name);
    REQUIRE(store.find(name) != nullptr);
    CHECK(store.find(name)->trainable);
  }
  REQUIRE(store.find("bn2.running_var") != nullptr);
  CHECK_FALSE(store.find("bn2.running_var")->trainable);
  CHECK(store.find("bn2.running_var")->value.data<float>()[0] >= 0.5f);  // loaded, not zero
  CHECK(find_model("onnx:" + (onnx_data() / "residual_net.onnx").string()).classes == 5);
  // Loaded without its weights, a model holds their shapes only and reads them from the file
  // when asked: the same values.
  const OnnxModel light = load_onnx((onnx_data() / "residual_net.onnx").string(), false);
  CHECK(light.graph->initializers.count("c1.weight") == 0);
  ParamStore again(1);
  Tape t3(again);
  record_onnx(light, t3.input("x", {1, 3, 8, 8}, DType::f32));
  load_onnx_weights(again, light);
  for (Parameter* p : store.all()) {
    CAPTURE(p->name);
    REQUIRE(again.find(p->name) != nullptr);
    CHECK(std::memcmp(again.find(p->name)->value.raw(), p->value.raw(), p->value.bytes()) == 0);
  }
  // Arithmetic operands: an initializer is a weight, a Constant node's tensor is fixed.
  const OnnxModel mobile = load_onnx((onnx_data() / "mobile_net.onnx").string());
  // x * sigmoid(x) is one SiLU; the squeeze-and-excitation gate, a sigmoid of another value,
  // stays a sigmoid and a product.
  int silu = 0, sigmoid = 0;
  for (const OnnxNode& n : mobile.graph->nodes)
    if (n.kind == OnnxKind::activation) {
      silu += n.activation == Activation::silu;
      sigmoid += n.activation == Activation::sigmoid;
    }
  CHECK(silu == 1);
  CHECK(sigmoid == 1);
  ParamStore arithmetic;
  Tape t2(arithmetic);
  record_onnx(mobile, t2.input("x", {1, 2, 9, 9}, DType::f32));
  load_onnx_weights(arithmetic, mobile);
  REQUIRE(arithmetic.find("scale") != nullptr);
  CHECK(arithmetic.find("scale")->trainable);
  REQUIRE(arithmetic.find("half") != nullptr);
  CHECK_FALSE(arithmetic.find("half")->trainable);
  CHECK(arithmetic.find("half")->value.data<float>()[0] == 0.5f);
}

TEST_CASE("onnx: bad files, unsupported ops and attributes are errors naming what is wrong") {
  CHECK(error_for(tiny()).empty());
  {  // ReduceMean over the channels: not a spatial mean.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "mobile_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceMean") {
        attribute(&n, "axes")->clear_ints();
        attribute(&n, "axes")->add_ints(1);
      }
    CHECK(error_for(m) ==
          "m.onnx: node 'mean' (ReduceMean): only the mean over axes 2 and 3 (H and W) of (N, C, "
          "H, W) is imported");
  }
  {
    onnx::ModelProto m = tiny();
    m.mutable_graph()->mutable_node(0)->set_op_type("Einsum");
    CHECK(error_for(m).starts_with("m.onnx: node 'conv' (Einsum): op not imported yet;"));
  }
  {
    onnx::ModelProto m = tiny();
    auto* g = attribute(m.mutable_graph()->mutable_node(0), "group");
    g->set_type(onnx::AttributeProto::INT);
    g->set_i(2);
    CHECK(error_for(m).starts_with("m.onnx: node 'conv' (Conv): "));
    CHECK(error_for(m).ends_with(
        "conv2d: input channels 4 != weight channels 4 x 2 groups (x [1,4,5,5], w [2,4,3,3])"));
  }
  {
    onnx::ModelProto m = tiny();
    auto* p = attribute(m.mutable_graph()->mutable_node(0), "pads");
    p->set_type(onnx::AttributeProto::INTS);
    for (int v : {0, 0, 1, 1}) p->add_ints(v);
    // Padding each side its own is imported: the head then sees other features.
    CHECK(
        error_for(m).ends_with("linear: input features 32 != weight features 18 (x [1,32], w "
                               "[3,18])"));
  }
  {
    onnx::ModelProto m = tiny();
    auto* k = attribute(m.mutable_graph()->mutable_node(0), "kernel_shape");
    k->set_ints(0, int64_t{1} << 40);
    k->set_ints(1, int64_t{1} << 40);
    CHECK(error_for(m) == "m.onnx: node 'conv' (Conv): kernel_shape must be two values in 1..4096");
  }
  {  // ConvTranspose: an output_shape and an output padding at the stride are refused.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "unet_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto shaped = m, padded = m;
    for (auto& n : *shaped.mutable_graph()->mutable_node())
      if (n.name() == "up") {
        auto* a = attribute(&n, "output_shape");
        a->set_type(onnx::AttributeProto::INTS);
        for (int v : {8, 8}) a->add_ints(v);
      }
    CHECK(error_for(shaped) ==
          "m.onnx: node 'up' (ConvTranspose): output_shape is not imported (export with pads and "
          "output_padding)");
    for (auto& n : *padded.mutable_graph()->mutable_node())
      if (n.name() == "up2") attribute(&n, "output_padding")->set_ints(0, 2);
    CHECK(error_for(padded) ==
          "m.onnx: node 'up2' (ConvTranspose): output_padding must be two values, each below its "
          "stride");
    // Resize: cubic, a fractional scale in nearest mode, and asymmetric rounding are refused.
    onnx::ModelProto linear = m, fraction = m, rounded = m;
    for (auto& n : *linear.mutable_graph()->mutable_node())
      if (n.name() == "resize") attribute(&n, "mode")->set_s("cubic");
    CHECK(error_for(linear) ==
          "m.onnx: node 'resize' (Resize): mode cubic is not imported (nearest or linear)");
    for (auto& t : *fraction.mutable_graph()->mutable_initializer())
      if (t.name() == "scales") {
        t.clear_raw_data();
        for (float v : {1.0f, 1.0f, 2.0f, 1.5f}) t.add_float_data(v);
      }
    CHECK(error_for(fraction) ==
          "m.onnx: node 'resize' (Resize): scales must be a constant (1, "
          "1, s_h, s_w) of whole numbers in 1..4096");
    for (auto& n : *rounded.mutable_graph()->mutable_node())
      if (n.name() == "resize") attribute(&n, "nearest_mode")->set_s("round_prefer_ceil");
    CHECK(error_for(rounded) ==
          "m.onnx: node 'resize' (Resize): coordinate_transformation_mode asymmetric with "
          "nearest_mode round_prefer_ceil is not imported (asymmetric with floor, or half_pixel)");
  }
  {  // The data movement of shuffle_net: what is not imported names the node and the reason.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "shuffle_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto reflect = m, gather = m, stepped = m, batch = m, legacy = m;
    for (auto& n : *reflect.mutable_graph()->mutable_node())
      if (n.name() == "pad0") {
        attribute(&n, "mode")->set_type(onnx::AttributeProto::STRING);
        attribute(&n, "mode")->set_s("reflect");
      }
    CHECK(error_for(reflect) ==
          "m.onnx: node 'pad0' (Pad): mode reflect is not imported (only constant)");
    for (auto& n : *gather.mutable_graph()->mutable_node())
      if (n.name() == "gather0") n.set_input(0, "a1");
    CHECK(error_for(gather) ==
          "m.onnx: node 'gather0' (Gather): only a Gather from an integer shape value is "
          "imported (not over activations)");
    for (auto& n : *stepped.mutable_graph()->mutable_node())
      if (n.name() == "slice_cols") n.add_input("groups");  // steps (2)
    CHECK(error_for(stepped) ==
          "m.onnx: node 'slice_cols' (Slice): steps (2): only step 1 is imported");
    for (auto& n : *batch.mutable_graph()->mutable_node())
      if (n.name() == "shape4") n.set_input(0, "minus1"), n.set_input(1, "un");  // (-1, N, H, W)
    CHECK(
        error_for(batch).starts_with("m.onnx: node 'view4' (Reshape): reshape of [1,4,2,8,8] "
                                     "to [8,1,8,8] moves the batch axis"));
    legacy.mutable_opset_import(0)->set_version(12);
    for (auto& n : *legacy.mutable_graph()->mutable_node())
      if (n.name() == "split") n.mutable_input()->RemoveLast();  // sizes: equal halves below
    CHECK(error_for(legacy) ==
          "m.onnx: node 'softmax' (Softmax): opset < 13 Softmax over axis 1 of [1,8,9,9] "
          "flattens the axes after it; only the last axis is imported");
  }
  {  // Unsqueeze and Squeeze of an activation are reshapes; of the batch axis, an error.
    onnx::ModelProto m = tiny();
    onnx::GraphProto* g = m.mutable_graph();
    auto* axes = g->add_initializer();
    axes->set_name("axes");
    axes->set_data_type(onnx::TensorProto::INT64);
    axes->add_dims(1);
    axes->add_int64_data(2);
    onnx::NodeProto u, q;
    u.set_name("unsqueeze");
    u.set_op_type("Unsqueeze");
    u.add_input("c");
    u.add_input("axes");
    u.add_output("u");
    q.set_name("squeeze");
    q.set_op_type("Squeeze");
    q.add_input("u");
    q.add_input("axes");
    q.add_output("s");
    g->mutable_node(1)->set_input(0, "s");  // flatten reads the squeezed value
    const onnx::NodeProto conv = g->node(0), flat = g->node(1), fc = g->node(2);
    g->clear_node();
    for (const onnx::NodeProto* n : {&conv, static_cast<const onnx::NodeProto*>(&u),
                                     static_cast<const onnx::NodeProto*>(&q), &flat, &fc})
      *g->add_node() = *n;
    CHECK(error_for(m).empty());
    const std::string bytes = m.SerializeAsString();
    const OnnxModel model = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
    int reshapes = 0;
    for (const OnnxNode& n : model.graph->nodes) reshapes += n.kind == OnnxKind::reshape_axes;
    CHECK(reshapes == 2);
    axes->set_int64_data(0, 0);
    CHECK(error_for(m).ends_with("moves the batch axis; frugal imports those that keep it"));
  }
  {  // MatMul between two activations (attention) is not imported yet.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "matmul_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.op_type() == "MatMul") {
        n.set_input(1, "x");
        CHECK(error_for(m).ends_with(
            "(MatMul): input 1 ('x') is an activation; MatMul is imported with a weight (an "
            "initializer) as its second input, not between two activations"));
        break;
      }
  }
  {
    onnx::ModelProto m = tiny();
    m.mutable_opset_import(0)->set_version(9);
    CHECK(error_for(m) ==
          "m.onnx: opset 9 of the default domain; frugal imports opsets 11 to 17 "
          "(torch.onnx.export's opset_version=11..17)");
  }
  {
    onnx::ModelProto m = tiny();
    auto* d = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
    d->mutable_shape()->mutable_dim(2)->set_dim_param("H");
    CHECK(error_for(m) ==
          "m.onnx: input 'x' dimension 2 is H; C, H and W must be fixed (only the batch may be "
          "dynamic)");
  }
  {
    onnx::ModelProto m = tiny();  // the head expects 18 features; the conv gives 2 x 3 x 3
    m.mutable_graph()->mutable_initializer(1)->set_dims(1, 17);
    const std::string e = error_for(m);
    CHECK(e.find("m.onnx: tensor 'fc.w' holds 54 floats for 51 elements") == 0);
  }
  {
    onnx::ModelProto m = tiny();
    m.mutable_graph()->mutable_initializer(0)->set_dims(0, int64_t{1} << 40);
    CHECK(error_for(m).find("m.onnx: tensor 'w' has dimension 1099511627776, too large") == 0);
  }
  {
    onnx::ModelProto m = tiny();
    m.mutable_graph()->mutable_node(2)->set_input(0, "nowhere");
    CHECK(error_for(m) ==
          "m.onnx: node 'fc' (Gemm): input 'nowhere' is not produced before this node (graph "
          "not in topological order?)");
  }
  // Identity over a weight (PyTorch's way to give one tensor two names): one parameter.
  {
    onnx::ModelProto m = tiny();
    onnx::GraphProto* g = m.mutable_graph();
    onnx::NodeProto* id = g->add_node();
    id->set_name("alias");
    id->set_op_type("Identity");
    id->add_input("w");
    id->add_output("w2");
    for (int i = g->node_size() - 1; i > 0; --i) g->mutable_node()->SwapElements(i, i - 1);
    g->mutable_node(1)->set_input(1, "w2");
    CHECK(error_for(m).empty());
    const std::string bytes = m.SerializeAsString();
    const OnnxModel model = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
    ParamStore store(1);
    Tape tape(store);
    record_onnx(model, tape.input("x", {1, 4, 5, 5}, DType::f32));
    CHECK(store.find("w") != nullptr);
    CHECK(store.find("w2") == nullptr);
  }
  // Shape errors from recording name the node.
  {
    onnx::ModelProto m = tiny();
    m.mutable_graph()->mutable_initializer(0)->set_dims(1, 3);  // 3 input channels, x has 4
    m.mutable_graph()->mutable_initializer(0)->mutable_float_data()->Truncate(2 * 3 * 3 * 3);
    CHECK(error_for(m).starts_with("m.onnx: node 'conv' (Conv): "));
  }
  // Files: missing, empty, garbage, truncated.
  TempDir dir("frugal-onnx");
  CHECK(error_message([&] { load_onnx(dir / "missing.onnx"); }) ==
        dir / "missing.onnx" + ": no such file");
  std::ofstream(dir / "empty.onnx").close();
  CHECK(error_message([&] { load_onnx(dir / "empty.onnx"); }) ==
        dir / "empty.onnx" + ": empty file (0 bytes), not an ONNX model");
  const std::string good = tiny().SerializeAsString();
  for (size_t cut : {size_t{1}, good.size() / 2, good.size() - 3}) {
    CAPTURE(cut);
    const std::string e = error_message([&] { load_onnx_bytes("t.onnx", good.data(), cut); });
    CHECK_FALSE(e.empty());
    CHECK(e.starts_with("t.onnx: "));
  }
}

TEST_CASE("onnx: the fuzz corpus reads or fails with an error, within capped memory") {
  const fs::path dir = fs::path(FRUGAL_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "onnx";
  REQUIRE(fs::is_directory(dir));
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::vector<unsigned char> bytes = read_bytes(e.path().string());
    const std::string result = run_capped([&] {
      try {
        load_onnx_bytes("f", reinterpret_cast<const char*>(bytes.data()), bytes.size());
      } catch (const Error&) {
      }
    });
    CHECK_MESSAGE(result == "ok", e.path().string(), ": ", result);
    ++files;
  }
  CHECK(files >= 3);
}
