// Finite-difference gradient checks in double precision, for any op or small graph.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "autograd/tape.h"

namespace frugal::testing {

struct GradcheckOptions {
  double eps = 1e-6;        // central difference step
  double tolerance = 1e-6;  // on |analytic - numeric| / max(1, |analytic|, |numeric|)
  uint64_t seed = 1;        // parameters and the random upstream gradient
  // Elements compared per tensor: all when 0 or when the tensor has no more; otherwise the
  // first, the last and one at a seeded place in each of the stretches between (every
  // tensor still checked, each region of it, at a bounded count of forward passes). 1 and
  // negative counts are errors.
  int64_t max_elements = 0;
};

// Records `build` over leaf inputs holding `inputs` (f64 tensors are differentiable; i32
// tensors such as labels are not), seeds every f32/f64 output with a random upstream
// gradient R, and compares d(sum R*out)/d(every input and parameter) with central
// differences. Throws frugal::Error naming the worst compared element of every mismatching
// tensor.
// Runs with poisoned buffers, so an undeclared backward read shows up as NaN.
void check_gradients(const std::function<std::vector<Value>(std::span<const Value>)>& build,
                     const std::vector<Tensor>& inputs, GradcheckOptions options = {});

// The elements check_gradients compares in a tensor of n (GradcheckOptions::max_elements
// `most`), in increasing order; `seed` places the one in each stretch.
std::vector<int64_t> gradcheck_sample(int64_t n, int64_t most, uint64_t seed);

// An f64 tensor of the given shape, uniform in [lo, hi), from `seed`.
Tensor random_tensor(Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0,
                     DType dtype = DType::f64);
// An i32 tensor of labels in [0, classes).
Tensor random_labels(int64_t n, int64_t classes, uint64_t seed);
// Gives the tape's parameter `name` values uniform in [lo, hi) from `seed` (a BatchNorm's
// weight and bias away from their ones and zeros); throws frugal::Error if there is none.
void randomize_param(Tape& tape, const std::string& name, uint64_t seed, double lo, double hi);
// A copy of t with storage of its own (to keep a result past the executor's next step).
Tensor clone(const Tensor& t);
// An f64 tensor with |elements| uniform in [0.1, 1), every other one negative (element 0
// first): inputs at least 0.1 away from a kink at 0 (relu, leaky_relu, abs) for check_gradients.
Tensor kink_free(Shape shape, uint64_t seed);

// The op that recorded y, as its concrete type (to choose an encoding before a check runs:
// op_of<ReluOp>(y).saves = ReluOp::Saves::output). Throws frugal::Error if y is not an op's
// output or that op is not an OpT.
template <typename OpT>
OpT& op_of(Value y) {
  const int producer = y.tape().value(y.id()).producer;
  FRUGAL_CHECK(producer >= 0, "op_of: value ", y.id(), " (", y.tape().value(y.id()).name,
               ") is not an op's output");
  Op& op = *y.tape().ops()[static_cast<size_t>(producer)].op;
  OpT* typed = dynamic_cast<OpT*>(&op);
  FRUGAL_CHECK(typed != nullptr, "op_of: value ", y.id(), " was recorded by '", op.name(),
               "', not by an op of the type asked for");
  return *typed;
}

}  // namespace frugal::testing
