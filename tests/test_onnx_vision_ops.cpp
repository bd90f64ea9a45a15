// ONNX import of the ops that move channels into pixels and back (DepthToSpace in both modes,
// SpaceToDepth), GlobalMaxPool, LRN, LogSoftmax, the ELU family with its own constants and
// nearest Resize's rows and columns: elements where ONNX's definitions put them, and the errors
// for what does not fit (Max and Min's too). PyTorch's own outputs for nn.PixelShuffle,
// PixelUnshuffle, adaptive max pooling and log_softmax are pixel_net's, for LocalResponseNorm
// lrn_net's (tests/test_onnx.cpp).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/onnx.h"
#include "models/onnx_resize.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

auto blocks(int64_t b, const char* mode = nullptr) {
  return [b, mode](onnx::NodeProto* n) {
    auto* a = attribute(n, "blocksize");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(b);
    if (mode) {
      auto* s = attribute(n, "mode");
      s->set_type(onnx::AttributeProto::STRING);
      s->set_s(mode);
    }
  };
}

}  // namespace

TEST_CASE("onnx: DepthToSpace (DCR and CRD) and SpaceToDepth put elements where ONNX does") {
  const int64_t b = 2, C = 3, H = 2, W = 3;  // DepthToSpace: (N, C*b*b, H, W) to (N, C, H*b, W*b)
  for (const char* mode : {"DCR", "CRD"}) {
    CAPTURE(std::string(mode));
    const OnnxModel m = load_model(one_node("DepthToSpace", {C * b * b, H, W}, blocks(b, mode)));
    const std::vector<float> x = ramp(2 * C * b * b * H * W), y = onnx_forward(m, x);
    REQUIRE(y.size() == x.size());
    const bool crd = std::string(mode) == "CRD";
    int wrong = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < H * b; ++i)
          for (int64_t j = 0; j < W * b; ++j) {
            const int64_t bh = i % b, bw = j % b;
            const int64_t from = crd ? c * b * b + bh * b + bw : (bh * b + bw) * C + c;
            const float want =
                x[static_cast<size_t>(((n * C * b * b + from) * H + i / b) * W + j / b)];
            wrong += y[static_cast<size_t>(((n * C + c) * H * b + i) * W * b + j)] != want;
          }
    CHECK(wrong == 0);
  }
  // SpaceToDepth: (N, C, H*b, W*b) to (N, (bh*b + bw)*C + c, H, W), the inverse of DCR.
  const OnnxModel m = load_model(one_node("SpaceToDepth", {C, H * b, W * b}, blocks(b)));
  const std::vector<float> x = ramp(2 * C * b * b * H * W), y = onnx_forward(m, x);
  REQUIRE(y.size() == x.size());
  int wrong = 0;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * b; ++i)
        for (int64_t j = 0; j < W * b; ++j) {
          const int64_t to = ((i % b) * b + j % b) * C + c;
          const float want = x[static_cast<size_t>(((n * C + c) * H * b + i) * W * b + j)];
          wrong += y[static_cast<size_t>(((n * C * b * b + to) * H + i / b) * W + j / b)] != want;
        }
  CHECK(wrong == 0);
}

TEST_CASE("onnx: GlobalMaxPool is each channel's largest element") {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{3, 4, 5}, {3, 1, 7}}) {
    CAPTURE(dims[2]);
    const OnnxModel m = load_model(one_node("GlobalMaxPool", dims, kNone));
    const int64_t plane = dims[1] * dims[2];
    std::vector<float> x = ramp(2 * 3 * plane);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 101);
    const std::vector<float> y = onnx_forward(m, x);
    REQUIRE(y.size() == 6);
    for (size_t p = 0; p < 6; ++p) {
      float want = x[p * static_cast<size_t>(plane)];
      for (int64_t e = 1; e < plane; ++e)
        want = std::max(want, x[p * static_cast<size_t>(plane) + static_cast<size_t>(e)]);
      CHECK(y[p] == want);
    }
  }
}

// ONNX's LRN for every window size, even ones included (there PyTorch's nn.LocalResponseNorm
// takes the window one channel earlier; ONNX's definition is imported): x / (bias + alpha/size *
// the sum of squares over channels c - floor((size-1)/2) to c + ceil((size-1)/2))^beta.
TEST_CASE("onnx: LRN sums the squares over ONNX's window of channels") {
  const int64_t C = 6, H = 2, W = 3;
  for (int64_t size : {1, 2, 3, 4, 5, 8}) {
    CAPTURE(size);
    const double alpha = 0.2, beta = 0.75, bias = 1.5;
    const OnnxModel m = load_model(one_node("LRN", {C, H, W}, [&](onnx::NodeProto* n) {
      auto* s = attribute(n, "size");
      s->set_type(onnx::AttributeProto::INT);
      s->set_i(size);
      for (auto [name, v] : {std::pair{"alpha", alpha}, {"beta", beta}, {"bias", bias}}) {
        auto* a = attribute(n, name);
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(static_cast<float>(v));
      }
    }));
    const std::vector<float> x = ramp(2 * C * H * W), y = onnx_forward(m, x);
    REQUIRE(y.size() == x.size());
    double worst = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t p = 0; p < H * W; ++p) {
          double sum = 0;
          for (int64_t k = c - (size - 1) / 2; k <= c + size / 2; ++k)
            if (k >= 0 && k < C)
              sum += std::pow(x[static_cast<size_t>((n * C + k) * H * W + p)], 2);
          const size_t at = static_cast<size_t>((n * C + c) * H * W + p);
          const double want =
              x[at] / std::pow(bias + alpha / static_cast<double>(size) * sum, beta);
          worst = worse(worst, std::abs(y[at] - want) / std::max(1.0, std::abs(want)));
        }
    CHECK(worst < 1e-6);
  }
}

TEST_CASE(
    "onnx: pixel moves, GlobalMaxPool, Max, Min, LRN and LogSoftmax that do not fit are errors") {
  CHECK(error_for(one_node("DepthToSpace", {8, 2, 2}, blocks(0))) ==
        "m.onnx: node 'node0' (DepthToSpace): blocksize 0: at least 1");
  CHECK(error_for(one_node("DepthToSpace", {8, 2, 2}, blocks(2, "RCD"))) ==
        "m.onnx: node 'node0' (DepthToSpace): mode RCD is not one of DepthToSpace's (DCR, CRD)");
  CHECK(error_for(one_node("DepthToSpace", {6, 2, 2}, blocks(2))) ==
        "m.onnx: node 'node0' (DepthToSpace): DepthToSpace of [1,6,2,2] by blocks of 2: 6 "
        "channels are not a multiple of 4");
  CHECK(error_for(one_node("SpaceToDepth", {2, 4, 5}, blocks(2))) ==
        "m.onnx: node 'node0' (SpaceToDepth): SpaceToDepth of [1,2,4,5] by blocks of 2: 4 x 5 "
        "is not whole blocks");
  CHECK(error_for(chain({2, 4, 4}, {{"Flatten", kNone}, {"SpaceToDepth", blocks(2)}})) ==
        "m.onnx: node 'node1' (SpaceToDepth): SpaceToDepth of [1,32]: (N, C, H, W) only");
  CHECK(error_for(chain({2, 1, 5}, {{"Flatten", kNone}, {"GlobalMaxPool", kNone}})) ==
        "m.onnx: node 'node1' (GlobalMaxPool): global max pooling of [1,10]: (N, C, ...) with "
        "at least one axis after the channels");
  CHECK(error_for(one_node("Max", {3, 2, 2}, [](onnx::NodeProto* n) {
          *n->add_input() = n->input(0);  // (add_input of a literal: GCC 12's -Wrestrict)
          *n->add_input() = n->input(0);
        })) == "m.onnx: node 'node0' (Max): 3 inputs: the extreme of one or two is imported");
  CHECK(error_for(
            chain({3, 2, 2}, {{"Shape", kNone},
                              {"Min", [](onnx::NodeProto* n) { *n->add_input() = n->input(0); }},
                              {"Flatten", kNone}})) ==
        "m.onnx: node 'node1' (Min): of shape values: not imported");
  CHECK(error_for(one_node("LRN", {3, 2, 2}, kNone)) ==
        "m.onnx: node 'node0' (LRN): size 0: a window of at least 1 channel");
  // Opset 11's LogSoftmax flattens the axes from `axis` on: over a map's channels, not imported.
  CHECK(error_for(chain({3, 2, 2}, {{"LogSoftmax", kNone}, {"Flatten", kNone}}, 11)) ==
        "m.onnx: node 'node0' (LogSoftmax): opset < 13 LogSoftmax over axis 1 of [1,3,2,2] "
        "flattens the axes after it; only the last axis is imported");
}

// Elu with an alpha other than 1, Celu and Selu with constants of their own (the ELU family's
// op, layers/elu.h) against ONNX's definitions: Elu x < 0 ? alpha (e^x - 1) : x; Celu max(0, x)
// + min(0, alpha (e^(x / alpha) - 1)); Selu x <= 0 ? gamma (alpha e^x - alpha) : gamma x. nn.ELU
// and nn.CELU as PyTorch exports them are elu_net's (tests/test_onnx.cpp).
TEST_CASE("onnx: Elu, Celu and Selu with constants of their own follow ONNX's definitions") {
  struct Case {
    const char* op;
    float alpha, gamma;  // gamma: Selu's alone
    std::function<double(double)> f;
  };
  const Case cases[] = {
      {"Elu", 0.25f, 0, [](double x) { return x < 0 ? 0.25 * std::expm1(x) : x; }},
      {"Elu", -0.5f, 0, [](double x) { return x < 0 ? -0.5 * std::expm1(x) : x; }},
      {"Celu", 2.5f, 0,
       [](double x) { return std::max(0.0, x) + std::min(0.0, 2.5 * std::expm1(x / 2.5)); }},
      {"Celu", 1.0f, 0, [](double x) { return std::max(0.0, x) + std::min(0.0, std::expm1(x)); }},
      {"Selu", 1.5f, 2.0f, [](double x) { return x <= 0 ? 2 * (1.5 * std::exp(x) - 1.5) : 2 * x; }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.op);
    CAPTURE(c.alpha);
    const OnnxModel m = load_model(one_node(c.op, {3, 2, 4}, [&](onnx::NodeProto* n) {
      attribute(n, "alpha")->set_type(onnx::AttributeProto::FLOAT);
      attribute(n, "alpha")->set_f(c.alpha);
      if (c.gamma != 0) {
        attribute(n, "gamma")->set_type(onnx::AttributeProto::FLOAT);
        attribute(n, "gamma")->set_f(c.gamma);
      }
    }));
    std::vector<float> x = ramp(2 * 3 * 2 * 4);
    for (float& v : x) v *= 0.4f;  // -2.8 to 6.6
    const std::vector<float> y = onnx_forward(m, x);
    REQUIRE(y.size() == x.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i)
      worst = worse(worst, std::abs(y[i] - c.f(x[i])) / std::max(1.0, std::abs(c.f(x[i]))));
    CHECK(worst < 1e-6);
  }
}

// ReduceProd is imported over shape values (torch.var's count of elements, tests/test_onnx.cpp's
// var_net), not over activations: an error naming the node.
TEST_CASE("onnx: ReduceProd of an activation is an error naming the node") {
  const std::string e = error_for(one_node("ReduceProd", {3, 4, 5}, kNone));
  CAPTURE(e);
  CHECK(e.find("node 'node0' (ReduceProd): op not imported yet") != std::string::npos);
}

// Nearest Resize's source indices (models/onnx_resize.h) by hand from ONNX's definition, for
// each coordinate transformation and nearest_mode, by sizes and by scales.
TEST_CASE("onnx: nearest Resize picks the rows ONNX's definition does") {
  using R = ResizeCoordinates;
  using M = NearestMode;
  using V = std::vector<int64_t>;
  // 4 to 6 (scale 1.5): half-pixel centres (i + 0.5) / 1.5 - 0.5, ties at 0.5 and 2.5.
  CHECK(nearest_indices(4, 6, 0, R::half_pixel, M::round_prefer_floor) == V{0, 0, 1, 2, 2, 3});
  CHECK(nearest_indices(4, 6, 1.5, R::half_pixel, M::round_prefer_ceil) == V{0, 1, 1, 2, 3, 3});
  CHECK(nearest_indices(4, 6, 0, R::pytorch_half_pixel, M::round_prefer_floor) ==
        V{0, 0, 1, 2, 2, 3});
  CHECK(nearest_indices(4, 1, 0, R::pytorch_half_pixel, M::floor) == V{0});
  // Corners aligned: i * 3 / 5.
  CHECK(nearest_indices(4, 6, 0, R::align_corners, M::round_prefer_floor) == V{0, 1, 1, 2, 2, 3});
  // Asymmetric i / 1.5, floored (PyTorch's mode="nearest") and ceiled (clamped to 3).
  CHECK(nearest_indices(4, 6, 1.5, R::asymmetric, M::floor) == V{0, 0, 1, 2, 2, 3});
  CHECK(nearest_indices(4, 6, 1.5, R::asymmetric, M::ceil) == V{0, 1, 2, 2, 3, 3});
  // Down by sizes, exactly: 8 to 3 is floor(i * 8 / 3); 6 to 4 floor(i * 1.5), whole at i = 2.
  CHECK(nearest_indices(8, 3, 0, R::asymmetric, M::floor) == V{0, 2, 5});
  CHECK(nearest_indices(6, 4, 0, R::asymmetric, M::floor) == V{0, 1, 3, 4});
  CHECK_THROWS_WITH_AS(nearest_indices(0, 4, 0, R::asymmetric, M::floor),
                       doctest::Contains("nearest resize from 0 to 4"), Error);
  // A size from a file beyond 2^20 (fuzzing found one of 2^55): an error, not an allocation.
  CHECK_THROWS_WITH_AS(nearest_indices(4, int64_t{1} << 55, 0, R::asymmetric, M::floor),
                       doctest::Contains("sizes must be 1 to 2^20"), Error);
}
