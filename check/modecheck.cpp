// Planned against baseline: two seeded SGD steps per memory mode, compared bit for bit.
#include "check/modecheck.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "check/gradcheck.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/softmax_cross_entropy.h"

namespace frugal::testing {

namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

// train_two_steps, each result named for error messages.
Named train_named(const Net& net, MemoryMode memory, const Shape& input,
                  Recompute recompute = Recompute::none, bool pack = false) {
  ParamStore store(3);
  Tape tape(store, DType::f32);
  const int64_t n = input[0];
  Value x = tape.input("x", input, DType::f32, true);
  Value labels = tape.input("labels", {n}, DType::i32);
  Value loss = softmax_cross_entropy(linear(flatten(net(x)), {.out = 5}), labels);
  Executor ex(tape, cpu_backend(),
              {.memory = memory,
               .poison = true,
               .seed = 2,
               .keep = {loss},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9},
               .recompute = recompute,
               .pack = pack});
  Named out;
  for (int s = 0; s < 2; ++s) {
    ex.set_input(x, random_tensor(input, 10 + s, -1, 1, DType::f32));
    ex.set_input(labels, random_labels(n, 5, 20 + s));
    ex.forward();
    out.emplace_back(detail::concat("step ", s, " loss"), clone(ex.value(loss)));
    ex.backward(loss);
    out.emplace_back(detail::concat("step ", s, " d x"), clone(ex.grad(x)));
  }
  for (Parameter* p : store.all())
    out.emplace_back(detail::concat("parameter ", p->name), clone(p->value));
  return out;
}

// Index of the first element whose bytes differ between a and b (same meta), -1 if none.
int64_t first_difference(const Tensor& a, const Tensor& b) {
  const size_t size = dtype_size(a.dtype());
  const char* pa = static_cast<const char*>(a.raw());
  const char* pb = static_cast<const char*>(b.raw());
  for (int64_t i = 0; i < a.numel(); ++i)
    if (std::memcmp(pa + i * size, pb + i * size, size) != 0) return i;
  return -1;
}

// Index of the first element of t that is NaN or infinite, -1 if none.
int64_t first_non_finite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(element_as_double(t, i))) return i;
  return -1;
}

// Throws naming the first result of `planned` that differs bitwise from `base`, or that is not
// finite in either.
void compare_named(const Named& base, const Named& planned, const char* what) {
  FRUGAL_CHECK(base.size() == planned.size(), what, " vs baseline: ", planned.size(), " results ",
               what, ", ", base.size(), " in baseline");
  for (size_t i = 0; i < base.size(); ++i) {
    const auto& [name, b] = base[i];
    const Tensor& p = planned[i].second;
    FRUGAL_CHECK(b.meta() == p.meta(), what, " vs baseline: ", name, " is ", p.shape(), " ",
                 dtype_name(p.dtype()), " ", what, ", ", b.shape(), " ", dtype_name(b.dtype()),
                 " in baseline");
    const int64_t diff = first_difference(b, p);
    FRUGAL_CHECK(diff < 0, what, " vs baseline: ", name, " ", b.shape(),
                 " differs first at element ", diff, ": baseline ", element_as_double(b, diff),
                 ", ", what, " ", element_as_double(p, diff));
    const int64_t bad = first_non_finite(b);
    FRUGAL_CHECK(bad < 0, what, " vs baseline: ", name, " element ", bad,
                 " is not finite in both modes (", element_as_double(b, bad),
                 "): a read of poisoned bytes?");
  }
}

}  // namespace

std::vector<Tensor> train_two_steps(const Net& net, MemoryMode memory, const Shape& input) {
  std::vector<Tensor> out;
  for (auto& [name, t] : train_named(net, memory, input)) out.push_back(std::move(t));
  return out;
}

void check_planned_equals_baseline(const Net& net, const Shape& input) {
  const Named base = train_named(net, MemoryMode::baseline, input);
  compare_named(base, train_named(net, MemoryMode::planned, input), "planned");
  // Every op that can be rebuilt in backward rebuilt, whatever it costs, and the ones the
  // planner chooses: the same bits.
  compare_named(base, train_named(net, MemoryMode::planned, input, Recompute::all),
                "planned with every rebuildable op rebuilt");
  compare_named(base, train_named(net, MemoryMode::planned, input, Recompute::cheap),
                "planned with the cheap rebuilds");
  // ReLU outputs packed outside the arena between forward and backward: the same bits.
  compare_named(base, train_named(net, MemoryMode::planned, input, Recompute::none, true),
                "planned with ReLU outputs packed");
}

}  // namespace frugal::testing
