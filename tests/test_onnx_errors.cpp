// ONNX import's errors: bad files, unsupported ops, attributes and shapes are errors that name
// the file, the node, its op type and what is missing, never a crash. Past 400 lines: one case
// per fixture edited the same way (error_for), the other ops' in tests/test_onnx_op_errors.cpp.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "run/executor.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

TEST_CASE("onnx: bad files, unsupported ops and attributes are errors naming what is wrong") {
  CHECK(error_for(tiny()).empty());
  {  // ReduceMean over the batch axis, or over every axis (no axes).
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "mobile_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto all = m;
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceMean") attribute(&n, "axes")->set_ints(0, -4);
    CHECK(
        error_for(m).starts_with("m.onnx: node 'mean' (ReduceMean): the mean over axes (-4,2) "
                                 "of [1,"));
    CHECK(
        error_for(m).ends_with(" includes the batch axis; frugal imports reductions over the "
                               "other axes"));
    for (auto& n : *all.mutable_graph()->mutable_node())
      if (n.op_type() == "ReduceMean") attribute(&n, "axes")->clear_ints();
    CHECK(error_for(all) ==
          "m.onnx: node 'mean' (ReduceMean): no axes: the mean over every axis, the batch's "
          "included");
  }
  {
    onnx::ModelProto m = tiny();
    m.mutable_graph()->mutable_node(0)->set_op_type("NonMaxSuppression");
    CHECK(
        error_for(m).starts_with("m.onnx: node 'conv' (NonMaxSuppression): op not imported yet;"));
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
        for (int v : {64, 8}) a->add_ints(v);
      }
    CHECK(error_for(shaped) ==
          "m.onnx: node 'up' (ConvTranspose): output_shape 64 along axis 2 of [1,6,4,4]: more "
          "than the 8 the window and output_padding reach (not imported)");
    for (auto& n : *padded.mutable_graph()->mutable_node())
      if (n.name() == "up2") attribute(&n, "output_padding")->set_ints(0, 2);
    CHECK(error_for(padded) ==
          "m.onnx: node 'up2' (ConvTranspose): output_padding must be two values (one in 1-D), "
          "each below its stride");
    // Resize: an unknown mode, nearest_mode or coordinate transformation is refused; cubic, a
    // fractional scale in nearest mode and asymmetric rounding are imported.
    onnx::ModelProto linear = m, fraction = m, rounded = m, cubic = m, even = m, crop = m;
    auto set = [](onnx::ModelProto& model, const char* name, const char* value) {
      for (auto& n : *model.mutable_graph()->mutable_node())
        if (n.name() == "resize") {
          attribute(&n, name)->set_type(onnx::AttributeProto::STRING);
          attribute(&n, name)->set_s(value);
        }
    };
    set(linear, "mode", "lanczos");
    CHECK(error_for(linear) ==
          "m.onnx: node 'resize' (Resize): mode lanczos is not imported "
          "(nearest, linear or cubic)");
    set(cubic, "mode", "cubic");
    CHECK(error_for(cubic).empty());
    for (auto& t : *fraction.mutable_graph()->mutable_initializer())
      if (t.name() == "scales") {
        t.clear_raw_data();
        for (float v : {1.0f, 1.0f, 2.0f, 1.5f}) t.add_float_data(v);
      }
    // The Resize imports; its 8 x 6 output no longer fits the skip connection's 8 x 8.
    CHECK(
        error_for(fraction).starts_with("m.onnx: node 'skip' (Concat): concat: input 2 "
                                        "[1,6,8,6] does not match input 0 [1,4,8,8]"));
    set(rounded, "nearest_mode", "round_prefer_ceil");
    CHECK(error_for(rounded).empty());
    set(even, "nearest_mode", "nearest_even");
    CHECK(error_for(even) ==
          "m.onnx: node 'resize' (Resize): nearest_mode nearest_even is not one of ONNX's");
    set(crop, "coordinate_transformation_mode", "tf_crop_and_resize");
    CHECK(error_for(crop) ==
          "m.onnx: node 'resize' (Resize): coordinate_transformation_mode tf_crop_and_resize is "
          "not imported in nearest mode");
  }
  {  // The data movement of shuffle_net: what is not imported names the node and the reason.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "shuffle_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    onnx::ModelProto reflect = m, gather = m, stepped = m, batch = m, legacy = m;
    for (auto& n : *reflect.mutable_graph()->mutable_node())
      if (n.name() == "pad0") {
        attribute(&n, "mode")->set_type(onnx::AttributeProto::STRING);
        attribute(&n, "mode")->set_s("wrap");
      }
    CHECK(error_for(reflect) ==
          "m.onnx: node 'pad0' (Pad): mode wrap is not imported (constant, "
          "reflect and edge are)");
    // A Gather that read a shape now reads an activation: what then reads it as a shape says so.
    for (auto& n : *gather.mutable_graph()->mutable_node())
      if (n.name() == "gather0") n.set_input(0, "a1");
    CHECK(error_for(gather).ends_with("(Concat): input 1 is an integer (shape) value"));
    for (auto& n : *stepped.mutable_graph()->mutable_node())
      if (n.name() == "slice_cols") n.add_input("minus1");  // steps (-1)
    CHECK(error_for(stepped).starts_with(
        "m.onnx: node 'slice_cols' (Slice): slice [-2, 1000) step -1 of axis 3 of [1,"));
    CHECK(error_for(stepped).ends_with("] is empty"));
    // A reshape may merge the batch axis into another (attention's (L, N, E) to (L*N, E));
    // here (-1, N, H, W) takes the channel shuffle's (N, 4, 2, 8, 8) to (8N, 1, 8, 8), and the
    // Split after it finds one channel where it cuts two.
    for (auto& n : *batch.mutable_graph()->mutable_node())
      if (n.name() == "shape4") n.set_input(0, "minus1"), n.set_input(1, "un");  // (-1, N, H, W)
    // The node is named once, and no line of the importer's.
    CHECK(error_for(batch) ==
          "m.onnx: node 'split' (Split): split: sizes of 2 parts do not cut axis 1 of x "
          "[8,1,8,8] (1) into parts of at least 1");
    legacy.mutable_opset_import(0)->set_version(12);
    for (auto& n : *legacy.mutable_graph()->mutable_node())
      if (n.name() == "split") n.mutable_input()->RemoveLast();  // sizes: equal halves below
    CHECK(error_for(legacy) ==
          "m.onnx: node 'softmax' (Softmax): opset < 13 Softmax over axis 1 of [1,8,9,9] "
          "flattens the axes after it; only the last axis is imported");
  }
  {  // Reshapes that merge the batch axis into another and bring it back first: the same
     // outputs as without them, at a batch other than the export's. An output whose first axis
     // is not the batch's is an error naming the output.
    onnx::ModelProto m = tiny();
    onnx::GraphProto* g = m.mutable_graph();
    auto target = [&](const std::string& name, std::vector<int64_t> dims) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(static_cast<int64_t>(dims.size()));
      for (int64_t d : dims) t->add_int64_data(d);
    };
    target("merged", {-1, 3});      // (N, 2, 3, 3) to (6N, 3): the batch merged into rows
    target("per_image", {-1, 18});  // back to (N, 18)
    onnx::NodeProto merge, back;
    merge.set_name("merge");
    merge.set_op_type("Reshape");
    merge.add_input("c");
    merge.add_input("merged");
    merge.add_output("rows");
    back.set_name("back");
    back.set_op_type("Reshape");
    back.add_input("rows");
    back.add_input("per_image");
    back.add_output("f");
    const onnx::NodeProto conv = g->node(0), fc = g->node(2);
    onnx::ModelProto plain = m;
    g->clear_node();
    for (const onnx::NodeProto* n : {&conv, static_cast<const onnx::NodeProto*>(&merge),
                                     static_cast<const onnx::NodeProto*>(&back), &fc})
      *g->add_node() = *n;
    REQUIRE(error_for(m).empty());
    auto forward = [](const onnx::ModelProto& p) {
      const std::string bytes = p.SerializeAsString();
      const OnnxModel model = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
      std::vector<float> x(2 * 4 * 5 * 5);
      for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
      return onnx_forward(model, x);
    };
    const std::vector<float> got = forward(m), want = forward(plain);
    REQUIRE(got.size() == 6);
    CHECK(got == want);
    CHECK(std::any_of(got.begin(), got.end(), [](float v) { return v != 0; }));
    // The head's output (N, 3) reshaped to (3N, 1): its first axis is no longer the batch.
    target("column", {-1, 1});
    onnx::NodeProto* out = g->add_node();
    out->set_name("column");
    out->set_op_type("Reshape");
    out->add_input("y");
    out->add_input("column");
    out->add_output("y_column");
    g->mutable_output(0)->set_name("y_column");
    CHECK(error_for(m) ==
          "m.onnx: the output 'y_column' is [3,1] for a batch of 1: its first axis must be the "
          "batch's (reshapes and transposes may move the batch axis on the way, but it must "
          "come back first)");
  }
  {  // check_finite names the ONNX node whose op wrote the first NaN, not an importer's line.
    onnx::ModelProto m = tiny();
    onnx::GraphProto* g = m.mutable_graph();
    onnx::NodeProto root;
    root.set_name("root");
    root.set_op_type("Sqrt");
    root.add_input("c");
    root.add_output("r");
    g->mutable_node(1)->set_input(0, "r");  // flatten reads the roots
    const onnx::NodeProto conv = g->node(0), flat = g->node(1), fc = g->node(2);
    g->clear_node();
    for (const onnx::NodeProto* n : {&conv, static_cast<const onnx::NodeProto*>(&root), &flat, &fc})
      *g->add_node() = *n;
    const std::string bytes = m.SerializeAsString();
    const OnnxModel model = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
    ParamStore store(1);
    Tape tape(store);
    Value x = tape.input("x", Shape{1, 4, 5, 5}, DType::f32);
    Value y = record_onnx(model, x);
    load_onnx_weights(store, model);
    Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}, .check_finite = true});
    Tensor images = Tensor::empty(x.shape(), DType::f32);
    for (int64_t i = 0; i < images.numel(); ++i) images.data<float>()[i] = -1;  // conv < 0
    ex.set_input(x, images);
    const std::string error = error_message([&] { ex.forward(); });
    CHECK(error.find("(m.onnx: node 'root' (Sqrt)) forward wrote") != std::string::npos);
    CHECK(error.find(".cpp") == std::string::npos);
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
    // A new axis 0 (torch.stack's), squeezed again: the batch first again.
    axes->set_int64_data(0, 0);
    CHECK(error_for(m).empty());
    // The Squeeze alone over axis 0, the batch's: an error.
    g->mutable_node(2)->set_input(0, "c");
    CHECK(error_for(m).ends_with("moves the batch axis; frugal imports those that keep it"));
  }
  {  // MatMul whose leading axes do not broadcast: x (N,4,5,5) against its first two channels.
    onnx::ModelProto m = tiny();
    onnx::GraphProto* g = m.mutable_graph();
    g->clear_node();
    g->clear_output();
    for (const auto& [name, v] :
         {std::pair<std::string, int64_t>{"starts", 0}, {"ends", 2}, {"axes", 1}}) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::INT64);
      t->add_dims(1);
      t->add_int64_data(v);
    }
    onnx::NodeProto* slice = g->add_node();
    slice->set_name("first2");
    slice->set_op_type("Slice");
    for (const char* i : {"x", "starts", "ends", "axes"}) slice->add_input(i);
    slice->add_output("s");
    onnx::NodeProto* mm = g->add_node();
    mm->set_name("mm");
    mm->set_op_type("MatMul");
    mm->add_input("x");
    mm->add_input("s");
    mm->add_output("y");
    g->add_output()->set_name("y");
    CHECK(error_for(m) ==
          "m.onnx: node 'mm' (MatMul): MatMul of [1,4,5,5] and [1,2,5,5]: axis 1 is 2 and 4, "
          "which do not broadcast");
  }
  {  // Erf outside GELU's pattern is the erf activation.
    onnx::ModelProto m;
    std::ifstream in(onnx_data() / "shuffle_net.onnx", std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
    for (auto& n : *m.mutable_graph()->mutable_node())
      if (n.name() == "relu1") n.set_op_type("Erf");
    CHECK(error_for(m).empty());
    const std::string bytes = m.SerializeAsString();
    int erfs = 0;
    for (const OnnxNode& n : load_onnx_bytes("m.onnx", bytes.data(), bytes.size()).graph->nodes)
      erfs += n.kind == OnnxKind::activation && n.activation == Activation::erf;
    CHECK(erfs == 1);
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
          "m.onnx: input 'x' dimension 2 is H; every dimension but the batch's must be fixed, 1 "
          "to 65536");
  }
  {
    onnx::ModelProto m = tiny();
    auto* d = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type();
    d->mutable_shape()->add_dim()->set_dim_value(2);
    d->mutable_shape()->add_dim()->set_dim_value(2);
    CHECK(error_for(m) ==
          "m.onnx: input 'x' has 6 axes; frugal imports (N, F), (N, C, L), (N, C, H, W) or (N, C, "
          "D, H, W)");
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
  // Identity over a weight (how torch.onnx.export names a parameter whose values equal
  // another's): a parameter of its own, named by the Identity, starting from those values.
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
    load_onnx_weights(store, model);
    CHECK(store.find("w") == nullptr);  // read only through the Identity
    REQUIRE(store.find("w2") != nullptr);
    CHECK(bitwise_equal(store.find("w2")->value, model.graph->initializers.at("w")));
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

TEST_CASE("onnx: nodes the output does not depend on are skipped, whatever they are") {
  // An export may leave nodes nothing reads (a training-mode BatchNorm's running statistics of a
  // weight): an op frugal does not import, there, is no error; read by the output, it is.
  onnx::ModelProto m = tiny();
  auto* nodes = m.mutable_graph()->mutable_node();
  onnx::NodeProto* dead = nodes->Add();
  dead->set_name("dead");
  dead->set_op_type("NonMaxSuppression");
  dead->add_input(nodes->Get(0).output(0));  // the Conv's output
  dead->add_output("unread");
  for (int i = nodes->size() - 1; i > 1; --i) nodes->SwapElements(i, i - 1);  // after the Conv
  CHECK(error_for(m).empty());
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "Flatten") n.set_input(0, "unread");
  CHECK(error_for(m).starts_with("m.onnx: node 'dead' (NonMaxSuppression): op not imported yet"));
}
