// ONNX import of If (its condition computed from shapes: the branch taken is known once shapes
// are) and of pools beyond square 2-D windows (rectangular windows, strides and padding, 1-D
// pools, 3-D pools 1 wide along an axis or along none): outputs against ONNX's definitions,
// and the errors for what is not imported. PyTorch's own outputs are lrn_torch_net's and
// pool_window_net's (tests/test_onnx.cpp).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "tests/onnx_edit.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::string& name,
                          const std::vector<std::string>& in, const std::string& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const std::string& i : in) *n->add_input() = i;
  *n->add_output() = out;
  return n;
}

// A Constant node of int64 values (a scalar where `scalar`).
void add_ints(onnx::GraphProto* g, const std::string& out, const std::vector<int64_t>& values,
              bool scalar = false) {
  onnx::NodeProto* n = add_node(g, "Constant", out, {}, out);
  auto* a = attribute(n, "value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// `cond` = (extent `axis` of x == `extent`), from Shape, Gather and Equal.
void add_extent_is(onnx::GraphProto* g, const std::string& cond, int64_t axis, int64_t extent) {
  add_node(g, "Shape", cond + "_shape", {"x"}, cond + "_shape");
  add_ints(g, cond + "_axis", {axis}, true);
  add_node(g, "Gather", cond + "_gather", {cond + "_shape", cond + "_axis"}, cond + "_extent");
  add_ints(g, cond + "_want", {extent}, true);
  add_node(g, "Equal", cond, {cond + "_extent", cond + "_want"}, cond);
}

// An If node over `cond` whose branches fill in their graphs; each branch's output is named
// in its graph's output.
onnx::NodeProto* add_if(onnx::GraphProto* g, const std::string& name, const std::string& cond,
                        const std::string& out,
                        const std::function<void(onnx::GraphProto*)>& then_branch,
                        const std::function<void(onnx::GraphProto*)>& else_branch) {
  onnx::NodeProto* n = add_node(g, "If", name, {cond}, out);
  for (auto [branch, fill] :
       {std::pair{"then_branch", &then_branch}, {"else_branch", &else_branch}}) {
    auto* a = attribute(n, branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    a->mutable_g()->set_name(branch);
    (*fill)(a->mutable_g());
  }
  return n;
}

// A branch of one node of `op` over `in`, its output `out`.
std::function<void(onnx::GraphProto*)> one_op(const std::string& op, const std::string& in,
                                              const std::string& out) {
  return [op, in, out](onnx::GraphProto* b) {
    add_node(b, op, out, {in}, out);
    b->add_output()->set_name(out);
  };
}

// x (N, dims...) -> the If `choose` below -> Flatten -> y.
onnx::ModelProto if_model(const std::vector<int64_t>& dims,
                          const std::function<void(onnx::GraphProto*)>& body) {
  onnx::ModelProto m = empty_model(13, dims);
  onnx::GraphProto* g = m.mutable_graph();
  body(g);
  add_node(g, "Flatten", "flat", {"chosen"}, "y");
  g->add_output()->set_name("y");
  return m;
}

// ONNX's pooling by its definition: x (N, C, spatial...) windows of `k` at `stride`, `pad` on
// both sides of each axis (no ceil mode); the maximum, or the average over the window (padding
// counted where `count_pad`, else the elements inside).
std::vector<float> reference_pool(const std::vector<float>& x, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                                  const std::vector<int64_t>& pad, bool max, bool count_pad) {
  const size_t s = k.size();
  std::vector<int64_t> out(s);
  int64_t planes = dims[0] * dims[1], in_plane = 1, out_plane = 1;
  for (size_t a = 0; a < s; ++a) {
    out[a] = (dims[a + 2] + 2 * pad[a] - k[a]) / stride[a] + 1;
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
          const int64_t i = at[u] * stride[u] - pad[u] + r % k[u];
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

// prefix followed by i ("o3"): appended, where "o" + std::to_string(i) inlined into the nested
// lambdas below draws GCC 12's false -Wrestrict.
std::string numbered(std::string prefix, int i) {
  prefix += std::to_string(i);
  return prefix;
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
                 const std::vector<int64_t>& pads, bool count_pad = false) {
  return [=](onnx::NodeProto* n) {
    for (auto [name, values] :
         {std::pair{"kernel_shape", &k}, {"strides", &stride}, {"pads", &pads}}) {
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

TEST_CASE("onnx: If takes the branch its shape condition picks, nested too") {
  // Outer: H == 5; inner (in the then branch): W == 4. Relu, Abs or Neg of x.
  const auto model = [](int64_t H, int64_t W) {
    return if_model({2, H, W}, [](onnx::GraphProto* g) {
      add_extent_is(g, "h5", 2, 5);
      add_extent_is(g, "w4", 3, 4);
      add_if(
          g, "outer", "h5", "chosen",
          [](onnx::GraphProto* b) {
            add_if(b, "inner", "w4", "inner_out", one_op("Relu", "x", "relu"),
                   one_op("Abs", "x", "abs"));
            b->add_output()->set_name("inner_out");
          },
          one_op("Neg", "x", "neg"));
    });
  };
  for (auto [H, W, op] : {std::tuple{5, 4, "Relu"}, {5, 7, "Abs"}, {6, 4, "Neg"}, {6, 7, "Neg"}}) {
    CAPTURE(H);
    CAPTURE(W);
    const OnnxModel m = load_model(model(H, W));
    int guarded = 0, choices = 0;
    for (const OnnxNode& n : m.graph->nodes) {
      guarded += !n.guards.empty();
      choices += n.kind == OnnxKind::choose;
    }
    CHECK(guarded == 4);  // Relu and Abs twice guarded, the inner If and Neg once
    CHECK(choices == 2);
    const std::vector<float> x = ramp(2 * 2 * H * W), y = onnx_forward(m, x);
    REQUIRE(y.size() == x.size());
    int wrong = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = std::string(op) == "Relu"  ? std::max(x[i], 0.0f)
                         : std::string(op) == "Abs" ? std::abs(x[i])
                                                    : -x[i];
      wrong += y[i] != want;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("onnx: If between shape values picks the one the condition names") {
  // Slice x's channels [0, 2) where H == 3, else [0, 1): the classes tell which.
  for (auto [H, channels] : {std::pair{3, 2}, {4, 1}}) {
    CAPTURE(H);
    const OnnxModel m = load_model(if_model({3, H, 2}, [](onnx::GraphProto* g) {
      add_extent_is(g, "h3", 2, 3);
      add_if(
          g, "ends", "h3", "end",
          [](onnx::GraphProto* b) {
            add_ints(b, "two", {2});
            b->add_output()->set_name("two");
          },
          [](onnx::GraphProto* b) {
            add_ints(b, "one", {1});
            b->add_output()->set_name("one");
          });
      add_ints(g, "start", {0});
      add_ints(g, "axis", {1});
      add_node(g, "Slice", "slice", {"x", "start", "end", "axis"}, "chosen");
    }));
    CHECK(m.classes == channels * H * 2);
  }
}

TEST_CASE("onnx: Ifs that are not imported are errors naming the node") {
  const auto with_if = [](const std::function<void(onnx::GraphProto*)>& body) {
    return if_model({2, 3, 3}, body);
  };
  const auto relu = one_op("Relu", "x", "r"), neg = one_op("Neg", "x", "n");
  // A condition computed from activations (data-dependent control flow).
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          add_ints(g, "axes", {1, 2, 3});
          add_node(g, "ReduceSum", "sum", {"x", "axes"}, "s");
          add_node(g, "Sigmoid", "gate", {"s"}, "c");
          add_if(g, "if", "c", "chosen", relu, neg);
        })) ==
        "m.onnx: node 'if' (If): the condition 'c' is computed from activations; frugal "
        "imports Ifs whose condition is computed from shapes and constants");
  const auto cond = [](onnx::GraphProto* g) { add_extent_is(g, "c", 2, 3); };
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          cond(g);
          add_if(g, "if", "c", "chosen", relu, neg)->mutable_attribute()->RemoveLast();
        })) == "m.onnx: node 'if' (If): has no else_branch");
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          cond(g);
          add_if(
              g, "if", "c", "chosen",
              [](onnx::GraphProto* b) {
                add_node(b, "Relu", "r", {"x"}, "r");
                b->add_output()->set_name("r");
                b->add_output()->set_name("r");
              },
              neg);
        })) == "m.onnx: node 'if' (If): then_branch has 2 outputs; frugal imports Ifs with one");
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          cond(g);
          add_if(g, "if", "c", "chosen", relu, [](onnx::GraphProto* b) {
            one_op("Neg", "x", "n")(b);
            b->add_initializer()->set_name("w");
          });
        })) ==
        "m.onnx: node 'if' (If): else_branch has inputs or initializers of its own (not "
        "imported)");
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          cond(g);
          add_if(g, "if", "c", "chosen", relu, [](onnx::GraphProto* b) {
            add_ints(b, "k", {1});
            b->add_output()->set_name("k");
          });
        })) == "m.onnx: node 'if' (If): one branch gives a shape value, the other an activation");
  // Nested past 8 levels (the fuzzer's way to a deep recursion).
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          cond(g);
          std::function<void(onnx::GraphProto*, int)> nest = [&](onnx::GraphProto* b, int depth) {
            const std::string out = depth == 0 ? std::string("chosen") : numbered("o", depth);
            add_if(
                b, numbered("if", depth), "c", out,
                [&](onnx::GraphProto* t) {
                  if (depth < 9) {
                    nest(t, depth + 1);
                    t->add_output()->set_name(numbered("o", depth + 1));
                  } else {
                    one_op("Relu", "x", "deep")(t);
                  }
                },
                one_op("Neg", "x", numbered("n", depth)));
          };
          nest(g, 0);
        })) == "m.onnx: node 'if8' (If): Ifs nested more than 8 deep");
  // A condition of more than one value: known only once shapes are.
  CHECK(error_for(with_if([&](onnx::GraphProto* g) {
          add_node(g, "Shape", "shape", {"x"}, "c");
          add_if(g, "if", "c", "chosen", relu, neg);
        })) ==
        "m.onnx: node 'r' (Relu): the If condition 'c' is not one value computed from "
        "shapes");
}

TEST_CASE("onnx: pools of rectangular, 1-D and 3-D windows give ONNX's definition") {
  struct Case {
    const char* op;
    std::vector<int64_t> dims, k, stride, pads;  // dims: (C, spatial...); pads: one per axis
    bool count_pad = false;
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
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.op));
    CAPTURE(c.dims.size());
    std::vector<int64_t> pads = c.pads;
    pads.insert(pads.end(), c.pads.begin(), c.pads.end());
    const OnnxModel m =
        load_model(pool_model(c.op, c.dims, pool_attrs(c.k, c.stride, pads, c.count_pad)));
    int64_t numel = 2;
    for (int64_t d : c.dims) numel *= d;
    std::vector<int64_t> dims = {2};
    dims.insert(dims.end(), c.dims.begin(), c.dims.end());
    const std::vector<float> x = scrambled(numel), y = onnx_forward(m, x);
    const std::vector<float> want =
        reference_pool(x, dims, c.k, c.stride, c.pads, std::string(c.op) == "MaxPool", c.count_pad);
    REQUIRE(y.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, double(std::abs(y[i] - want[i])));
    CHECK(worst < 1e-6);
  }
}

TEST_CASE("onnx: pools that are not imported are errors naming the node") {
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, pool_attrs({3, 3}, {1, 1}, {1, 0, 0, 1}))) ==
        "m.onnx: node 'node0' (MaxPool): asymmetric padding is not imported (a pad at an axis's "
        "start differs from its end)");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, pool_attrs({3, 3}, {1, 1}, {2, 2, 2, 2}))) ==
        "m.onnx: node 'node0' (MaxPool): padding above half the kernel");
  CHECK(error_for(one_node("AveragePool", {3, 6, 6}, pool_attrs({}, {1, 1}, {}))) ==
        "m.onnx: node 'node0' (AveragePool): kernel_shape must have 1 to 3 values");
  CHECK(error_for(pool_model("AveragePool", {3, 4, 4, 4}, pool_attrs({2, 2, 2}, {}, {}))).empty());
  CHECK(error_for(pool_model("AveragePool", {3, 4, 4, 4},
                             pool_attrs({3, 2, 2}, {}, {1, 0, 0, 0, 0, 0}))) ==
        "m.onnx: node 'node0' (AveragePool): a 3-D window's depth padding must be alike at both "
        "ends, at most half its kernel");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, [](onnx::NodeProto* n) {
          pool_attrs({2, 2}, {}, {})(n);
          auto* d = attribute(n, "dilations");
          d->set_type(onnx::AttributeProto::INTS);
          d->add_ints(2);
          d->add_ints(2);
        })) == "m.onnx: node 'node0' (MaxPool): dilations other than 1 are not imported");
  CHECK(error_for(one_node("MaxPool", {3, 6, 6}, [](onnx::NodeProto* n) {
          pool_attrs({2, 2}, {}, {})(n);
          *n->add_output() = std::string("indices");
        })) == "m.onnx: node 'node0' (MaxPool): the Indices output is not imported");
  // A 2-D window over (N, C, L): known wrong once shapes are.
  CHECK(error_for(pool_model("MaxPool", {3, 6}, pool_attrs({2, 2}, {}, {}))) ==
        "m.onnx: node 'node0' (MaxPool): a 2-D window over [1,3,6]: expected (N, C, H, W)");
}
