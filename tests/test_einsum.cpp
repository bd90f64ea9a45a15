// Einsum in general (models/onnx_einsum.h): equations of every kind of index (batch, kept from
// one operand, contracted, summed out of one operand alone; one operand; a weight) against a
// direct sum over every assignment of the letters, finite-difference gradient checks in f64,
// planned == baseline bitwise, and the equations and shapes refused.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/reduce.h"
#include "models/onnx_einsum.h"
#include "run/executor.h"
#include "tests/worst.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

struct Case {
  const char* equation;
  std::vector<Shape> shapes;
};

// Extents: n 2, c 3, h 4, w 5, k 2, d 3.
const Case kCases[] = {
    {"nchw,nc->nchw", {{2, 3, 4, 5}, {2, 3}}},         // a gate: nothing contracted
    {"nchw,kc->nkhw", {{2, 3, 4, 5}, {2, 3}}},         // a 1x1 convolution by a weight
    {"nchw,nkhw->nck", {{2, 3, 4, 5}, {2, 2, 4, 5}}},  // similarities over two axes
    {"nchw,nc->nh", {{2, 3, 4, 5}, {2, 3}}},           // w summed out of a alone
    {"nch,nkd->nchk", {{2, 3, 4}, {2, 2, 3}}},         // d summed out of b alone, an outer product
    {"nchw,nwd->ndhc", {{2, 3, 4, 5}, {2, 5, 3}}},     // contracted, kept, output reordered
    {"nchw->nwc", {{2, 3, 4, 5}}},                     // one operand: h summed, transposed
    {"nch->nhc", {{2, 3, 4}}},                         // one operand: a transpose
};

// The letters' extents from the operands' shapes.
std::map<char, int64_t> extents(const EinsumEquation& e, const std::vector<Tensor>& xs) {
  std::map<char, int64_t> d;
  for (size_t k = 0; k < xs.size(); ++k)
    for (size_t p = 0; p < e.operands[k].size(); ++p)
      d[e.operands[k][p]] = xs[k].shape()[static_cast<int>(p)];
  return d;
}

// The row-major offset of the assignment `at` in a tensor of term t.
int64_t offset(const std::string& t, std::map<char, int64_t>& at,
               const std::map<char, int64_t>& d) {
  int64_t o = 0;
  for (char c : t) o = o * d.at(c) + at[c];
  return o;
}

// y = einsum(e, xs) by summing over every assignment of every letter (f64).
std::vector<double> direct(const EinsumEquation& e, const std::vector<Tensor>& xs) {
  const std::map<char, int64_t> d = extents(e, xs);
  int64_t out = 1;
  for (char c : e.output) out *= d.at(c);
  std::vector<double> y(static_cast<size_t>(out), 0.0);
  std::map<char, int64_t> at;
  for (const auto& [c, n] : d) at[c] = 0;
  while (true) {
    double p = 1;
    for (size_t k = 0; k < xs.size(); ++k) p *= xs[k].data<double>()[offset(e.operands[k], at, d)];
    y[static_cast<size_t>(offset(e.output, at, d))] += p;
    auto it = at.begin();  // the next assignment, the first letter fastest
    for (; it != at.end(); ++it) {
      if (++it->second < d.at(it->first)) break;
      it->second = 0;
    }
    if (it == at.end()) break;
  }
  return y;
}

}  // namespace

TEST_CASE("einsum: every kind of index against a direct sum") {
  for (const Case& c : kCases) {
    CAPTURE(c.equation);
    const EinsumEquation e = parse_einsum(c.equation);
    ParamStore store;
    Tape tape(store, DType::f64);
    std::vector<Value> in;
    std::vector<Tensor> values;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      std::string name = "x";  // (appended: GCC 12's -Wrestrict misfires on "x" + string)
      name += std::to_string(k);
      in.push_back(tape.input(name, c.shapes[k], DType::f64));
      values.push_back(random_tensor(c.shapes[k], 60 + k));
    }
    Value y = record_einsum(e, in);
    Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
    for (size_t k = 0; k < in.size(); ++k) ex.set_input(in[k], values[k]);
    ex.forward();
    const std::vector<double> want = direct(e, values);
    const Tensor& got = ex.value(y);
    REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i)
      worst = worse(worst, std::abs(got.data<double>()[i] - want[i]));
    CHECK(worst < 1e-12);
  }
}

TEST_CASE("einsum: finite-difference gradients in f64, planned equals baseline") {
  for (const Case& c : kCases) {
    CAPTURE(c.equation);
    const EinsumEquation e = parse_einsum(c.equation);
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < c.shapes.size(); ++k)
      inputs.push_back(random_tensor(c.shapes[k], 70 + k));
    check_gradients(
        [&](std::span<const Value> x) {
          return std::vector<Value>{record_einsum(e, std::vector<Value>(x.begin(), x.end()))};
        },
        inputs);
  }
  // A gate and a 1x1 convolution by a weight in a training step, planned against baseline.
  check_planned_equals_baseline([](Value v) {
    Value w = v.tape().param("w", {2, v.shape()[1]}, Init::normal(0.5));
    Value g = record_einsum(parse_einsum("nchw,nc->nchw"), {v, reduce(v, Reduction::mean, 2)});
    return record_einsum(parse_einsum("nchw,kc->nkhw"), {g, w});
  });
}

TEST_CASE("einsum: the equations and shapes refused name what is wrong") {
  CHECK_THROWS_WITH_AS(parse_einsum("nchw,nc"), doctest::Contains("explicit output"), Error);
  CHECK_THROWS_WITH_AS(parse_einsum("...c,c->...c"), doctest::Contains("only letters"), Error);
  CHECK_THROWS_WITH_AS(parse_einsum("a,b,c->a"), doctest::Contains("only letters"), Error);
  CHECK_THROWS_WITH_AS(parse_einsum("nii->ni"), doctest::Contains("letter 'i' twice"), Error);
  CHECK_THROWS_WITH_AS(parse_einsum("nc->nk"), doctest::Contains("output letter 'k' is in no"),
                       Error);
  ParamStore store;
  Tape tape(store, DType::f32);
  Value a = tape.input("a", {2, 3, 4}, DType::f32), b = tape.input("b", {2, 5}, DType::f32);
  CHECK_THROWS_WITH_AS(record_einsum(parse_einsum("nch,nc->nh"), {a, b}),
                       doctest::Contains("letter 'c' is 3 in one operand and 5 in another"), Error);
  CHECK_THROWS_WITH_AS(record_einsum(parse_einsum("nc,nch->nh"), {a, b}),
                       doctest::Contains("term 'nc' for operand [2,3,4]"), Error);
}
