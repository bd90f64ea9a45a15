// ONNX import of If (its condition computed from shapes: the branch taken is known once shapes
// are): the branch taken, nested Ifs, Ifs between shape values, and the errors for what is not
// imported. PyTorch's own output is lrn_torch_net's (tests/test_onnx.cpp); the pools that file
// tested are in tests/test_onnx_pools.cpp.
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

// prefix followed by i ("o3"): appended, where "o" + std::to_string(i) inlined into the nested
// lambdas below draws GCC 12's false -Wrestrict.
std::string numbered(std::string prefix, int i) {
  prefix += std::to_string(i);
  return prefix;
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
