// Batched matrix product forward and backward, with its roles.
#include "layers/matmul.h"

namespace frugal {

std::vector<TensorMeta> MatMulOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, "matmul: expects 2 inputs, got ", in.size());
  const Shape &a = in[0].shape, &b = in[1].shape;
  FRUGAL_CHECK(
      in[0].dtype == in[1].dtype && (in[0].dtype == DType::f32 || in[0].dtype == DType::f64),
      "matmul: a is ", dtype_name(in[0].dtype), ", b ", dtype_name(in[1].dtype),
      "; both must be f32 or both f64");
  bool fits =
      a.rank() >= 2 && a.rank() <= 6 && a.rank() == b.rank() && a[a.rank() - 1] == b[b.rank() - 2];
  for (int k = 0; fits && k < a.rank() - 2; ++k) fits = a[k] == b[k];
  FRUGAL_CHECK(fits, "matmul: a ", a, " and b ", b,
               " must be (..., M, K) and (..., K, N) with the same leading axes (ranks 2 to 6)");
  const int r = a.rank();
  g_ = {.batch = 1, .M = a[r - 2], .N = b[r - 1], .K = a[r - 1]};
  std::vector<int64_t> c(a.dims().begin(), a.dims().end() - 1);
  for (int k = 0; k < r - 2; ++k) g_.batch *= a[k];
  c.push_back(g_.N);
  c_ = {Shape(c), in[0].dtype};
  return {c_};
}

Roles MatMulOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) r.backward_reads_inputs = {0, 1};
  return r;
}

void MatMulOp::forward(const OpContext& ctx) {
  ctx.backend().batched_matmul(g_, ctx.input(0), ctx.input(1), ctx.output(0));
}

// da (M,K) = dc (M,N) b^T;  db (K,N) = a^T dc (M,N), batch by batch.
void MatMulOp::backward(const OpContext& ctx) {
  const Tensor& dc = ctx.grad_output(0);
  if (ctx.needs_grad_input(0))
    ctx.backend().batched_matmul(
        {.batch = g_.batch, .M = g_.M, .N = g_.K, .K = g_.N, .trans_b = true}, dc, ctx.input(1),
        ctx.grad_input(0));
  if (ctx.needs_grad_input(1))
    ctx.backend().batched_matmul(
        {.batch = g_.batch, .M = g_.K, .N = g_.N, .K = g_.M, .trans_a = true}, ctx.input(0), dc,
        ctx.grad_input(1));
}

Value matmul(Value a, Value b, std::source_location where) {
  return a.tape().record(std::make_unique<MatMulOp>(), {a, b}, where)[0];
}

}  // namespace frugal
