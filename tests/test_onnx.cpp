// ONNX import: the small models of scripts/onnx_fixtures.py give the outputs of ONNX's reference
// evaluator or of PyTorch; their training steps are bitwise equal planned and baseline; weights
// keep the file's names; the fuzz corpus reads or fails cleanly. (Bad files and unsupported ops:
// tests/test_onnx_errors.cpp.) Past 400 lines: one list of fixtures, each with a line saying
// what it exercises, read by the checks every fixture goes through.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "run/executor.h"
#include "tests/alloc_cap.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"
#include "tests/temp_dir.h"
#include "tests/worst.h"

namespace fs = std::filesystem;
using namespace frugal;
using namespace frugal::testing;

// The committed fixtures (tests/data/onnx, scripts/onnx_fixtures.py): each is compared with
// PyTorch's output where it has one (<name>.io) and trained planned against baseline.
const char* const kFixtures[] = {"residual_net",
                                 "reshape_net",
                                 "mobile_net",
                                 "train_net",
                                 "unet_net",
                                 "shuffle_net",
                                 "unet_seg",
                                 "dense_net",
                                 "focus_net",
                                 "pad_net",
                                 "extras_net",
                                 "norm_net",
                                 "norm13_net",
                                 "bmm_net",
                                 "gather_net",
                                 "reduce_net",
                                 "reduce11_net",
                                 "instance_norm_net",
                                 "instance_norm_unfolded_net",
                                 "group_norm_lookalike_net",
                                 "prelu_net",
                                 "prelu_unfolded_net",
                                 "class_token_net",
                                 "vit_net",
                                 "timm_net",
                                 "timm_static_net",
                                 "tile_net",
                                 "tile_static_net",
                                 "conv3d_net",
                                 "bicubic_net",
                                 "where_net",
                                 "anchor_net",
                                 "scatter_net",
                                 "pool1d_net",
                                 "empty_concat_net",
                                 "lstm_net",
                                 "lstm_unfolded_net",
                                 "gru_net",
                                 "gru_unfolded_net",
                                 "rnn_net",
                                 "rnn_unfolded_net",
                                 "swin_net",
                                 "mask_net",
                                 "einsum_net",
                                 "activation_net",
                                 "bilinear_net",
                                 "matmul_net",
                                 "expand_net",
                                 "pixel_net",
                                 "lrn_net",
                                 "minmax_net",
                                 "lrn_torch_net",
                                 "pool_window_net",
                                 "pool_pad_net",
                                 "same_pad_net",
                                 "round_net",
                                 "grid_sample_net",
                                 "elu_net",
                                 "var_net",
                                 "trig_net",
                                 "nearest_net",
                                 "einsum2_net",
                                 "gem_net",
                                 "signal_net",
                                 "features_net",
                                 "video_net",
                                 "conv3d_full_net",
                                 "unet3d_net"};

TEST_CASE("onnx: imported models give ONNX's reference outputs") {
  // focus_net: PyTorch's output; slices with steps (YOLOv5's focus layer, x[:, 1::3]).
  // pad_net: PyTorch's output; ReflectionPad2d and ReplicationPad2d (Pad, reflect and edge).
  // extras_net: PyTorch's output; a channel mean, GELU's tanh form, torch.flip (Slice, step
  // -1), torch.erf, a mean over channels and width.
  // norm_net, norm13_net: PyTorch's output; LayerNorm at opset 17 and as nine nodes at opset 13,
  // ConvNeXt's block, a normalization by hand (Pow, Sqrt, Div over the channels).
  // bmm_net: PyTorch's output; MatMul with broadcast leading axes (multi-query attention).
  // gather_net: PyTorch's output; Gather over activations (x[:, [4, 1, 1]], x[:, :, -1]).
  // reduce_net, reduce11_net: PyTorch's output; ReduceSum (axes an input at opset 13, an
  // attribute at 11), ReduceMax, ReduceMin, ReduceL1, ReduceL2, ReduceLogSumExp, and a norm
  // as Abs, Pow, ReduceSum, Pow.
  // expand_net: PyTorch's output; Expand over activations (a one-channel gate over the
  // channels, a vector along a new axis), its shape from Shape, Equal and Where.
  // class_token_net: PyTorch's output; a vision transformer's class token, a (1, 1, D) weight
  // expanded over the batch (Expand of a weight) and joined in front of the patch tokens.
  // vit_net: PyTorch's output; torchvision's VisionTransformer (tiny), whose attention moves
  // the batch axis by reshapes and transposes and brings it back.
  // timm_net: PyTorch's output; blocks as timm writes them: TF's "same" padding computed from
  // shapes (Ceil, Clip), ECA's 1-D convolution, a class token, attention unbinding q, k, v from
  // one tensor (Split along an axis 0 a Transpose made not the batch's), F.normalize (a Clip to
  // a minimum), LeViT's BatchNorm1d over flattened tokens (Flatten at axis 2), a clamp.
  // timm_static_net: the same exported at a fixed batch of 1 (its constant shapes hold 1),
  // run at a batch of 2 against PyTorch's output there.
  // tile_net: PyTorch's output; x.repeat as timm writes it (Tile): XCiT's position features
  // (a convolution over a grid computed from shapes, repeated for each sample), GCViT's global
  // query repeated over the batch axis for each window and over the tokens, a weight repeated.
  // tile_static_net: the same exported at a fixed batch of 1 (the grid folded into a constant,
  // its repeats holding 1), run at a batch of 2 against PyTorch's output there.
  // conv3d_net: PyTorch's output; Conv3d whose window is 1 wide along one axis (the last:
  // LambdaNetworks' position lambdas; the first, grouped and strided; the middle, dilated).
  // bicubic_net: PyTorch's output; bicubic resizing down, up by 1.5 and to a size with
  // align_corners, and torch.stack(xs, dim=0) averaged over the new axis 0 (CrossViT's head).
  // where_net: PyTorch's output; comparisons and Where over activations: torch.where(y > 0,
  // y, 0.1 * y), scores filled with -inf by a causal mask computed from shapes (Range, Greater
  // of integers), a mask from Less, Not and And choosing between two activations, masked_fill
  // by GreaterOrEqual, ReLU's zeros found by Equal and cast to float.
  // anchor_net: PyTorch's output; a YOLO head's box decoding: anchor points computed from
  // shapes minus and plus predicted distances (Sub and Add whose first operand is a shape
  // value), boxes scaled by each element of a constant tensor.
  // scatter_net: PyTorch's output; assignments into slices of activations (ScatterND):
  // YOLOv8-pose's y[:, 2::3] = y[:, 2::3].sigmoid(), a row from another activation, a column
  // set to a constant.
  // pool1d_net: PyTorch's output; nn.AdaptiveAvgPool1d(1) over tokens (GlobalAveragePool of
  // (N, C, L): Hugging Face's Swin).
  // empty_concat_net: PyTorch's output; torch.cat of activations with an empty placeholder
  // (torch.empty(N, 0, h, w): segmentation_models_pytorch's) and zeros computed from shapes.
  // lstm_net: PyTorch's output; nn.LSTM's export (LSTM): bidirectional along each row of a map
  // (batch first, states from zero), two layers without biases from a computed initial state
  // (sliced per layer along an axis 0 that is not the batch's), the final h and c read.
  // lstm_unfolded_net: the same exported without constant folding, W, R and B assembled in the
  // graph from PyTorch's parameters (Slice, Concat, Unsqueeze of weights).
  // gru_net, gru_unfolded_net: PyTorch's output; nn.GRU's export (GRU, linear_before_reset) in
  // the same two forms: bidirectional along rows, two layers without biases from a computed h.
  // rnn_net, rnn_unfolded_net: PyTorch's output; nn.RNN's export (RNN) in the same two forms:
  // bidirectional tanh along rows, two ReLU layers without biases from a computed h.
  // swin_net: PyTorch's output; torchvision's SwinTransformer (tiny): padding to whole windows,
  // the cyclic shift, the shifted windows' mask (float constants computed from shapes), the
  // relative position bias gathered from its table, a rank-5 broadcast add.
  // mask_net: ONNX's reference evaluator; the same in a few nodes (ScatterND, Range, Mod, Not,
  // Where and Cast over floats, a weight table's Gather, a Pow of two constants).
  // einsum_net: PyTorch's output; torch.einsum's batched products, either operand transposed.
  // instance_norm_net: PyTorch's output; InstanceNorm2d with and without affine weights and
  // GroupNorm's export (Reshape, InstanceNormalization, Reshape, Mul, Add); unfolded, its
  // weights through Unsqueeze (a reshape of the parameter).
  // prelu_net: PyTorch's output; PReLU per channel after a convolution and on (N, C), and one
  // slope for every channel; unfolded, its slopes through Unsqueeze.
  // group_norm_lookalike_net: PyTorch's output; GroupNorm, and its five nodes over a reshape
  // that is no grouping (recorded node by node).
  // activation_net: PyTorch's output; Elu, Selu, Mish's Softplus-Tanh-Mul, Softplus, Exp, Neg,
  // Log, Reciprocal.
  // pixel_net: PyTorch's output; nn.PixelShuffle (DepthToSpace, CRD mode), nn.PixelUnshuffle
  // (Reshape, Transpose, Reshape), CBAM's channel attention (GlobalMaxPool beside
  // GlobalAveragePool), LogSoftmax over a map's channels, over its last axis, and as the head.
  // lrn_net: PyTorch's output (nn.LocalResponseNorm, sizes 5 and 3) for LRN nodes written
  // around its weights.
  // minmax_net: PyTorch's output; torch.maximum and minimum (Max, Min) of activations, of an
  // activation and a weight, broadcast, and torch.clamp between tensors.
  // lrn_torch_net: PyTorch's output; nn.LocalResponseNorm (sizes 3 and 4) as PyTorch exports
  // it: a 5-D view, a Pad by computed pads, a (size, 1, 1) AveragePool, an If around a squeeze.
  // pool_window_net: PyTorch's output; MaxPool and AveragePool with rectangular windows,
  // strides and padding, over (N, C, L), and 3-D ones 1 wide along each of the three axes.
  // pool_pad_net: PyTorch's pools of explicitly padded maps for MaxPool and AveragePool (padding
  // counted and not) whose pads differ at an axis's two ends, and a dilated MaxPool.
  // same_pad_net: PyTorch's convolutions and pools of maps padded as auto_pad SAME_UPPER and
  // SAME_LOWER ask (Conv, MaxPool, AveragePool), a VALID Conv, and transposed convolutions
  // cropped to a ConvTranspose's output_shape and to auto_pad SAME_UPPER's.
  // round_net: PyTorch's output; torch.floor, torch.ceil and torch.round of activations.
  // grid_sample_net: PyTorch's output; F.grid_sample at a computed flow field, bilinear (zeros,
  // border, reflection padding) and nearest, align_corners both ways.
  // elu_net: PyTorch's output; nn.ELU with alphas 0.5 and 1.7, nn.CELU with 2.0 and 1.0.
  // var_net: PyTorch's output; torch.std and torch.var, unbiased (the count a ReduceProd of
  // sizes) and not, over pixels, channels and whole samples.
  // trig_net: PyTorch's output; torch.sin, cos, atan and sign of activations, nn.LPPool2d with
  // p = 2 and 3 (Sign, Abs and Relu around an AveragePool of powers).
  // nearest_net: PyTorch's output; F.interpolate in nearest mode to 11x13 and 5x3 from 6x8
  // and by scales of 1.5 and 0.5 (two gathers each).
  // einsum2_net: PyTorch's output; torch.einsum beyond batched products (a gate, a 1x1
  // convolution by a weight, similarities over pixels, a sum over one operand's own axis, one
  // operand transposed and summed).
  // gem_net: PyTorch's output; GeM pooling with a learned exponent (Pow by a weight, by 1 / p
  // computed from it) and torch.pow of two activations.
  // signal_net: PyTorch's output; a 1-D network over (N, C, L) labelling each position
  // (output (N, K, L)): dilated and strided Conv1d, MaxPool1d with ceil_mode, nearest and
  // linear 1-D upsampling, ConvTranspose1d with output_padding, an AdaptiveAvgPool1d(1) gate.
  // features_net: PyTorch's output; an MLP over (N, F): Linear, BatchNorm1d, LayerNorm, GELU.
  // video_net: PyTorch's output; R(2+1)D's factored Conv3d over (N, C, D, H, W), an
  // AdaptiveAvgPool3d(1) gate, labelling each voxel (output (N, K, D, H, W)).
  // conv3d_full_net: PyTorch's output; Conv3d 1 wide along no axis (r3d_18's 3x3x3): padded,
  // strided and grouped, dilated along depth, a (1, 1, 1) downsampling by 2 along every axis.
  // unet3d_net: PyTorch's output; a 3-D U-Net labelling each voxel: MaxPool3d (and one padded
  // with ceil_mode), ConvTranspose3d (by 2; grouped with padding and output_padding),
  // AvgPool3d, trilinear resizing by a scale and to a size, nearest resizing to a size.
  // unet_seg: PyTorch's own eval-mode output (scripts/onnx_fixtures.py --segmentation --small),
  // a U-Net whose F.pad to the skip's size exports as shape arithmetic (ConstantOfShape, integer
  // Reshape, Slice with step -1, Transpose) and whose output is per pixel.
  for (const char* name : kFixtures) {
    CAPTURE(name);
    // train_net: a training-mode export, no eval-mode output to compare; every other fixture
    // has its .io (a missing one fails here rather than skipping the comparison).
    if (std::string(name) == "train_net") continue;
    REQUIRE(std::filesystem::exists(onnx_data() / (std::string(name) + ".io")));
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    const std::vector<float> io = read_floats(onnx_data() / (std::string(name) + ".io"));
    const int64_t in = 2 * m.input.numel();
    REQUIRE(static_cast<int64_t>(io.size()) == in + 2 * m.classes * m.label_shape.numel());
    const std::vector<float> x(io.begin(), io.begin() + in), want(io.begin() + in, io.end());
    check_matches_pytorch(name, onnx_forward(m, x), want);
  }
  {  // extras_net's GELU is one op (its nine nodes fused), its Erf another.
    const OnnxModel e = load_onnx((onnx_data() / "extras_net.onnx").string());
    int gelus = 0, erfs = 0, means = 0, tanhs = 0;
    for (const OnnxNode& n : e.graph->nodes) {
      gelus += n.kind == OnnxKind::activation && n.activation == Activation::gelu_tanh;
      erfs += n.kind == OnnxKind::activation && n.activation == Activation::erf;
      tanhs += n.kind == OnnxKind::activation && n.activation == Activation::tanh;
      means += n.kind == OnnxKind::reduce_mean;
    }
    CHECK(gelus == 1);
    CHECK(erfs == 1);
    CHECK(tanhs == 0);
    CHECK(means == 2);
    // Two Convs, two means, Sub, GELU, two flips (Slices, one of two axes), Erf, Gemm.
    CHECK(e.graph->nodes.size() == 10);
  }
  for (const char* name : {"norm_net", "norm13_net"}) {  // three LayerNorms each, one op apiece
    CAPTURE(name);
    const OnnxModel e = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    int norms = 0, roots = 0;
    for (const OnnxNode& n : e.graph->nodes) {
      norms += n.kind == OnnxKind::layer_norm;
      roots += n.kind == OnnxKind::activation && n.activation == Activation::sqrt;
    }
    CHECK(norms == 3);
    CHECK(roots == 1);  // the normalization by hand stays as it is
  }
  {  // Three InstanceNormalizations; the fixed ones and zeros of two are not read.
    const OnnxModel e = load_onnx((onnx_data() / "instance_norm_net.onnx").string());
    int norms = 0, weighted = 0;
    for (const OnnxNode& n : e.graph->nodes) {
      if (n.kind != OnnxKind::instance_norm) continue;
      ++norms;
      weighted += n.ints == std::vector<int64_t>{1, 1};
      CHECK(n.inputs.size() == 1 + static_cast<size_t>(n.ints[0] + n.ints[1]));
    }
    CHECK(norms == 3);
    CHECK(weighted == 1);
  }
  // Recorded, each is one group_norm op (GroupNorm's five nodes too, folded and unfolded: the
  // one Mul left is `0.5 * plain(x)`); the look-alike's reshape is no grouping of the
  // channels, so its nodes are recorded one by one (its Mul by the weight stays).
  for (const auto& [name, norms, muls] :
       {std::tuple{"instance_norm_net", 3, 1}, std::tuple{"instance_norm_unfolded_net", 3, 1},
        std::tuple{"group_norm_lookalike_net", 2, 1}}) {
    CAPTURE(std::string(name));
    const OnnxModel e = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    ParamStore store;
    Tape tape(store);
    (void)record_onnx(e, tape.input("x", Shape({2, 3, 6, 5}), DType::f32));
    int group = 0, mul = 0;
    for (const auto& op : tape.ops()) {
      group += op.op->name() == "group_norm";
      mul += op.op->name() == "mul";
    }
    CHECK(group == norms);
    CHECK(mul == muls);
  }
  const OnnxModel r = load_onnx((onnx_data() / "residual_net.onnx").string());
  CHECK(r.input == Shape({3, 8, 8}));
  CHECK(r.classes == 5);
  CHECK(r.label_shape.rank() == 0);
  const OnnxModel u = load_onnx((onnx_data() / "unet_seg.onnx").string());
  CHECK(u.classes == 4);
  CHECK(u.label_shape == Shape({16, 16}));
  // matmul_net's GELU, five nodes in the file, is one op; its constants are no weights (every
  // weight left is read by a node).
  const OnnxModel mm = load_onnx((onnx_data() / "matmul_net.onnx").string());
  int gelu = 0;
  for (const OnnxNode& n : mm.graph->nodes)
    gelu += n.kind == OnnxKind::activation && n.activation == Activation::gelu;
  CHECK(gelu == 1);
  std::set<std::string> read;
  for (const OnnxNode& n : mm.graph->nodes) read.insert(n.inputs.begin(), n.inputs.end());
  for (const auto& [name, trainable] : mm.graph->params) CHECK_MESSAGE(read.count(name), name);
  // dense_net's three Concats read by BatchNormalization alone are each one op with it, and
  // training keeps no concatenation (layers/concat_batch_norm.h); residual_net's Concat, read
  // by LeakyRelu, stays a Concat.
  const OnnxModel d = load_onnx((onnx_data() / "dense_net.onnx").string());
  std::vector<int> pieces;
  for (const OnnxNode& n : d.graph->nodes) {
    CHECK(n.kind != OnnxKind::concat);
    if (n.kind == OnnxKind::batch_norm) pieces.push_back(n.concat_pieces);
  }
  CHECK(pieces == std::vector<int>{0, 2, 0, 3, 4});
  int concats = 0;
  for (const OnnxNode& n : r.graph->nodes) concats += n.kind == OnnxKind::concat;
  CHECK(concats == 1);
  // residual_net's ReLU read by MaxPool alone runs after the pool, on the pool's output.
  std::vector<OnnxKind> kinds;
  for (const OnnxNode& n : r.graph->nodes) kinds.push_back(n.kind);
  const auto pool = std::find(kinds.begin(), kinds.end(), OnnxKind::max_pool);
  REQUIRE(pool != kinds.end());
  REQUIRE(pool + 1 != kinds.end());
  CHECK(pool[1] == OnnxKind::relu);
  const OnnxNode& after = r.graph->nodes[static_cast<size_t>(pool - kinds.begin()) + 1];
  CHECK(after.inputs[0] == r.graph->nodes[static_cast<size_t>(pool - kinds.begin())].output);
  CHECK(after.name == "relu2");
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
    Value x = tape.input("x", batched(2, m.input), t);
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
      worst = worse(worst, std::abs(element_as_double(ex.value(y), i) - want));
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
  for (const char* name : kFixtures) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    const std::vector<Tensor> base = onnx_train(m, MemoryMode::baseline);
    for (bool pack : {false, true}) {  // and with its ReLU outputs packed
      CAPTURE(pack);
      const std::vector<Tensor> planned = onnx_train(m, MemoryMode::planned, pack);
      REQUIRE(base.size() == planned.size());
      for (size_t i = 0; i < base.size(); ++i) {
        CAPTURE(i);
        REQUIRE(base[i].meta() == planned[i].meta());
        CHECK(std::memcmp(base[i].raw(), planned[i].raw(), base[i].bytes()) == 0);
      }
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
  {  // A ratio of 0 keeps everything: the Dropout folds, as in eval mode.
    onnx::ModelProto zero;
    std::ifstream in(onnx_data() / "train_net.onnx", std::ios::binary);
    REQUIRE(zero.ParseFromIstream(&in));
    for (auto& n : *zero.mutable_graph()->mutable_node())
      if (n.name() == "ratio")
        n.mutable_attribute(0)->mutable_t()->set_raw_data(std::string(4, '\0'));
    const std::string bytes = zero.SerializeAsString();
    const OnnxModel folded = load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
    int dropouts = 0;
    for (const OnnxNode& n : folded.graph->nodes) dropouts += n.kind == OnnxKind::dropout;
    CHECK(dropouts == 0);
  }
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

TEST_CASE("onnx: weights keep the file's names, BatchNorm statistics are not trained") {
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

TEST_CASE("onnx: the fuzz corpus and regressions read or fail with an error, in capped memory") {
  int files = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    const fs::path dir = fs::path(FRUGAL_SOURCE_DIR) / "tests" / "fuzz" / kind / "onnx";
    REQUIRE(fs::is_directory(dir));
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
  }
  CHECK(files >= 4);
}

// An Expand read only by arithmetic (F.normalize's norm expanded to x's shape, then x / norm;
// expand_net's one-channel gate) records no expanded copy where the arithmetic can broadcast
// the unexpanded value to the same output: the fixtures' outputs above match PyTorch's either
// way, and nothing of the Expand's size is kept for backward.
TEST_CASE("onnx: an Expand that arithmetic alone reads is broadcast by the arithmetic") {
  for (auto [name, flagged, concats] :
       {std::tuple{"timm_net", 2, 2}, std::tuple{"expand_net", 2, 1}}) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    int marked = 0;
    for (const OnnxNode& n : m.graph->nodes) marked += n.broadcast_only;
    CHECK(marked == flagged);
    ParamStore store(1);
    Tape tape(store);
    const Shape in = m.input;
    record_onnx(m, tape.input("x", {2, in[0], in[1], in[2]}, DType::f32));
    // timm_net: the class token's Expand and torch.cat, none from the norms; expand_net: the
    // vector along a new axis, whose product needs the expanded shape, recorded as before.
    int joined = 0;
    for (const OpNode& op : tape.ops()) joined += op.op->name() == "concat";
    CHECK(joined == concats);
  }
}

// A constant split into parts (YOLO iterating its strides, a tensor that is neither parameter
// nor buffer: Split of a Constant, then Squeeze) is folded while loading: anchor_net's output
// scaled by the second of three parts gives the output times that part, bit for bit.
TEST_CASE("onnx: a Split of a constant folds into constants") {
  onnx::ModelProto m;
  std::ifstream in(onnx_data() / "anchor_net.onnx", std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  onnx::GraphProto* g = m.mutable_graph();
  const std::string y = g->output(0).name();
  onnx::NodeProto* c = g->add_node();
  c->set_op_type("Constant");
  c->add_output("parts");
  onnx::AttributeProto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  v->mutable_t()->add_dims(3);
  for (float f : {1.5f, -0.25f, 2.0f}) v->mutable_t()->add_float_data(f);
  onnx::NodeProto* split = g->add_node();
  split->set_op_type("Split");
  split->add_input("parts");
  for (const char* o : {"p0", "p1", "p2"}) split->add_output(o);
  onnx::NodeProto* mul = g->add_node();
  mul->set_op_type("Mul");
  mul->add_input(y);
  mul->add_input("p1");
  mul->add_output("scaled");
  g->mutable_output(0)->set_name("scaled");
  const std::string bytes = m.SerializeAsString();
  const OnnxModel scaled = load_onnx_bytes("scaled.onnx", bytes.data(), bytes.size());
  const OnnxModel plain = load_onnx((onnx_data() / "anchor_net.onnx").string());
  const std::vector<float> io = read_floats(onnx_data() / "anchor_net.io");
  const std::vector<float> x(io.begin(), io.begin() + 2 * plain.input.numel());
  const std::vector<float> want = onnx_forward(plain, x), got = onnx_forward(scaled, x);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == want[i] * -0.25f);
  // Along the last axis of a (1, F, 2) constant, F the output's width, so that the copy
  // crosses rows: the second part (1, F, 1) holds elements 1, 3, 5, ...; reshaped to (1, F) by
  // a Reshape (the former Mul) and multiplied by a new Mul.
  const int64_t F = static_cast<int64_t>(want.size()) / 2;
  onnx::TensorProto* t = v->mutable_t();
  t->clear_dims();
  t->clear_float_data();
  for (int64_t d : {int64_t{1}, F, int64_t{2}}) t->add_dims(d);
  for (int64_t i = 0; i < 2 * F; ++i) t->add_float_data(static_cast<float>(i % 7) - 3.0f);
  split->clear_output();
  for (const char* o : {"p0", "p1"}) split->add_output(o);
  onnx::AttributeProto* axis = split->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(2);
  onnx::TensorProto* target = g->add_initializer();
  target->set_name("row");
  target->set_data_type(onnx::TensorProto::INT64);
  target->add_dims(2);
  for (int64_t d : {int64_t{1}, F}) target->add_int64_data(d);
  mul->set_op_type("Reshape");
  mul->set_input(0, "p1");
  mul->set_input(1, "row");
  mul->set_output(0, "r");
  onnx::NodeProto* mul2 = g->add_node();
  mul2->set_op_type("Mul");
  mul2->add_input(y);
  mul2->add_input("r");
  mul2->add_output("scaled");
  const std::string bytes2 = m.SerializeAsString();
  const std::vector<float> rows =
      onnx_forward(load_onnx_bytes("rows.onnx", bytes2.data(), bytes2.size()), x);
  REQUIRE(rows.size() == want.size());
  for (size_t i = 0; i < rows.size(); ++i)
    CHECK(rows[i] ==
          want[i] * (static_cast<float>((2 * (static_cast<int64_t>(i) % F) + 1) % 7) - 3.0f));
  // Sizes that do not add up to the constant's extent are an error naming the node.
  onnx::AttributeProto* sizes = split->add_attribute();
  sizes->set_name("split");
  sizes->set_type(onnx::AttributeProto::INTS);
  for (int64_t s : {1, 2}) sizes->add_ints(s);
  CHECK(error_for(m).ends_with("(Split): split sizes do not add up to the constant's extent 2"));
}
