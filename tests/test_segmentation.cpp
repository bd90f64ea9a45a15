// The segmentation pieces: the synthetic shapes task (deterministic, every class drawn, labels
// where the shapes are), mean IoU by hand, and the integer shape arithmetic that ONNX exports
// of U-Nets and ShuffleNets compute their pads and reshapes with (and torch.var its count).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "data/shapes.h"
#include "models/onnx_ints.h"

using namespace frugal;

namespace {
constexpr int64_t kEqual = static_cast<int64_t>(BinaryKind::equal);
}  // namespace

TEST_CASE("shapes: the task is a function of its seed, with every class drawn") {
  const SegmentationSet a = shapes_dataset(16, 3, 32, 5), b = shapes_dataset(16, 3, 32, 5);
  const SegmentationSet c = shapes_dataset(16, 3, 32, 6);
  CHECK(a.images.shape() == Shape({16, 3, 32, 32}));
  CHECK(a.labels.shape() == Shape({16, 32, 32}));
  CHECK(std::memcmp(a.images.raw(), b.images.raw(), a.images.bytes()) == 0);
  CHECK(std::memcmp(a.labels.raw(), b.labels.raw(), a.labels.bytes()) == 0);
  CHECK(std::memcmp(a.labels.raw(), c.labels.raw(), a.labels.bytes()) != 0);
  int64_t count[kShapeClasses] = {};
  for (int64_t i = 0; i < a.labels.numel(); ++i) {
    const int32_t l = a.labels.data<int32_t>()[i];
    REQUIRE(l >= 0);
    REQUIRE(l < kShapeClasses);
    ++count[l];
  }
  for (int64_t k = 0; k < kShapeClasses; ++k) CHECK(count[k] > 0);
  CHECK(count[0] > a.labels.numel() / 3);  // mostly background
  CHECK_THROWS_WITH_AS(shapes_dataset(4, 3, 4, 1),
                       doctest::Contains("shapes: 4 images of 3 x 4 x 4 (need N >= 1, 1..64 "
                                         "channels, sides 8..4096)"),
                       Error);
}

TEST_CASE("shapes: mean IoU by hand") {
  // One 1x4 image, 2 classes: labels 0 0 1 1, predictions 0 1 1 1.
  Tensor logits = Tensor::empty({1, 2, 1, 4}, DType::f32);
  const float l[] = {1, 0, 0, 0, /* class 1 */ 0, 1, 1, 1};
  std::memcpy(logits.raw(), l, sizeof l);
  Tensor labels = Tensor::empty({1, 1, 4}, DType::i32);
  const int32_t y[] = {0, 0, 1, 1};
  std::memcpy(labels.raw(), y, sizeof y);
  IouMeter m(2);
  m.add(logits, labels, 1);
  const std::vector<double> iou = m.per_class();
  CHECK(iou[0] == doctest::Approx(0.5));        // 1 of {0, 1}
  CHECK(iou[1] == doctest::Approx(2.0 / 3.0));  // {2, 3} of {1, 2, 3}
  CHECK(m.mean() == doctest::Approx((0.5 + 2.0 / 3.0) / 2));
  CHECK(m.pixel_accuracy() == doctest::Approx(0.75));
  IouMeter three(3);  // a class neither labelled nor predicted does not count
  three.add(Tensor::empty({1, 3, 1, 4}, DType::f32), labels, 0);
  CHECK(std::isnan(three.per_class()[2]));
  CHECK_THROWS_WITH_AS(m.add(logits, Tensor::empty({1, 4}, DType::i32), 1),
                       doctest::Contains("iou: logits [1,2,1,4] and labels [1,4]"), Error);
}

TEST_CASE("onnx integer arithmetic: what F.pad, a dynamic-batch view and expand export") {
  std::map<std::string, IntTensor> env;
  env["s"] = {{4}, {2, 8, 16, 16}};
  env["two"] = {{}, {2}};
  env["i"] = {{}, {1}};
  auto run = [&](IntNode n, const std::vector<int64_t>* shape = nullptr) {
    return eval_int_node(n, env, shape);
  };
  const std::vector<int64_t> act{2, 8, 5, 7};
  CHECK(run({.op = IntOp::shape_of, .attrs = {2, INT64_MAX}}, &act).values ==
        std::vector<int64_t>{5, 7});
  CHECK(run({.op = IntOp::shape_of, .attrs = {-1, INT64_MAX}}, &act).values ==
        std::vector<int64_t>{7});
  const IntTensor g = run({.op = IntOp::gather, .ints = {"s", "i"}, .attrs = {0}});
  CHECK(g.dims.empty());
  CHECK(g.values == std::vector<int64_t>{8});
  env["g"] = g;
  const IntTensor u = run({.op = IntOp::unsqueeze, .ints = {"g"}, .attrs = {0}});
  CHECK(u.dims == std::vector<int64_t>{1});
  CHECK(run({.op = IntOp::binary, .binary = BinaryKind::div, .ints = {"g", "two"}}).values ==
        std::vector<int64_t>{4});
  // F.pad's pads: (l, r, t, b) and zeros for N and C, reshaped (-1, 2), rows reversed,
  // transposed and flattened: ONNX's (N_b, C_b, H_b, W_b, N_e, C_e, H_e, W_e).
  env["torch_pads"] = {{4}, {1, 2, 3, 4}};
  env["four"] = {{1}, {4}};
  env["zeros"] = run({.op = IntOp::constant_of_shape, .ints = {"four"}, .attrs = {0}});
  env["all"] = run({.op = IntOp::concat, .ints = {"torch_pads", "zeros"}, .attrs = {0}});
  env["pairs_shape"] = {{2}, {-1, 2}};
  env["pairs"] = run({.op = IntOp::reshape, .ints = {"all", "pairs_shape"}, .attrs = {0}});
  CHECK(env["pairs"].dims == std::vector<int64_t>{4, 2});
  env["m1"] = {{1}, {-1}};
  env["far"] = {{1}, {-INT64_MAX}};
  env["zero"] = {{1}, {0}};
  env["rev"] = run({.op = IntOp::slice, .ints = {"pairs", "m1", "far", "zero", "m1"}});
  CHECK(env["rev"].values == std::vector<int64_t>{0, 0, 0, 0, 3, 4, 1, 2});
  env["t"] = run({.op = IntOp::transpose, .ints = {"rev"}, .attrs = {1, 0}});
  env["flat_shape"] = {{1}, {-1}};
  CHECK(run({.op = IntOp::reshape, .ints = {"t", "flat_shape"}, .attrs = {0}}).values ==
        std::vector<int64_t>{0, 0, 3, 1, 0, 0, 4, 2});
  // expand(n, 3, c) with -1 for kept sizes: Where(Equal(shape, -1), ones, shape).
  env["want"] = {{3}, {-1, 3, -1}};
  env["ones"] = {{3}, {1, 1, 1}};
  env["eq"] = run({.op = IntOp::compare, .ints = {"want", "m1"}, .attrs = {kEqual}});
  CHECK(env["eq"].values == std::vector<int64_t>{1, 0, 1});
  CHECK(run({.op = IntOp::where, .ints = {"eq", "ones", "want"}}).values ==
        std::vector<int64_t>{1, 3, 1});
  CHECK(run({.op = IntOp::where, .ints = {"eq", "zero", "want"}}).values ==
        std::vector<int64_t>{0, 3, 0});  // a single value stands for every element
  CHECK_THROWS_WITH_AS(run({.op = IntOp::where, .ints = {"eq", "pairs_shape", "want"}}),
                       doctest::Contains("shapes [3] and [2] do not broadcast"), Error);
  env["huge"] = {{}, {INT64_MAX}};
  CHECK_THROWS_WITH_AS(
      run({.op = IntOp::binary, .binary = BinaryKind::mul, .ints = {"huge", "two"}}),
      doctest::Contains("overflows"), Error);
  env["big"] = {{2}, {1 << 20, 1 << 20}};
  CHECK_THROWS_WITH_AS(run({.op = IntOp::constant_of_shape, .ints = {"big"}, .attrs = {0}}),
                       doctest::Contains("is too large"), Error);
}

// What Swin's shifted-window attention exports: window counts by Mod, coordinates by Range,
// the mask as a float tensor of zeros filled by ScatterND, compared with Equal, Not, Where,
// and arithmetic broadcast both ways as numpy.
TEST_CASE("onnx constant arithmetic: Mod, Range, ScatterND, Expand and float tensors") {
  std::map<std::string, IntTensor> env;
  auto ints = [](std::vector<int64_t> dims, std::vector<int64_t> values) {
    return IntTensor{.dims = std::move(dims), .values = std::move(values)};
  };
  auto run = [&](IntNode n) { return eval_int_node(n, env, nullptr); };
  env["a"] = ints({4}, {7, -7, 7, -7});
  env["b"] = ints({4}, {3, 3, -3, -3});
  CHECK(run({.op = IntOp::mod, .ints = {"a", "b"}, .attrs = {0}}).values ==
        std::vector<int64_t>{1, 2, -2, -1});  // the divisor's sign, as Python
  CHECK(run({.op = IntOp::mod, .ints = {"a", "b"}, .attrs = {1}}).values ==
        std::vector<int64_t>{1, -1, 1, -1});  // fmod: the dividend's
  env["zero"] = ints({}, {0});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::mod, .ints = {"a", "zero"}, .attrs = {0}}),
                       doctest::Contains("modulo 7 by 0"), Error);
  env["start"] = ints({}, {2});
  env["limit"] = ints({}, {-5});
  env["delta"] = ints({}, {-3});
  const IntTensor r = run({.op = IntOp::range, .ints = {"start", "limit", "delta"}});
  CHECK(r.dims == std::vector<int64_t>{3});
  CHECK(r.values == std::vector<int64_t>{2, -1, -4});
  CHECK(run({.op = IntOp::range, .ints = {"limit", "start", "delta"}}).dims ==
        std::vector<int64_t>{0});  // nothing between
  CHECK_THROWS_WITH_AS(run({.op = IntOp::range, .ints = {"start", "limit", "zero"}}),
                       doctest::Contains("delta 0"), Error);
  CHECK(run({.op = IntOp::logical_not, .ints = {"zero"}}).values == std::vector<int64_t>{1});
  // (49, 1) + (49,) is (49, 49): numpy's broadcast, both ways.
  env["col"] = ints({3, 1}, {0, 10, 20});
  env["row"] = ints({3}, {1, 2, 3});
  const IntTensor sum =
      run({.op = IntOp::binary, .binary = BinaryKind::add, .ints = {"col", "row"}});
  CHECK(sum.dims == std::vector<int64_t>{3, 3});
  CHECK(sum.values == std::vector<int64_t>{1, 2, 3, 11, 12, 13, 21, 22, 23});
  env["shape"] = ints({3}, {2, 1, 2});
  const IntTensor e = run({.op = IntOp::expand, .ints = {"col", "shape"}});
  CHECK(e.dims == std::vector<int64_t>{2, 3, 2});
  CHECK(e.values == std::vector<int64_t>{0, 0, 10, 10, 20, 20, 0, 0, 10, 10, 20, 20});
  env["bad"] = ints({1}, {4});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::expand, .ints = {"row", "bad"}}),
                       doctest::Contains("shapes [3] and [4] do not broadcast"), Error);
  // x.new_zeros(3, 4), rows 1: filled with 5 (ScatterND of row indices), then == 0 and Where.
  env["hw"] = ints({2}, {3, 4});
  env["mask"] = run({.op = IntOp::constant_of_shape, .ints = {"hw"}, .real = true});
  CHECK(env["mask"].real);
  CHECK(env["mask"].reals == std::vector<double>(12, 0.0));
  env["rows"] = ints({2, 1}, {1, -1});
  env["fill"] = IntTensor{.dims = {2, 4}, .reals = {5, 5, 5, 5, 7, 7, 7, 7}, .real = true};
  const IntTensor filled = run({.op = IntOp::scatter_nd, .ints = {"mask", "rows", "fill"}});
  CHECK(filled.real);
  CHECK(filled.reals == std::vector<double>{0, 0, 0, 0, 5, 5, 5, 5, 7, 7, 7, 7});
  env["filled"] = filled;
  env["fzero"] = IntTensor{.dims = {}, .reals = {0}, .real = true};
  env["minus"] = IntTensor{.dims = {}, .reals = {-100}, .real = true};
  env["is0"] = run({.op = IntOp::compare, .ints = {"filled", "fzero"}, .attrs = {kEqual}});
  CHECK(!env["is0"].real);
  const IntTensor masked = run({.op = IntOp::where, .ints = {"is0", "fzero", "minus"}});
  CHECK(masked.real);  // a float Where, its operands broadcast
  CHECK(masked.reals ==
        std::vector<double>{0, 0, 0, 0, -100, -100, -100, -100, -100, -100, -100, -100});
  env["rows_t"] = run({.op = IntOp::transpose, .ints = {"filled"}, .attrs = {1, 0}});
  CHECK(env["rows_t"].real);
  CHECK(env["rows_t"].reals[1] == 5);
  env["bad_rows"] = ints({1, 1}, {3});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::scatter_nd, .ints = {"mask", "bad_rows", "fill"}}),
                       doctest::Contains("scatter_nd updates [2,4]"), Error);
  env["one_row"] = IntTensor{.dims = {1, 4}, .reals = {1, 1, 1, 1}, .real = true};
  CHECK_THROWS_WITH_AS(run({.op = IntOp::scatter_nd, .ints = {"mask", "bad_rows", "one_row"}}),
                       doctest::Contains("scatter_nd index 3 outside an axis of 3"), Error);
  env["halves"] = IntTensor{.dims = {3}, .reals = {-1.5, 0, 2.5}, .real = true};
  // Integers joined to floats become floats; a float where indices are read is an error.
  const IntTensor joined = run({.op = IntOp::concat, .ints = {"halves", "row"}, .attrs = {0}});
  CHECK(joined.real);
  CHECK(joined.reals == std::vector<double>{-1.5, 0, 2.5, 1, 2, 3});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::gather, .ints = {"row", "halves"}, .attrs = {0}}),
                       doctest::Contains("a float tensor ('halves') where integers are read"),
                       Error);
  CHECK_THROWS_WITH_AS(run({.op = IntOp::gather, .ints = {"halves", "halves"}, .attrs = {0}}),
                       doctest::Contains("'halves' is both moved and read as indices"), Error);
  CHECK_THROWS_WITH_AS(run({.op = IntOp::logical_not, .ints = {"halves"}}),
                       doctest::Contains("where integers are read"), Error);
  // Casts: to float, back toward zero, to bool; Pow in float.
  CHECK(run({.op = IntOp::cast, .ints = {"halves"}}).values == std::vector<int64_t>{-1, 0, 2});
  CHECK(run({.op = IntOp::cast, .ints = {"halves"}, .attrs = {1}}).values ==
        std::vector<int64_t>{1, 0, 1});
  CHECK(run({.op = IntOp::cast, .ints = {"row"}, .real = true}).reals ==
        std::vector<double>{1, 2, 3});
  env["32"] = ints({}, {32});
  env["half"] = IntTensor{.dims = {}, .reals = {-0.5}, .real = true};
  CHECK(run({.op = IntOp::pow, .ints = {"32", "half"}}).reals[0] == doctest::Approx(0.1767767));
  env["three"] = ints({}, {3});
  CHECK(run({.op = IntOp::pow, .ints = {"start", "three"}}).values == std::vector<int64_t>{8});
}

TEST_CASE("onnx constant arithmetic: Ceil, Floor, Sin, Cos, Neg, Abs, Clip and CumSum") {
  std::map<std::string, IntTensor> env;
  auto run = [&](IntNode n) { return eval_int_node(n, env, nullptr); };
  auto unary = [&](UnaryKind k, const char* x) {
    return run({.op = IntOp::unary, .ints = {x}, .attrs = {static_cast<int64_t>(k)}});
  };
  env["halves"] = IntTensor{.dims = {3}, .reals = {-1.5, 0.25, 2.5}, .real = true};
  env["row"] = IntTensor{.dims = {3}, .values = {-2, 0, 5}};
  // TF's "same" padding: ceil(size / stride) over floats; integers pass Ceil unchanged.
  CHECK(unary(UnaryKind::ceil, "halves").reals == std::vector<double>{-1, 1, 3});
  CHECK(unary(UnaryKind::floor, "halves").reals == std::vector<double>{-2, 0, 2});
  CHECK(unary(UnaryKind::ceil, "row").values == std::vector<int64_t>{-2, 0, 5});
  CHECK(unary(UnaryKind::neg, "row").values == std::vector<int64_t>{2, 0, -5});
  CHECK(unary(UnaryKind::abs, "row").values == std::vector<int64_t>{2, 0, 5});
  const IntTensor s = unary(UnaryKind::sin, "row");  // of integers: floats
  CHECK(s.real);
  CHECK(s.reals[2] == doctest::Approx(std::sin(5.0)));
  CHECK(unary(UnaryKind::cos, "halves").reals[1] == doctest::Approx(std::cos(0.25)));
  env["min_lo"] = IntTensor{.dims = {}, .values = {-1}};
  env["max_hi"] = IntTensor{.dims = {1}, .values = {3}};
  CHECK(run({.op = IntOp::clip, .ints = {"row", "min_lo", "max_hi"}, .attrs = {1, 1}}).values ==
        std::vector<int64_t>{-1, 0, 3});
  CHECK(run({.op = IntOp::clip, .ints = {"row", "max_hi"}, .attrs = {0, 1}}).values ==
        std::vector<int64_t>{-2, 0, 3});  // a max alone
  env["fmin"] = IntTensor{.dims = {}, .reals = {0.5}, .real = true};
  const IntTensor c = run({.op = IntOp::clip, .ints = {"row", "fmin"}, .attrs = {1, 0}});
  CHECK(c.real);  // an integer clipped by a float bound is a float
  CHECK(c.reals == std::vector<double>{0.5, 0.5, 5});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::clip, .ints = {"row", "row"}, .attrs = {1, 0}}),
                       doctest::Contains("Clip bound (-2,0,5): expected one value"), Error);
  // EdgeNeXt's positions: ones summed along an axis, forward, exclusive, reversed.
  env["ones"] = IntTensor{.dims = {2, 3}, .values = {1, 1, 1, 2, 2, 2}};
  env["axis1"] = IntTensor{.dims = {}, .values = {1}};
  env["axis0"] = IntTensor{.dims = {}, .values = {-2}};
  CHECK(run({.op = IntOp::cumsum, .ints = {"ones", "axis1"}, .attrs = {0, 0}}).values ==
        std::vector<int64_t>{1, 2, 3, 2, 4, 6});
  CHECK(run({.op = IntOp::cumsum, .ints = {"ones", "axis1"}, .attrs = {1, 0}}).values ==
        std::vector<int64_t>{0, 1, 2, 0, 2, 4});
  CHECK(run({.op = IntOp::cumsum, .ints = {"ones", "axis0"}, .attrs = {0, 1}}).values ==
        std::vector<int64_t>{3, 3, 3, 2, 2, 2});
  env["fones"] = IntTensor{.dims = {3}, .reals = {0.5, 0.25, 1}, .real = true};
  env["axis_0"] = IntTensor{.dims = {}, .values = {0}};
  CHECK(run({.op = IntOp::cumsum, .ints = {"fones", "axis_0"}, .attrs = {0, 0}}).reals ==
        std::vector<double>{0.5, 0.75, 1.75});
  env["axis5"] = IntTensor{.dims = {}, .values = {5}};
  CHECK_THROWS_WITH_AS(run({.op = IntOp::cumsum, .ints = {"ones", "axis5"}, .attrs = {0, 0}}),
                       doctest::Contains("axis 5 is outside a rank-2 tensor"), Error);
  CHECK_THROWS_WITH_AS(run({.op = IntOp::cumsum, .ints = {"ones", "fones"}, .attrs = {0, 0}}),
                       doctest::Contains("CumSum axis"), Error);
}

TEST_CASE("onnx constant arithmetic: Tile") {
  std::map<std::string, IntTensor> env;
  auto run = [&](IntNode n) { return eval_int_node(n, env, nullptr); };
  env["m"] = IntTensor{.dims = {2, 2}, .values = {1, 2, 3, 4}};
  env["r12"] = IntTensor{.dims = {2}, .values = {1, 2}};
  env["r21"] = IntTensor{.dims = {2}, .values = {2, 1}};
  // Copies one after another along each axis, as numpy.tile.
  IntTensor y = run({.op = IntOp::tile, .ints = {"m", "r12"}});
  CHECK(y.dims == std::vector<int64_t>{2, 4});
  CHECK(y.values == std::vector<int64_t>{1, 2, 1, 2, 3, 4, 3, 4});
  y = run({.op = IntOp::tile, .ints = {"m", "r21"}});
  CHECK(y.dims == std::vector<int64_t>{4, 2});
  CHECK(y.values == std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4});
  // XCiT's grid: arange(1, H + 1) as floats, (1, 1, 3, 1) repeated along the width.
  env["col"] = IntTensor{.dims = {1, 1, 3, 1}, .reals = {1, 2, 3}, .real = true};
  env["w2"] = IntTensor{.dims = {4}, .values = {1, 1, 1, 2}};
  y = run({.op = IntOp::tile, .ints = {"col", "w2"}});
  CHECK(y.real);
  CHECK(y.dims == std::vector<int64_t>{1, 1, 3, 2});
  CHECK(y.reals == std::vector<double>{1, 1, 2, 2, 3, 3});
  env["zero"] = IntTensor{.dims = {2}, .values = {0, 3}};
  CHECK(run({.op = IntOp::tile, .ints = {"m", "zero"}}).dims == std::vector<int64_t>{0, 6});
  CHECK_THROWS_WITH_AS(run({.op = IntOp::tile, .ints = {"m", "w2"}}),
                       doctest::Contains("expected one repeat count per axis"), Error);
  env["neg"] = IntTensor{.dims = {2}, .values = {1, -1}};
  CHECK_THROWS_WITH_AS(run({.op = IntOp::tile, .ints = {"m", "neg"}}),
                       doctest::Contains("a repeat count below 0 or too large"), Error);
  env["huge"] = IntTensor{.dims = {2}, .values = {int64_t{1} << 40, 1}};
  CHECK_THROWS_WITH_AS(run({.op = IntOp::tile, .ints = {"m", "huge"}}),
                       doctest::Contains("too large"), Error);
}

TEST_CASE("onnx constant arithmetic: ReduceSum, ReduceProd, ReduceMax and ReduceMin") {
  std::map<std::string, IntTensor> env;
  auto run = [&](IntReduction k, const char* x, std::vector<int64_t> axes, bool keepdims,
                 const char* axes_input = nullptr) {
    IntNode n{
        .op = IntOp::reduce, .ints = {x}, .attrs = {static_cast<int64_t>(k), keepdims ? 1 : 0, 0}};
    n.attrs.insert(n.attrs.end(), axes.begin(), axes.end());
    if (axes_input) n.ints.push_back(axes_input);
    return eval_int_node(n, env, nullptr);
  };
  env["m"] = IntTensor{.dims = {2, 3}, .values = {1, -2, 3, 4, 5, -6}};
  // torch.var's count: the product of the reduced extents, no axes and keepdims 0: a scalar.
  env["sizes"] = IntTensor{.dims = {2}, .values = {7, 9}};
  const IntTensor count = run(IntReduction::prod, "sizes", {}, false);
  CHECK(count.dims.empty());
  CHECK(count.values == std::vector<int64_t>{63});
  CHECK(run(IntReduction::sum, "m", {1}, false).values == std::vector<int64_t>{2, 3});
  const IntTensor kept = run(IntReduction::sum, "m", {0}, true);
  CHECK(kept.dims == std::vector<int64_t>{1, 3});
  CHECK(kept.values == std::vector<int64_t>{5, 3, -3});
  CHECK(run(IntReduction::max, "m", {-1}, false).values == std::vector<int64_t>{3, 5});
  CHECK(run(IntReduction::min, "m", {}, false).values == std::vector<int64_t>{-6});
  CHECK(run(IntReduction::prod, "m", {0, 1}, true).values == std::vector<int64_t>{720});
  env["axis1"] = IntTensor{.dims = {1}, .values = {1}};
  CHECK(run(IntReduction::prod, "m", {}, false, "axis1").values == std::vector<int64_t>{-6, -120});
  // Over floats computed from shapes, in double precision.
  env["f"] = IntTensor{.dims = {2, 2}, .reals = {0.5, 4, -1, 0.25}, .real = true};
  const IntTensor fp = run(IntReduction::prod, "f", {1}, false);
  CHECK(fp.real);
  CHECK(fp.reals == std::vector<double>{2, -0.25});
  CHECK(run(IntReduction::max, "f", {0}, false).reals == std::vector<double>{0.5, 4});
  // noop_with_empty_axes: no axes is x itself.
  IntNode noop{.op = IntOp::reduce, .ints = {"m"}, .attrs = {0, 1, 1}};
  CHECK(eval_int_node(noop, env, nullptr).values == env["m"].values);
  // Errors: an overflowing product, the max of no elements, an axis outside the rank.
  env["big"] = IntTensor{.dims = {2}, .values = {int64_t{1} << 40, int64_t{1} << 40}};
  CHECK_THROWS_WITH_AS(run(IntReduction::prod, "big", {}, false),
                       doctest::Contains("ReduceProd overflows"), Error);
  env["none"] = IntTensor{.dims = {2, 0}, .values = {}};
  CHECK(run(IntReduction::sum, "none", {1}, false).values == std::vector<int64_t>{0, 0});
  CHECK_THROWS_WITH_AS(run(IntReduction::max, "none", {1}, false),
                       doctest::Contains("the max of no elements"), Error);
  CHECK_THROWS_WITH_AS(run(IntReduction::sum, "m", {2}, false),
                       doctest::Contains("axis 2 is outside a rank-2 tensor"), Error);
}
