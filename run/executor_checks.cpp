// Executor, --check-finite: the first NaN or inf in the inputs, parameters, each op's outputs
// and saved tensors, and its input gradients, named with the op, the pass and the element.
#include <cmath>
#include <string>

#include "run/executor.h"

namespace frugal {

// "nan at element 7 [0, 1, 3] of [2, 2, 4]" for t's first NaN or +-inf, "" when t is finite.
// The element is read through the backend (one element copied to the host).
std::string Executor::non_finite(const Tensor& t) {
  const int64_t i = backend_.first_non_finite(t);
  if (i < 0) return "";
  Tensor one = Tensor::empty({1}, t.dtype());
  backend_.copy_to_host(t.elements(i, 1), one);
  const Shape& s = t.shape();
  std::vector<int64_t> at(static_cast<size_t>(s.rank()));
  for (int64_t r = s.rank() - 1, rest = i; r >= 0; --r) {
    at[static_cast<size_t>(r)] = rest % s[static_cast<int>(r)];
    rest /= s[static_cast<int>(r)];
  }
  const double x = element_as_double(one, 0);
  const char* value = std::isnan(x) ? "nan" : x > 0 ? "inf" : "-inf";  // a NaN's sign is noise
  return detail::concat(value, " at element ", i, " ", Shape(at), " of ", s);
}

void Executor::check_finite_before_forward() {
  for (size_t v = 0; v < tape_.values().size(); ++v) {
    const ValueNode& node = tape_.values()[v];
    if (node.kind == ValueKind::op_output ||
        (node.kind == ValueKind::input && layout_.live.value_buffer[v] < 0))
      continue;
    const std::string bad = non_finite(value(Value(&tape_, static_cast<int>(v))));
    FRUGAL_CHECK(bad.empty(),
                 "check_finite: ", node.kind == ValueKind::param ? "parameter '" : "input '",
                 node.name, "' holds ", bad, " before forward (step ", step_ + 1, ")");
  }
}

// Op k's outputs and saved tensors after its forward, or the input gradients it wrote in its
// backward (a second contribution to a gradient is checked before it is added).
void Executor::check_finite_after(int k, bool backward) {
  const OpNode& node = tape_.ops()[static_cast<size_t>(k)];
  const OpContext& c = (backward ? backward_ctx_ : forward_ctx_)[static_cast<size_t>(k)];
  auto check = [&](const Tensor* t, const char* slot, size_t j, int v) {
    if (t == nullptr) return;
    const std::string bad = non_finite(*t);
    if (bad.empty()) return;
    throw Error(detail::concat("check_finite: op ", k, " '", names_[static_cast<size_t>(k)], "' (",
                               node.where, ") ", backward ? "backward" : "forward", " wrote ", bad,
                               " to ", slot, j, v >= 0 ? " ('" + tape_.value(v).name + "')" : "",
                               ", the first NaN or inf of step ", step_ + 1));
  };
  if (backward) {
    for (size_t i = 0; i < c.grad_inputs.size(); ++i)
      check(c.grad_inputs[i], "d input ", i, node.inputs[i]);
    return;
  }
  for (size_t j = 0; j < c.outputs.size(); ++j) check(c.outputs[j], "output ", j, node.outputs[j]);
  for (size_t j = 0; j < c.saved_.size(); ++j) check(c.saved_[j], "saved tensor ", j, -1);
}

}  // namespace frugal
