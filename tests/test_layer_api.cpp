// What a layer author uses from the installed package: mask_bytes, in_place_mask_roles (and
// the four built-in ops built on it), the check/ helpers (kink_free, op_of,
// check_planned_equals_baseline, which must catch an op whose declared alias is wrong), and
// docs/NEW_LAYER.md, whose code is the out-of-tree layer in tests/install/layer/.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/conv2d.h"
#include "layers/dropout.h"
#include "layers/leaky_relu.h"
#include "layers/relu.h"
#include "layers/threshold.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

bool same_aliases(const std::vector<Alias>& a, const std::vector<Alias>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Alias& x, const Alias& y) {
    return x.output == y.output && x.input == y.input;
  });
}

bool same_roles(const Roles& a, const Roles& b) {
  return a.backward_reads_inputs == b.backward_reads_inputs &&
         a.backward_reads_outputs == b.backward_reads_outputs && a.saved == b.saved &&
         a.forward_scratch == b.forward_scratch && a.backward_scratch == b.backward_scratch &&
         same_aliases(a.aliases, b.aliases) && same_aliases(a.grad_aliases, b.grad_aliases) &&
         a.rebuilds_inputs == b.rebuilds_inputs;
}

// y = x reversed (y[i] = x[n-1-i]), with an in-place alias it has no right to: in place, the
// second half reads elements the first half already overwrote.
class ReverseOp final : public Op {
 public:
  std::string name() const override { return "reverse"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override { return {in[0]}; }
  Roles roles(Mode mode, const Backend&) const override {
    Roles r;
    r.aliases = {{.output = 0, .input = 0}};
    if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
    return r;
  }
  void forward(const OpContext& ctx) override { reverse(ctx.input(0), ctx.output(0)); }
  void backward(const OpContext& ctx) override {
    if (ctx.needs_grad_input(0)) reverse(ctx.grad_output(0), ctx.grad_input(0));
  }

 private:
  static void reverse(const Tensor& x, Tensor& y) {
    const int64_t n = x.numel();
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0; i < n; ++i) out[i] = in[n - 1 - i];
  }
};

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE_MESSAGE(in, "cannot read ", p.string());
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

}  // namespace

TEST_CASE("mask_bytes: one bit per element, whole bytes") {
  CHECK(mask_bytes(0) == 0);
  CHECK(mask_bytes(1) == 1);
  CHECK(mask_bytes(8) == 1);
  CHECK(mask_bytes(9) == 2);
  CHECK(mask_bytes(2 * 3 * 4 * 5) == 15);
}

TEST_CASE("in_place_mask_roles: y <- x, dx <- dy, a mask or the output for backward") {
  Roles want;
  want.aliases = {{.output = 0, .input = 0}};
  CHECK(same_roles(in_place_mask_roles(Mode::inference, 20), want));
  CHECK(same_roles(in_place_mask_roles(Mode::inference, 20, false), want));
  want.grad_aliases = {{.output = 0, .input = 0}};
  want.saved = {{Shape{3}, DType::u8}};
  CHECK(same_roles(in_place_mask_roles(Mode::training, 20), want));
  want.saved.clear();
  want.backward_reads_outputs = {0};
  CHECK(same_roles(in_place_mask_roles(Mode::training, 20, false), want));
}

TEST_CASE("relu, leaky_relu, threshold and dropout declare in_place_mask_roles") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3, 5}, DType::f32);
  const int64_t n = x.shape().numel();
  Value r = relu(x), l = leaky_relu(x), t = threshold(x, 0, 1e-6), d = dropout(x, 0.5);
  for (Mode mode : {Mode::inference, Mode::training}) {
    CAPTURE(mode_name(mode));
    for (bool mask : {false, true}) {
      CAPTURE(mask);
      op_of<ReluOp>(r).saves = mask ? ReluOp::Saves::mask : ReluOp::Saves::output;
      op_of<LeakyReluOp>(l).saves = mask ? LeakyReluOp::Saves::mask : LeakyReluOp::Saves::output;
      const Roles want = in_place_mask_roles(mode, n, mask);
      CHECK(same_roles(op_of<ReluOp>(r).roles(mode, cpu_backend()), want));
      CHECK(same_roles(op_of<LeakyReluOp>(l).roles(mode, cpu_backend()), want));
    }
    const Roles want = in_place_mask_roles(mode, n);
    CHECK(same_roles(op_of<ThresholdOp>(t).roles(mode, cpu_backend()), want));
    CHECK(same_roles(op_of<DropoutOp>(d).roles(mode, cpu_backend()), want));
  }
}

TEST_CASE("kink_free: |x| between 0.1 and 1, signs alternating") {
  const Tensor t = kink_free({3, 7}, 5);
  REQUIRE(t.dtype() == DType::f64);
  CHECK(t.shape() == Shape{3, 7});
  for (int64_t i = 0; i < t.numel(); ++i) {
    CAPTURE(i);
    const double v = t.data<double>()[i];
    CHECK(std::abs(v) >= 0.1);
    CHECK(std::abs(v) < 1.0);
    CHECK((v < 0) == (i % 2 == 0));
  }
}

TEST_CASE("op_of: the recording op as its type, or an error") {
  ParamStore store;
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {2, 3}, DType::f32);
  Value y = relu(x);
  CHECK(&op_of<ReluOp>(y) == tape.ops().back().op.get());
  CHECK_THROWS_WITH_AS(op_of<ReluOp>(x), doctest::Contains("(x) is not an op's output"), Error);
  CHECK_THROWS_WITH_AS(op_of<LeakyReluOp>(y), doctest::Contains("was recorded by 'relu'"), Error);
}

TEST_CASE("check_planned_equals_baseline catches an alias an op has no right to") {
  auto net = [](bool reverse) {
    return [reverse](Value x) {
      Value a = conv2d(x, {.out = 4, .kernel = 3, .pad = 1});  // read by nothing after `reverse`
      Value h = reverse ? x.tape().record(std::make_unique<ReverseOp>(), {a},
                                          std::source_location::current())[0]
                        : relu(a);
      return conv2d(h, {.out = 2, .kernel = 3});
    };
  };
  CHECK_NOTHROW(check_planned_equals_baseline(net(false)));
  CHECK_THROWS_WITH_AS(check_planned_equals_baseline(net(true)),
                       doctest::Contains("planned vs baseline: step 0 loss"), Error);
}

TEST_CASE("docs/NEW_LAYER.md: every code block is the out-of-tree layer's code") {
  namespace fs = std::filesystem;
  const fs::path root = FRUGAL_SOURCE_DIR;
  const std::string doc = read_text(root / "docs" / "NEW_LAYER.md");
  std::string sources;
  for (const char* f : {"CMakeLists.txt", "absolute.h", "absolute.cpp", "main.cpp"})
    sources += read_text(root / "tests" / "install" / "layer" / f);
  int blocks = 0;
  for (const std::string fence : {"```cpp\n", "```cmake\n"}) {
    for (size_t at = doc.find(fence); at != std::string::npos; at = doc.find(fence, at)) {
      const size_t begin = at + fence.size(), end = doc.find("```", begin);
      REQUIRE(end != std::string::npos);
      const std::string code = doc.substr(begin, end - begin);
      INFO("docs/NEW_LAYER.md block not in tests/install/layer/:\n", code);
      CHECK(sources.find(code) != std::string::npos);
      ++blocks;
      at = end + 3;
    }
  }
  CHECK(blocks >= 6);
}
