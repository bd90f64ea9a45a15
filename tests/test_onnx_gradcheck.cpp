// Imported models' ops in float64 against finite differences, the weights drawn away from the
// file's: instance and group normalization (InstanceNormalization, GroupNorm's five nodes),
// PReLU (its slopes folded, or through Unsqueeze), a class token expanded over the batch and a
// tiny vision transformer; pixel shuffles, GlobalMaxPool, LogSoftmax, LRN, Max and Min;
// PyTorch's LocalResponseNorm export (an If); ELU and CELU
// with their own alphas; torch.std and torch.var; Sin, Cos, Atan, Sign and LPPool2d; Floor,
// Ceil, Round; GridSample; nearest resizing to any size.
#include <doctest/doctest.h>

#include <string>

#include "check/gradcheck.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

// The imported instance and group normalizations in float64 against finite differences, the
// weights drawn away from the file's (input gradients and every weight's, 96 elements of each).
TEST_CASE("onnx: gradcheck of an imported model's instance and group norms") {
  const OnnxModel m = load_onnx((onnx_data() / "instance_norm_net.onnx").string());
  check_gradients(randomized(m, 40), {random_tensor({2, 3, 6, 5}, 7)},
                  {.tolerance = 1e-6, .max_elements = 96});
}

// The imported PReLUs in float64 against finite differences, the slopes drawn away from the
// file's (folded: weights of their own shapes; unfolded: through Unsqueeze).
TEST_CASE("onnx: gradcheck of an imported model's PReLUs") {
  for (const char* name : {"prelu_net", "prelu_unfolded_net"}) {
    CAPTURE(std::string(name));
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    int prelus = 0;
    for (const OnnxNode& n : m.graph->nodes) prelus += n.kind == OnnxKind::prelu;
    CHECK(prelus == 3);
    check_gradients(randomized(m, 50), {kink_free({2, 3, 6, 5}, 9)}, {.tolerance = 1e-6});
  }
}

// A vision transformer's class token, a (1, 1, 8) weight expanded over the batch and joined in
// front of the patch tokens, in float64 against finite differences: its gradient is the sum of
// its copies' (the weights drawn away from the file's).
TEST_CASE("onnx: gradcheck of a class token expanded over the batch") {
  const OnnxModel m = load_onnx((onnx_data() / "class_token_net.onnx").string());
  REQUIRE(m.graph->params.count("cls") == 1);
  CHECK(m.graph->params.at("cls"));  // trainable
  check_gradients(randomized(m, 60), {random_tensor({3, 3, 4, 6}, 11)}, {.tolerance = 1e-6});
}

// torchvision's VisionTransformer, tiny (2 layers of 2 heads, 16 wide), in float64 against
// finite differences: attention's reshapes merge the batch axis with the tokens' and the heads'
// and bring it back first; every weight and the input (the weights drawn away from the file's).
TEST_CASE("onnx: gradcheck of a tiny vision transformer") {
  const OnnxModel m = load_onnx((onnx_data() / "vit_net.onnx").string());
  check_gradients(randomized(m, 70), {random_tensor({2, 3, 16, 16}, 13)}, {.tolerance = 1e-6});
}

// torch.einsum's batched products (q k^T, its softmax times v, a product over the first axis
// of both), in float64 against finite differences.
TEST_CASE("onnx: gradcheck of Einsum's batched products") {
  const OnnxModel m = load_onnx((onnx_data() / "einsum_net.onnx").string());
  check_gradients(randomized(m, 95), {random_tensor({2, 3, 4, 6}, 21)}, {.tolerance = 1e-6});
}

// torch.einsum beyond batched products (einsum2_net: a broadcast gate, a contraction with a
// weight, similarities over two axes, a sum over one operand's own axis, one operand), in
// float64 against finite differences, the weight's gradient included.
TEST_CASE("onnx: gradcheck of Einsum in general") {
  const OnnxModel m = load_onnx((onnx_data() / "einsum2_net.onnx").string());
  int general = 0;
  for (const OnnxNode& n : m.graph->nodes) general += n.kind == OnnxKind::einsum;
  CHECK(general == 5);
  check_gradients(randomized(m, 96), {random_tensor({2, 3, 6, 5}, 22)}, {.tolerance = 1e-6});
}

// torchvision's SwinTransformer, tiny (10 x 10 images, windows of 3), in float64 against finite
// differences: the relative position bias tables' gradients (a gather's, summed where pairs
// share an offset), the shifted windows' mask (a constant), padding to whole windows and the
// cyclic shift; every weight and the input, 96 elements of each (both ends and one per stretch
// between: about a quarter of the forward passes of all 9,400).
TEST_CASE("onnx: gradcheck of a tiny Swin transformer") {
  const OnnxModel m = load_onnx((onnx_data() / "swin_net.onnx").string());
  int tables = 0;
  for (const auto& [name, trainable] : m.graph->params)
    tables += name.find("relative_position_bias_table") != std::string::npos && trainable;
  CHECK(tables == 4);  // one per block
  check_gradients(randomized(m, 80), {random_tensor({2, 3, 10, 10}, 17)},
                  {.tolerance = 1e-6, .max_elements = 96});
  // mask_net: the mask's arithmetic in a few nodes, a (5, 2) table gathered at 12 indices.
  const OnnxModel mask = load_onnx((onnx_data() / "mask_net.onnx").string());
  CHECK(mask.graph->params.at("table"));
  check_gradients(randomized(mask, 90), {random_tensor({2, 2, 3, 4}, 19)}, {.tolerance = 1e-6});
}

// timm's blocks (timm_net: TF's "same" padding computed from shapes, ECA's 1-D convolution, a
// class token, attention unbinding q, k, v by a Split along an axis 0 that is not the batch's,
// F.normalize's clamp to a minimum, LeViT's BatchNorm1d over flattened tokens, a clamp to
// [-1.5, 2]) in float64 against finite differences, the weights drawn away from the file's.
TEST_CASE("onnx: gradcheck of timm's blocks") {
  const OnnxModel m = load_onnx((onnx_data() / "timm_net.onnx").string());
  int clamps = 0, splits = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    clamps += n.kind == OnnxKind::clamp;
    splits += n.kind == OnnxKind::split && n.batch_moved;
  }
  CHECK(clamps == 3);  // two F.normalize, one torch.clamp
  CHECK(splits == 1);
  check_gradients(randomized(m, 100), {random_tensor({2, 3, 7, 9}, 23, -2, 2)},
                  {.tolerance = 1e-6});
}

// x.repeat (tile_net: XCiT's position features repeated for each sample, GCViT's global query
// repeated over the batch axis for each window and over the tokens, a weight repeated along
// its channels) in float64 against finite differences: each copy's gradient sums back.
TEST_CASE("onnx: gradcheck of Tile") {
  const OnnxModel m = load_onnx((onnx_data() / "tile_net.onnx").string());
  int tiles = 0;
  for (const OnnxNode& n : m.graph->nodes) tiles += n.kind == OnnxKind::tile;
  CHECK(tiles == 3);  // the grid's two are over shape values
  check_gradients(randomized(m, 110), {random_tensor({2, 3, 8, 8}, 29, -2, 2)},
                  {.tolerance = 1e-6});
}

// Conv3d with a window 1 wide along one axis (conv3d_net: along the last, the first and the
// middle axis; grouped, strided, padded, dilated) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of 3-D convolutions with an axis 1 wide") {
  const OnnxModel m = load_onnx((onnx_data() / "conv3d_net.onnx").string());
  std::vector<int> axes;
  for (const OnnxNode& n : m.graph->nodes)
    if (n.kind == OnnxKind::conv && n.unit_axis != 0) axes.push_back(n.unit_axis);
  CHECK(axes == std::vector<int>{4, 2, 3});
  check_gradients(randomized(m, 120), {random_tensor({2, 3, 6, 7}, 31, -2, 2)},
                  {.tolerance = 1e-6});
}

// Bicubic resizing three ways and torch.stack(xs, dim=0).mean(0) (bicubic_net) in float64
// against finite differences.
TEST_CASE("onnx: gradcheck of bicubic resizing and a stack averaged over its new axis") {
  const OnnxModel m = load_onnx((onnx_data() / "bicubic_net.onnx").string());
  int cubic = 0, moved = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    cubic += n.kind == OnnxKind::resize && n.resize_method == ResizeMethod::cubic;
    moved += n.batch_moved;
  }
  CHECK(cubic == 3);
  CHECK(moved == 4);  // two Unsqueeze, the Concat and the ReduceMean over axis 0
  check_gradients(randomized(m, 130), {random_tensor({2, 3, 9, 9}, 37, -2, 2)},
                  {.tolerance = 1e-6});
}

// Comparisons and Where over activations (where_net: a leaky activation by torch.where, a
// causal mask computed from shapes filling scores with -inf, a mask from Less, Not and And
// choosing between activations, masked_fill by a compared mask) in float64 against finite
// differences: the gradient reaches the branch each element came from, none the conditions.
TEST_CASE("onnx: gradcheck of comparisons and Where") {
  const OnnxModel m = load_onnx((onnx_data() / "where_net.onnx").string());
  int selects = 0, fixed = 0, compares = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    selects += n.kind == OnnxKind::select;
    fixed += n.kind == OnnxKind::select && !n.int_inputs.empty();
    compares += n.kind == OnnxKind::binary && binary_compares(n.binary);
  }
  CHECK(selects == 4);
  CHECK(fixed == 1);     // the causal mask
  CHECK(compares == 6);  // Greater, two Less, GreaterOrEqual, Equal, and Not (an Equal to 0)
  check_gradients(randomized(m, 140), {random_tensor({2, 3, 4, 5}, 41, -2, 2)},
                  {.tolerance = 1e-6});
}

// A YOLO head's box decoding (anchor_net: anchor points computed from shapes, minus and plus
// predicted distances, scaled by a constant's elements) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of box decoding around anchor points computed from shapes") {
  const OnnxModel m = load_onnx((onnx_data() / "anchor_net.onnx").string());
  check_gradients(randomized(m, 150), {random_tensor({2, 3, 6, 8}, 43, -2, 2)},
                  {.tolerance = 1e-6});
}

// Assignments into slices of activations (scatter_net: ScatterND of a sigmoid into every third
// channel, of another activation into a row, of a constant into a column) in float64 against
// finite differences: overwritten elements pass no gradient back to the data, the updates get
// theirs.
TEST_CASE("onnx: gradcheck of ScatterND into activations") {
  const OnnxModel m = load_onnx((onnx_data() / "scatter_net.onnx").string());
  int scatters = 0;
  for (const OnnxNode& n : m.graph->nodes) scatters += n.kind == OnnxKind::scatter;
  CHECK(scatters == 3);
  check_gradients(randomized(m, 160), {random_tensor({2, 3, 4, 5}, 47, -2, 2)},
                  {.tolerance = 1e-6});
}

// GlobalAveragePool of tokens (N, C, L) (pool1d_net) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of a global average pool over tokens") {
  const OnnxModel m = load_onnx((onnx_data() / "pool1d_net.onnx").string());
  check_gradients(randomized(m, 180), {random_tensor({2, 3, 4, 5}, 59, -2, 2)},
                  {.tolerance = 1e-6});
}

// nn.LSTM's export unrolled (lstm_net: bidirectional with biases, two layers without, an
// initial state computed from the input; lstm_unfolded_net: the same with W, R and B assembled
// in the graph) in float64 against finite differences: the weights', the biases' and the
// input's gradients through every step.
TEST_CASE("onnx: gradcheck of LSTM") {
  const OnnxModel m = load_onnx((onnx_data() / "lstm_net.onnx").string());
  int both = 0, forward = 0;
  for (const OnnxNode& n : m.graph->nodes)
    if (n.kind == OnnxKind::lstm) {
      both += n.lstm.direction == OnnxLstm::both && n.lstm.has_bias;
      forward += n.lstm.direction == OnnxLstm::forward && !n.lstm.has_bias &&
                 n.lstm.has_initial_h && n.lstm.has_initial_c;
    }
  CHECK(both == 1);
  CHECK(forward == 2);
  check_gradients(randomized(m, 140), {random_tensor({2, 3, 8, 10}, 41, -2, 2)},
                  {.tolerance = 1e-6});
  // Unfolded: the gradients of PyTorch's own parameters through the gates' slices and joins.
  const OnnxModel u = load_onnx((onnx_data() / "lstm_unfolded_net.onnx").string());
  CHECK(u.graph->params.count("rows.weight_ih_l0_reverse") == 1);
  check_gradients(randomized(u, 150), {random_tensor({2, 3, 8, 10}, 43, -2, 2)},
                  {.tolerance = 1e-6});
}

// nn.RNN's export unrolled (rnn_net and rnn_unfolded_net: bidirectional tanh with biases; two
// ReLU layers without, from a computed initial state) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of RNN") {
  int seed = 170;
  for (const char* name : {"rnn_net", "rnn_unfolded_net"}) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    int tanh_both = 0, relu = 0;
    for (const OnnxNode& n : m.graph->nodes)
      if (n.kind == OnnxKind::lstm && n.lstm.cell == OnnxLstm::rnn) {
        tanh_both += n.lstm.direction == OnnxLstm::both && !n.lstm.relu[0] && !n.lstm.relu[1];
        relu += n.lstm.direction == OnnxLstm::forward && n.lstm.relu[0];
      }
    CHECK(tanh_both == 1);
    CHECK(relu == 2);
    check_gradients(randomized(m, seed++), {random_tensor({2, 3, 8, 10}, 53, -2, 2)},
                    {.tolerance = 1e-6});
  }
}

// nn.GRU's export unrolled (gru_net and gru_unfolded_net: bidirectional with biases, R's bias
// inside the reset gate's product; two layers without, from a computed initial state) in
// float64 against finite differences.
TEST_CASE("onnx: gradcheck of GRU") {
  int seed = 160;
  for (const char* name : {"gru_net", "gru_unfolded_net"}) {
    CAPTURE(name);
    const OnnxModel m = load_onnx((onnx_data() / (std::string(name) + ".onnx")).string());
    int grus = 0;
    for (const OnnxNode& n : m.graph->nodes)
      grus += n.kind == OnnxKind::lstm && n.lstm.cell == OnnxLstm::gru;
    CHECK(grus == 3);
    check_gradients(randomized(m, seed++), {random_tensor({2, 3, 8, 10}, 47, -2, 2)},
                    {.tolerance = 1e-6});
  }
}

// nn.PixelShuffle (DepthToSpace, CRD), nn.PixelUnshuffle, GlobalMaxPool beside
// GlobalAveragePool in CBAM's channel attention, and LogSoftmax over a map's channels, over its
// last axis and as the head (pixel_net) in float64 against finite differences, the weights
// drawn away from the file's.
TEST_CASE("onnx: gradcheck of pixel shuffles, GlobalMaxPool and LogSoftmax") {
  const OnnxModel m = load_onnx((onnx_data() / "pixel_net.onnx").string());
  int shuffles = 0, log_softmaxes = 0, global_max = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    shuffles += n.kind == OnnxKind::depth_to_space;
    log_softmaxes += n.kind == OnnxKind::log_softmax;
    global_max += n.kind == OnnxKind::reduce && n.global;
  }
  CHECK(shuffles == 1);
  CHECK(log_softmaxes == 3);
  CHECK(global_max == 1);
  check_gradients(randomized(m, 130), {random_tensor({2, 3, 6, 4}, 37, -2, 2)},
                  {.tolerance = 1e-6});
}

// LRN (lrn_net: sizes 5 and 3, after a ReLU and after a max pool) in float64 against finite
// differences: x over a power of its neighbours' squares, every path's gradient.
TEST_CASE("onnx: gradcheck of LRN") {
  const OnnxModel m = load_onnx((onnx_data() / "lrn_net.onnx").string());
  int lrns = 0;
  for (const OnnxNode& n : m.graph->nodes) lrns += n.kind == OnnxKind::lrn;
  CHECK(lrns == 2);
  check_gradients(randomized(m, 140), {random_tensor({2, 3, 6, 8}, 41, -2, 2)},
                  {.tolerance = 1e-6});
}

// torch.maximum, torch.minimum and torch.clamp between tensors (minmax_net: Max and Min of two
// activations, of an activation and a per-channel weight, of a map and its broadcast mean) in
// float64 against finite differences: the gradient to the extreme operand, summed over the
// broadcast ones.
TEST_CASE("onnx: gradcheck of Max and Min") {
  const OnnxModel m = load_onnx((onnx_data() / "minmax_net.onnx").string());
  int extremes = 0;
  for (const OnnxNode& n : m.graph->nodes)
    extremes += n.kind == OnnxKind::binary && binary_extreme(n.binary);
  CHECK(extremes == 5);
  check_gradients(randomized(m, 150), {random_tensor({2, 3, 5, 6}, 43, -1, 1)},
                  {.tolerance = 1e-6});
}

// nn.LocalResponseNorm as PyTorch exports it (lrn_torch_net: sizes 3 and 4), in float64
// against finite differences: the If around each squeeze taken by its shape condition, the
// (size, 1, 1) average pool over a 5-D view as a 2-D pool of the merged last axes.
TEST_CASE("onnx: gradcheck of PyTorch's LocalResponseNorm export (If, 3-D AveragePool)") {
  const OnnxModel m = load_onnx((onnx_data() / "lrn_torch_net.onnx").string());
  int ifs = 0, guarded = 0, pools = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    ifs += n.kind == OnnxKind::choose;
    guarded += !n.guards.empty();
    pools += n.kind == OnnxKind::avg_pool && n.ints.at(0) == 3;
  }
  CHECK(ifs == 2);
  CHECK(guarded == 4);  // each If's squeeze and identity
  CHECK(pools == 2);
  check_gradients(randomized(m, 150), {random_tensor({2, 3, 5, 6}, 43, -2, 2)},
                  {.tolerance = 1e-6});
}

// torch.floor, ceil and round of activations (round_net: gradients 0, beside the products
// that carry the convolution's) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of Floor, Ceil and Round") {
  const OnnxModel m = load_onnx((onnx_data() / "round_net.onnx").string());
  int rounded = 0;
  for (const OnnxNode& n : m.graph->nodes)
    for (Activation a : {Activation::floor, Activation::ceil, Activation::round})
      rounded += n.kind == OnnxKind::activation && n.activation == a;
  CHECK(rounded == 3);
  check_gradients(randomized(m, 167), {random_tensor({2, 3, 6, 7}, 50)}, {.tolerance = 1e-6});
}

// F.grid_sample at a flow field the network computes (grid_sample_net: both modes, every
// padding, align_corners both ways) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of GridSample") {
  const OnnxModel m = load_onnx((onnx_data() / "grid_sample_net.onnx").string());
  int samples = 0;
  for (const OnnxNode& n : m.graph->nodes) samples += n.kind == OnnxKind::grid_sample;
  CHECK(samples == 5);
  check_gradients(randomized(m, 168), {random_tensor({2, 3, 8, 9}, 51)}, {.tolerance = 1e-6});
}

// nn.ELU and nn.CELU with alphas of their own (elu_net: Elu 0.5 and 1.7, Celu 2.0 and 1.0; the
// ELU family's op, whose backward reads its output) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of ELU and CELU with their own alphas") {
  const OnnxModel m = load_onnx((onnx_data() / "elu_net.onnx").string());
  int elus = 0;
  for (const OnnxNode& n : m.graph->nodes) elus += n.kind == OnnxKind::elu;
  CHECK(elus == 4);
  check_gradients(randomized(m, 170), {random_tensor({2, 3, 6, 5}, 49, -2, 2)},
                  {.tolerance = 1e-6});
}

// torch.std and torch.var as PyTorch exports them (var_net: the unbiased count a ReduceProd of
// the reduced sizes, evaluated while recording; the biased variance a mean of squares) in
// float64 against finite differences.
TEST_CASE("onnx: gradcheck of torch.std and torch.var") {
  const OnnxModel m = load_onnx((onnx_data() / "var_net.onnx").string());
  int counts = 0;
  for (const OnnxNode& n : m.graph->nodes)
    counts += n.kind == OnnxKind::integer && n.int_node.op == IntOp::reduce;
  CHECK(counts == 2);
  check_gradients(randomized(m, 180), {random_tensor({2, 3, 6, 5}, 51, -2, 2)},
                  {.tolerance = 1e-6});
}

// torch.sin, cos, atan and sign of activations and nn.LPPool2d (trig_net; Sign's gradient 0) in
// float64 against finite differences.
TEST_CASE("onnx: gradcheck of Sin, Cos, Atan, Sign and LPPool2d") {
  const OnnxModel m = load_onnx((onnx_data() / "trig_net.onnx").string());
  int signs = 0;
  for (const OnnxNode& n : m.graph->nodes)
    signs += n.kind == OnnxKind::activation && n.activation == Activation::sign;
  CHECK(signs == 3);
  check_gradients(randomized(m, 190), {random_tensor({2, 3, 6, 8}, 53, -2, 2)},
                  {.tolerance = 1e-6});
}

// Nearest resizing to sizes that are no whole multiples and by scales of 1.5 and 0.5
// (nearest_net: each a gather of rows and one of columns, whose backward adds each output
// gradient back to its source pixel) in float64 against finite differences.
TEST_CASE("onnx: gradcheck of nearest resizing to any size") {
  const OnnxModel m = load_onnx((onnx_data() / "nearest_net.onnx").string());
  int nearest = 0;
  for (const OnnxNode& n : m.graph->nodes) nearest += n.kind == OnnxKind::upsample_nearest;
  CHECK(nearest == 4);
  check_gradients(randomized(m, 200), {random_tensor({2, 3, 6, 8}, 55, -2, 2)},
                  {.tolerance = 1e-6});
}
