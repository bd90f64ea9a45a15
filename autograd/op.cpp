// OpContext accessors: undeclared reads fail loudly.
#include "autograd/op.h"

#include "core/error.h"

namespace frugal {

Tensor& OpContext::pick(const std::vector<Tensor*>& v, int i, const char* what) const {
  FRUGAL_CHECK(i >= 0 && static_cast<size_t>(i) < v.size(), op_name, ": ", what, " ", i,
               " out of range (op has ", v.size(), ")");
  Tensor* t = v[static_cast<size_t>(i)];
  FRUGAL_CHECK(t != nullptr && t->defined(), op_name, ": ", backward_pass ? "backward" : "forward",
               " reads ", what, " ", i, " which its roles do not declare for this pass");
  return *t;
}

const Tensor& OpContext::input(int i) const {
  return pick(inputs, i, "input");
}
Tensor& OpContext::output(int j) const {
  return pick(outputs, j, "output");
}
Tensor& OpContext::saved(int k) const {
  return pick(saved_, k, "saved tensor");
}
Tensor& OpContext::scratch() const {
  FRUGAL_CHECK(scratch_ != nullptr, op_name, ": uses scratch it did not declare");
  return *scratch_;
}
const Tensor& OpContext::grad_output(int j) const {
  FRUGAL_CHECK(backward_pass, op_name, ": grad_output used in forward");
  return pick(grad_outputs, j, "output gradient");
}
bool OpContext::needs_grad_input(int i) const {
  return i >= 0 && static_cast<size_t>(i) < grad_inputs.size() &&
         grad_inputs[static_cast<size_t>(i)] != nullptr;
}
Tensor& OpContext::grad_input(int i) const {
  return pick(grad_inputs, i, "input gradient");
}
Tensor& OpContext::rebuilt_input(int i) const {
  return pick(rebuilt, i, "rebuilt input");
}

Roles in_place_mask_roles(Mode mode, int64_t n, bool saves_mask) {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};  // y may take x's bytes
  if (mode == Mode::training) {
    if (saves_mask)
      r.saved = {{Shape{mask_bytes(n)}, DType::u8}};
    else
      r.backward_reads_outputs = {0};
    r.grad_aliases = {{.output = 0, .input = 0}};  // dx may take dy's bytes
  }
  return r;
}

Roles input_reading_roles(Mode mode, const TensorMeta& x, double flops_per_element) {
  Roles r;
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0};
    r.grad_aliases = {{.output = 0, .input = 0}};  // dx may take dy's bytes
    rebuild_by_forward(r, mode, {0}, static_cast<double>(x.bytes()), x, flops_per_element);
  } else {
    r.aliases = {{.output = 0, .input = 0}};  // nothing reads x again
  }
  return r;
}

void rebuild_by_forward(Roles& r, Mode mode, std::vector<int> reads, double read_bytes,
                        const TensorMeta& out, double flops_per_element) {
  if (mode != Mode::training) return;
  const double n = static_cast<double>(out.shape.numel());
  set_rebuildable(r, std::move(reads), n * flops_per_element,
                  read_bytes + static_cast<double>(out.bytes()));
}

}  // namespace frugal
