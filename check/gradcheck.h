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
};

// Records `build` over leaf inputs holding `inputs` (f64 tensors are differentiable; i32
// tensors such as labels are not), seeds every f32/f64 output with a random upstream
// gradient R, and compares d(sum R*out)/d(every input and parameter) with central
// differences. Throws frugal::Error naming the worst element of every mismatching tensor.
// Runs with poisoned buffers, so an undeclared backward read shows up as NaN.
void check_gradients(const std::function<std::vector<Value>(std::span<const Value>)>& build,
                     const std::vector<Tensor>& inputs, GradcheckOptions options = {});

// An f64 tensor of the given shape, uniform in [lo, hi), from `seed`.
Tensor random_tensor(Shape shape, uint64_t seed, double lo = -1.0, double hi = 1.0,
                     DType dtype = DType::f64);
// An i32 tensor of labels in [0, classes).
Tensor random_labels(int64_t n, int64_t classes, uint64_t seed);
// A copy of t with storage of its own (to keep a result past the executor's next step).
Tensor clone(const Tensor& t);

}  // namespace frugal::testing
