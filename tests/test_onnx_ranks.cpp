// Imported models over inputs other than images: signals (N, C, L) labelled at each position,
// feature vectors (N, F), volumes or clips (N, C, D, H, W) labelled at each voxel (factored and
// full 3-D convolutions, a 3-D U-Net's pools, transposed convolutions and resizing). What the
// import makes of their shapes (the sample, the classes, the labels), their 1-D and 3-D ops
// in float64 against finite differences (the weights drawn away from the file's), a training
// step with the per-position loss against a loss over the same rows by hand, the parameters
// an export deduplicated, and the errors for 3-D windows it refuses. Their outputs against
// PyTorch's and planned == baseline are in tests/test_onnx.cpp's fixture list.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "check/gradcheck.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

OnnxModel fixture(const char* name) {
  return load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
}

}  // namespace

TEST_CASE("onnx: signals, feature vectors and volumes: samples, classes and labels") {
  const OnnxModel signal = fixture("signal_net");
  CHECK(signal.input == Shape{3, 16});
  CHECK(signal.classes == 5);
  CHECK(signal.label_shape == Shape{16});  // a label per position
  const OnnxModel features = fixture("features_net");
  CHECK(features.input == Shape{12});
  CHECK(features.classes == 4);
  CHECK(features.label_shape.rank() == 0);  // a classifier
  const OnnxModel video = fixture("video_net");
  CHECK(video.input == Shape{2, 4, 5, 6});
  CHECK(video.classes == 3);
  CHECK(video.label_shape == Shape{4, 5, 6});  // a label per voxel
  // As registry models: the training step's labels and loss follow the output's positions.
  const ModelSpec& spec = onnx_model_spec((onnx_data() / "signal_net.onnx").string());
  CHECK(spec.input == Shape{3, 16});
  CHECK(spec.label_shape == Shape{16});
}

// 1-D: Conv1d (dilated, strided), MaxPool1d with ceil_mode, nearest and linear resizing of a
// signal, ConvTranspose1d with output_padding, AdaptiveAvgPool1d(1).
TEST_CASE("onnx: gradcheck of an imported 1-D network") {
  const OnnxModel m = fixture("signal_net");
  int transposed = 0, resizes = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    transposed += n.kind == OnnxKind::conv_transpose;
    resizes += n.kind == OnnxKind::resize || n.kind == OnnxKind::upsample_nearest;
  }
  CHECK(transposed == 1);
  CHECK(resizes == 2);
  check_gradients(randomized(m, 160), {random_tensor({2, 3, 16}, 61, -2, 2)}, {.tolerance = 1e-6});
}

// (N, F): Gemm, BatchNorm1d over (N, C) in eval mode, LayerNorm's nodes, GELU.
TEST_CASE("onnx: gradcheck of an imported network over feature vectors") {
  const OnnxModel m = fixture("features_net");
  check_gradients(randomized(m, 170), {random_tensor({3, 12}, 62, -2, 2)}, {.tolerance = 1e-6});
}

// (N, C, D, H, W): factored Conv3d, (1, 3, 3) then (3, 1, 1), AdaptiveAvgPool3d(1), 1x1x1.
TEST_CASE("onnx: gradcheck of an imported 3-D network") {
  const OnnxModel m = fixture("video_net");
  check_gradients(randomized(m, 180), {random_tensor({2, 2, 4, 5, 6}, 63, -2, 2)},
                  {.tolerance = 1e-6});
}

// Conv3d 1 wide along no axis (models/onnx_conv3d.h): padded 3x3x3, strided and grouped,
// dilated along depth with a bias, a (1, 1, 1) window strided along every axis.
TEST_CASE("onnx: gradcheck of imported 3-D convolutions 1 wide along no axis") {
  const OnnxModel m = fixture("conv3d_full_net");
  int depth = 0;
  for (const OnnxNode& n : m.graph->nodes) depth += n.kind == OnnxKind::conv && n.depth_kernel > 0;
  CHECK(depth == 4);
  check_gradients(randomized(m, 190), {random_tensor({2, 2, 5, 6, 6}, 68, -2, 2)},
                  {.tolerance = 1e-6});
}

// A 3-D U-Net: MaxPool3d and AvgPool3d as the 2-D pool of every plane and one along depth;
// ConvTranspose3d as every plane's 2-D one and the taps' partial sums placed along depth;
// trilinear and nearest resizing of the planes, then along depth.
TEST_CASE("onnx: gradcheck of an imported 3-D U-Net") {
  const OnnxModel m = fixture("unet3d_net");
  int transposed = 0, pools = 0, resizes = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    transposed += n.kind == OnnxKind::conv_transpose && n.depth_kernel > 0;
    pools += (n.kind == OnnxKind::max_pool || n.kind == OnnxKind::avg_pool) && n.depth_kernel > 0;
    resizes += n.kind == OnnxKind::resize || n.kind == OnnxKind::upsample_nearest;
  }
  CHECK(transposed == 2);
  CHECK(pools == 4);
  CHECK(resizes == 4);
  // Only the biases and normalization weights drawn (max_rank 1): the convolutions keep the
  // file's weights, scaled to their fan-in as PyTorch initializes them. With every weight in
  // [-1, 1] this deeper stack of 3x3x3 windows grows about tenfold a layer, and at outputs near
  // 1e4 float64 central differences lose the digits the check needs. 96 elements of each
  // tensor (both ends and one per stretch between): about a sixth of the forward passes.
  check_gradients(randomized(m, 200, 1), {random_tensor({2, 1, 4, 8, 8}, 69, -2, 2)},
                  {.tolerance = 1e-6, .max_elements = 96});
}

// A training step of the 1-D model: its loss is the mean over every (sample, position) of
// the cross-entropy of that position's K logits, here recomputed by hand from the output.
TEST_CASE("onnx: a signal model's loss is the mean over its positions") {
  const OnnxModel m = fixture("signal_net");
  ParamStore store(1);
  Tape tape(store, DType::f64);
  Value x = tape.input("x", batched(2, m.input), DType::f64);
  Value labels = tape.input("labels", Shape{2, 16}, DType::i32);
  Value y = record_onnx(m, x);
  Value loss = pixel_cross_entropy(y, labels);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y, loss}});
  const Tensor xt = random_tensor({2, 3, 16}, 64, -2, 2);
  const Tensor lt = random_labels(32, 5, 65).reshape(Shape{2, 16});
  ex.set_input(x, xt);
  ex.set_input(labels, lt);
  ex.forward();
  const Tensor& out = ex.value(y);  // (2, 5, 16)
  double want = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t l = 0; l < 16; ++l) {
      double total = 0;
      for (int64_t k = 0; k < 5; ++k) total += std::exp(out.data<double>()[(n * 5 + k) * 16 + l]);
      const int32_t label = lt.data<int32_t>()[n * 16 + l];
      want += std::log(total) - out.data<double>()[(n * 5 + label) * 16 + l];
    }
  CHECK(ex.value(loss).data<double>()[0] == doctest::Approx(want / 32).epsilon(1e-12));
}

// torch.onnx.export in eval mode keeps one of several parameters holding equal values and
// names the others with Identities of it: a fresh features_net's BatchNorm1d weight, its
// running variance and the LayerNorm's weight are all ones, written as one initializer. Each
// is a parameter of its own: a training step updates the BatchNorm's weight by its gradient
// and its running variance by the batch's, and leaves the two apart (read as one, the running
// statistics were written over the weight).
TEST_CASE("onnx: an export's Identities of equal parameters are parameters of their own") {
  const OnnxModel m = fixture("features_net");
  const std::map<std::string, bool>& params = m.graph->params;
  for (const char* name : {"a.1.weight", "b.0.weight", "a.1.running_var", "a.1.running_mean"})
    REQUIRE(params.count(name) == 1);
  CHECK(params.at("a.1.weight"));
  CHECK(params.at("b.0.weight"));
  CHECK_FALSE(params.at("a.1.running_var"));
  CHECK_FALSE(params.at("a.1.running_mean"));
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("x", batched(4, m.input), DType::f32);
  Value labels = tape.input("labels", Shape{4}, DType::i32);
  Value loss = softmax_cross_entropy(record_onnx(m, x), labels);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.optimizer = OptimizerConfig{.lr = 0.1}});
  ex.set_input(x, random_tensor({4, 12}, 66, -2, 2, DType::f32));
  ex.set_input(labels, random_labels(4, 4, 67));
  ex.forward();
  ex.backward(loss);  // and the SGD step
  const Parameter* p[] = {store.find("a.1.weight"), store.find("a.1.running_var"),
                          store.find("b.0.weight")};
  for (const Parameter* q : p) REQUIRE(q != nullptr);
  const Tensor &weight = p[0]->value, &running_var = p[1]->value, &norm_weight = p[2]->value;
  int apart = 0, trained = 0;
  for (int64_t c = 0; c < 16; ++c) {
    apart += weight.data<float>()[c] != running_var.data<float>()[c];
    trained += weight.data<float>()[c] != 1.0f && norm_weight.data<float>()[c] != 1.0f &&
               weight.data<float>()[c] != norm_weight.data<float>()[c];
  }
  CHECK(apart == 16);
  CHECK(trained >= 12);  // a ReLU may leave a channel without gradient
}

// What the 3-D paths refuse, by node: an output_padding along depth not below the stride, a
// window the weight does not have, a depth stride out of range, four strides.
TEST_CASE("onnx: 3-D transposed convolutions and windows frugal refuses name what is wrong") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "unet3d_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  REQUIRE(error_for(m).empty());
  auto edited = [&](const std::function<void(onnx::NodeProto*)>& edit) {
    onnx::ModelProto e = m;
    for (auto& n : *e.mutable_graph()->mutable_node())
      if (n.op_type() == "ConvTranspose") {
        edit(&n);
        break;
      }
    return error_for(e);
  };
  CHECK(edited([](onnx::NodeProto* n) {
          auto* p = attribute(n, "output_padding");
          p->set_type(onnx::AttributeProto::INTS);
          for (int64_t v : {2, 0, 0}) p->add_ints(v);
        })
            .ends_with("(ConvTranspose): output_padding along depth must be below its stride or "
                       "dilation"));
  CHECK(edited([](onnx::NodeProto* n) {
          attribute(n, "kernel_shape")->set_ints(0, 3);
        }).ends_with("(ConvTranspose): kernel_shape (3, 2, 2) but the weight is [8,4,2,2,2]"));
  CHECK(
      edited([](onnx::NodeProto* n) { attribute(n, "strides")->set_ints(0, 5000); })
          .ends_with("(ConvTranspose): a 3-D window's depth: kernel, stride and dilation 1..4096, "
                     "pads 0..4096"));
  CHECK(edited([](onnx::NodeProto* n) { attribute(n, "strides")->add_ints(1); })
            .ends_with("(ConvTranspose): a 3-D window needs kernel_shape of three values, strides "
                       "and dilations of three where written, and six pads"));
}
