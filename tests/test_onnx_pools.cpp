// ONNX import of pools beyond square 2-D windows: rectangular windows, strides and padding,
// pads that differ at an axis's two ends (TensorFlow's SAME), dilated max pools, 1-D pools and
// 3-D pools 1 wide along an axis or along none: outputs against ONNX's definition, and the
// errors for what is not imported. PyTorch's own outputs are pool_window_net's and
// pool_pad_net's (tests/test_onnx.cpp).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "check/gradcheck.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// ONNX's pooling by its definition: x (N, C, spatial...) windows of `k` taps `dil` apart at
// `stride`, pads[a] before axis a and pads[a + rank] after it (no ceil mode); the maximum, or
// the average over the window (padding counted where `count_pad`, else the elements inside).
std::vector<float> reference_pool(const std::vector<float>& x, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                                  const std::vector<int64_t>& pads, const std::vector<int64_t>& dil,
                                  bool max, bool count_pad) {
  const size_t s = k.size();
  std::vector<int64_t> out(s);
  int64_t planes = dims[0] * dims[1], in_plane = 1, out_plane = 1;
  for (size_t a = 0; a < s; ++a) {
    out[a] = (dims[a + 2] + pads[a] + pads[a + s] - dil[a] * (k[a] - 1) - 1) / stride[a] + 1;
    in_plane *= dims[a + 2], out_plane *= out[a];
  }
  std::vector<float> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < out_plane; ++o) {
      std::vector<int64_t> at(s);
      for (int64_t r = o, a = static_cast<int64_t>(s) - 1; a >= 0; --a)
        at[static_cast<size_t>(a)] = r % out[static_cast<size_t>(a)],
        r /= out[static_cast<size_t>(a)];
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t inside = 0, window = 1;
      for (size_t a = 0; a < s; ++a) window *= k[a];
      for (int64_t e = 0; e < window; ++e) {
        int64_t flat = 0, step = 1;  // the element's index in the plane, built from the last axis
        bool in = true;
        for (int64_t r = e, a = static_cast<int64_t>(s) - 1; a >= 0; --a) {
          const auto u = static_cast<size_t>(a);
          const int64_t i = at[u] * stride[u] - pads[u] + r % k[u] * dil[u];
          r /= k[u];
          in = in && i >= 0 && i < dims[u + 2];
          flat += i * step, step *= dims[u + 2];
        }
        if (!in) continue;
        const double v = x[static_cast<size_t>(p * in_plane + flat)];
        best = std::max(best, v), sum += v, ++inside;
      }
      y.push_back(
          static_cast<float>(max ? best : sum / static_cast<double>(count_pad ? window : inside)));
    }
  return y;
}

// Distinct values in no order.
std::vector<float> scrambled(int64_t count) {
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1009) * 0.01f - 5;
  return x;
}

// x (N, C, A, B) reshaped to (N, dims...), then `op` with `attrs`, then Flatten: a 1-D or 3-D
// pool's input (frugal's inputs are images).
onnx::ModelProto pool_model(const std::string& op, const std::vector<int64_t>& dims,
                            const Attrs& attrs) {
  if (dims.size() == 3) return one_node(op, dims, attrs);
  int64_t rest = 1;
  for (size_t a = 2; a < dims.size(); ++a) rest *= dims[a];
  onnx::ModelProto m = empty_model(13, {dims[0], dims[1], rest});
  onnx::GraphProto* g = m.mutable_graph();
  std::vector<int64_t> target = {1};
  target.insert(target.end(), dims.begin(), dims.end());
  add_ints(g, "target", target);
  add_node(g, "Reshape", "view", {"x", "target"}, "v");
  attrs(add_node(g, op, "node0", {"v"}, "p"));
  add_node(g, "Flatten", "flat", {"p"}, "y");
  g->add_output()->set_name("y");
  return m;
}

Attrs pool_attrs(const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                 const std::vector<int64_t>& pads, bool count_pad = false,
                 const std::vector<int64_t>& dilations = {}) {
  return [=](onnx::NodeProto* n) {
    for (auto [name, values] : {std::pair{"kernel_shape", &k},
                                {"strides", &stride},
                                {"pads", &pads},
                                {"dilations", &dilations}}) {
      if (values->empty()) continue;
      auto* a = attribute(n, name);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : *values) a->add_ints(v);
    }
    if (count_pad) {
      auto* a = attribute(n, "count_include_pad");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    }
  };
}

}  // namespace

TEST_CASE("onnx: pools of rectangular, uneven, dilated, 1-D and 3-D windows give ONNX's") {
  struct Case {
    const char* op;
    std::vector<int64_t> dims, k, stride;  // dims: (C, spatial...)
    std::vector<int64_t> pads;  // one per axis (alike at both ends), or ONNX's begins then ends
    bool count_pad = false;
    std::vector<int64_t> dil = {};   // none: 1 along every axis
    const char* auto_pad = nullptr;  // SAME_UPPER or SAME_LOWER: pads empty, computed
  };
  const std::vector<Case> cases = {
      {"MaxPool", {3, 8, 7}, {3, 2}, {2, 1}, {1, 0}},
      {"AveragePool", {3, 8, 7}, {2, 3}, {1, 2}, {0, 1}},
      {"AveragePool", {3, 8, 7}, {3, 3}, {2, 2}, {1, 1}, true},
      {"MaxPool", {4, 11}, {3}, {2}, {1}},
      {"AveragePool", {4, 11}, {4}, {3}, {2}, true},
      {"AveragePool", {4, 11}, {2}, {2}, {1}},
      {"AveragePool", {2, 3, 6, 5}, {1, 2, 2}, {1, 2, 1}, {0, 1, 0}},  // axis 2 1 wide
      {"MaxPool", {2, 3, 6, 5}, {2, 3, 1}, {1, 2, 1}, {1, 1, 0}},      // axis 4
      {"AveragePool", {2, 5, 3, 4}, {3, 1, 1}, {1, 1, 1}, {0, 0, 0}},  // axes 3 and 4
      {"MaxPool", {2, 4, 3, 6}, {2, 1, 3}, {2, 1, 1}, {1, 0, 1}},      // axis 3
      {"MaxPool", {2, 4, 6, 6}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}},      // 1 wide along none
      {"MaxPool", {2, 5, 4, 7}, {3, 3, 2}, {2, 1, 2}, {1, 1, 0}},
      {"AveragePool", {2, 5, 4, 7}, {3, 2, 3}, {2, 2, 1}, {1, 0, 1}},
      {"AveragePool", {2, 5, 4, 7}, {3, 2, 3}, {2, 2, 1}, {1, 0, 1}, true},
      // Uneven pads: TensorFlow's SAME (the odd one at the end), and the other way round.
      {"MaxPool", {3, 8, 9}, {3, 3}, {2, 2}, {0, 1, 1, 1}},
      {"AveragePool", {3, 8, 9}, {3, 4}, {1, 2}, {0, 1, 1, 2}},
      {"AveragePool", {3, 8, 9}, {2, 2}, {2, 2}, {1, 0, 0, 1}, true},
      {"MaxPool", {4, 11}, {4}, {3}, {1, 2}},
      {"AveragePool", {2, 5, 4, 7}, {3, 2, 3}, {2, 2, 1}, {1, 0, 1, 0, 1, 0}},
      {"MaxPool", {2, 5, 4, 7}, {2, 3, 2}, {1, 1, 2}, {0, 1, 0, 1, 0, 1}},
      // Dilated max pools (MaxPool2d(dilation=...)): 2-D, 1-D and 3-D, padded.
      {"MaxPool", {3, 9, 11}, {3, 3}, {1, 2}, {1, 1}, false, {2, 3}},
      {"MaxPool", {4, 13}, {3}, {2}, {1, 0}, false, {3}},
      {"MaxPool", {2, 7, 5, 6}, {3, 2, 2}, {1, 2, 1}, {1, 0, 1, 1, 1, 0}, false, {2, 1, 2}},
      // auto_pad SAME (tf2onnx's): ceil(in / stride) outputs, the odd pad at the end (UPPER)
      // or the start (LOWER); 2-D, 1-D, 3-D along no unit axis and along one.
      {"MaxPool", {3, 9, 10}, {2, 3}, {2, 2}, {}, false, {}, "SAME_UPPER"},
      {"AveragePool", {3, 9, 10}, {2, 4}, {1, 3}, {}, false, {}, "SAME_LOWER"},
      {"AveragePool", {3, 9, 10}, {3, 2}, {2, 1}, {}, true, {}, "SAME_UPPER"},
      {"MaxPool", {4, 13}, {4}, {3}, {}, false, {}, "SAME_LOWER"},
      {"MaxPool", {2, 5, 4, 7}, {2, 3, 2}, {2, 1, 2}, {}, false, {}, "SAME_UPPER"},
      {"AveragePool", {2, 5, 4, 7}, {1, 2, 3}, {1, 2, 2}, {}, false, {}, "SAME_LOWER"},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.op));
    CAPTURE(c.dims.size());
    CAPTURE(c.pads.size());
    std::vector<int64_t> pads = c.pads, dil = c.dil;
    if (pads.size() == c.k.size()) pads.insert(pads.end(), c.pads.begin(), c.pads.end());
    if (dil.empty()) dil.assign(c.k.size(), 1);
    Attrs attrs = pool_attrs(c.k, c.stride, pads, c.count_pad, c.dil);
    if (c.auto_pad) {
      CAPTURE(std::string(c.auto_pad));
      const size_t s = c.k.size();
      pads.assign(2 * s, 0);
      for (size_t a = 0; a < s; ++a) {
        const int64_t in = c.dims[a + 1], out = (in + c.stride[a] - 1) / c.stride[a];
        const int64_t total = std::max<int64_t>(0, (out - 1) * c.stride[a] + c.k[a] - in);
        const bool upper = std::string(c.auto_pad) == "SAME_UPPER";
        pads[a] = upper ? total / 2 : total - total / 2, pads[a + s] = total - pads[a];
      }
      attrs = [&c, attrs](onnx::NodeProto* n) {
        attrs(n);
        auto* a = attribute(n, "auto_pad");
        a->set_type(onnx::AttributeProto::STRING);
        a->set_s(c.auto_pad);
      };
    }
    const OnnxModel m = load_model(pool_model(c.op, c.dims, attrs));
    int64_t numel = 2;
    for (int64_t d : c.dims) numel *= d;
    std::vector<int64_t> dims = {2};
    dims.insert(dims.end(), c.dims.begin(), c.dims.end());
    const std::vector<float> x = scrambled(numel), y = onnx_forward(m, x);
    const std::vector<float> want = reference_pool(x, dims, c.k, c.stride, pads, dil,
                                                   std::string(c.op) == "MaxPool", c.count_pad);
    REQUIRE(y.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = worse(worst, double(std::abs(y[i] - want[i])));
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("onnx: pools that are not imported are errors naming the node") {
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, pool_attrs({3, 3}, {1, 1}, {2, 1, 1, 1}))) ==
        "m.onnx: node 'node0' (MaxPool): a pad above half the kernel");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, pool_attrs({3, 3}, {1, 1}, {2, 2, 2, 2}))) ==
        "m.onnx: node 'node0' (MaxPool): a pad above half the kernel");
  CHECK(error_for(one_node("AveragePool", {3, 6, 6}, pool_attrs({}, {1, 1}, {}))) ==
        "m.onnx: node 'node0' (AveragePool): kernel_shape must have 1 to 3 values");
  CHECK(error_for(pool_model("AveragePool", {3, 4, 4, 4}, pool_attrs({2, 2, 2}, {}, {}))).empty());
  CHECK(error_for(pool_model("AveragePool", {3, 4, 4, 4},
                             pool_attrs({3, 2, 2}, {}, {2, 0, 0, 0, 0, 0}))) ==
        "m.onnx: node 'node0' (AveragePool): a pad above half the kernel");
  CHECK(error_for(one_node("AveragePool", {3, 6, 6}, pool_attrs({2, 2}, {}, {}, false, {2, 2}))) ==
        "m.onnx: node 'node0' (AveragePool): an AveragePool with dilations is not imported "
        "(MaxPool's are)");
  // A dilated window wider than the padded input: known once shapes are.
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, pool_attrs({3, 3}, {}, {}, false, {3, 3}))) ==
        "m.onnx: node 'node0' (MaxPool): max_pool2d: kernel 3 dilated 3 is larger than the "
        "padded input (x [1,3,6,6], pad 0)");
  // auto_pad: with pads, or not one of ONNX's; SAME with a dilated window past half the kernel.
  auto auto_pad = [](const std::string& how, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& dilations = {}) {
    return [=](onnx::NodeProto* n) {
      pool_attrs({3, 3}, {1, 1}, pads, false, dilations)(n);
      auto* a = attribute(n, "auto_pad");
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(how);
    };
  };
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, auto_pad("SAME_UPPER", {1, 1, 1, 1}))) ==
        "m.onnx: node 'node0' (MaxPool): auto_pad SAME_UPPER with pads: ONNX allows one or the "
        "other");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, auto_pad("SAME", {}))) ==
        "m.onnx: node 'node0' (MaxPool): auto_pad SAME is not one of NOTSET, SAME_UPPER, "
        "SAME_LOWER, VALID");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, auto_pad("SAME_LOWER", {}, {2, 2}))) ==
        "m.onnx: node 'node0' (MaxPool): max_pool2d: pad 2 must be at most half of kernel 3 (x "
        "[1,3,6,6])");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, auto_pad("SAME_LOWER", {}))).empty());
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, [](onnx::NodeProto* n) {
          pool_attrs({2, 2}, {}, {})(n);
          *n->add_output() = std::string("indices");
        })) == "m.onnx: node 'node0' (MaxPool): the Indices output is not imported");
  // A 2-D window over (N, C, L): known wrong once shapes are.
  CHECK(error_for(pool_model("MaxPool", {3, 6}, pool_attrs({2, 2}, {}, {}))) ==
        "m.onnx: node 'node0' (MaxPool): a 2-D window over [1,3,6]: expected (N, C, H, W)");
}

// Pools padded unevenly (pool_pad_net: MaxPool and AveragePool, padding counted and not, a
// 1-D MaxPool), a dilated MaxPool, and auto_pad's and output_shape's windows (same_pad_net) in
// float64 against finite differences.
TEST_CASE("onnx: gradcheck of unevenly padded and dilated pools, auto_pad and output_shape") {
  const OnnxModel m = load_onnx((onnx_data() / "pool_pad_net.onnx").string());
  int pools = 0;
  for (const OnnxNode& n : m.graph->nodes)
    pools += n.kind == OnnxKind::max_pool || n.kind == OnnxKind::avg_pool;
  CHECK(pools == 5);
  check_gradients(randomized(m, 165), {random_tensor({2, 3, 9, 10}, 48)}, {.tolerance = 1e-6});
  // same_pad_net: the pads auto_pad and output_shape ask for, computed while recording.
  const OnnxModel same = load_onnx((onnx_data() / "same_pad_net.onnx").string());
  check_gradients(randomized(same, 166), {random_tensor({2, 3, 9, 10}, 49)}, {.tolerance = 1e-6});
}

// MaxPool and AveragePool beyond square 2-D windows (pool_window_net: rectangular windows,
// strides and padding, 1-D pools over (N, C, L), 3-D pools 1 wide along each axis in turn) in
// float64 against finite differences.
TEST_CASE("onnx: gradcheck of rectangular, 1-D and 3-D pools") {
  const OnnxModel m = load_onnx((onnx_data() / "pool_window_net.onnx").string());
  int by_rank[4] = {};
  for (const OnnxNode& n : m.graph->nodes)
    if (n.kind == OnnxKind::max_pool || n.kind == OnnxKind::avg_pool) ++by_rank[n.ints.at(0)];
  CHECK(by_rank[1] == 2);
  CHECK(by_rank[2] == 2);
  CHECK(by_rank[3] == 3);
  check_gradients(randomized(m, 160), {random_tensor({2, 3, 8, 10}, 47)}, {.tolerance = 1e-6});
}
