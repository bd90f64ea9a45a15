// Embedding forward and backward, with its roles.
#include "layers/embedding.h"

#include <cmath>

namespace frugal {

std::vector<TensorMeta> EmbeddingOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, "embedding: expects 2 inputs (table, indices), got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "embedding: table must be f32 or f64, got ", dtype_name(in[0].dtype));
  FRUGAL_CHECK(in[0].shape.rank() >= 1 && in[0].shape.numel() >= 1, "embedding: table ",
               in[0].shape, " is empty");
  FRUGAL_CHECK(in[1].dtype == DType::i32 || in[1].dtype == DType::f32 || in[1].dtype == DType::f64,
               "embedding: indices must be i32 or whole numbers in a float type, got ",
               dtype_name(in[1].dtype));
  FRUGAL_CHECK(in[1].shape.numel() >= 1, "embedding: indices ", in[1].shape, " are empty");
  FRUGAL_CHECK(in[1].dtype != DType::f32 || in[0].shape[0] <= (int64_t{1} << 24),
               "embedding: f32 indices cannot name each of the table's ", in[0].shape[0],
               " rows exactly (above 2^24): give i32 or f64 indices");
  std::vector<int64_t> dims = in[1].shape.dims();
  dims.insert(dims.end(), in[0].shape.dims().begin() + 1, in[0].shape.dims().end());
  table_ = in[0];
  y_ = TensorMeta{Shape(dims), in[0].dtype};
  return {y_};
}

Roles EmbeddingOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode == Mode::training) r.backward_reads_inputs = {1};
  rebuild_by_forward(r, mode, {0, 1}, static_cast<double>(y_.bytes()), y_, 0);
  return r;
}

const std::vector<int64_t>& EmbeddingOp::rows_of(const OpContext& ctx) {
  const Tensor& host = to_host(ctx.backend(), ctx.input(1), staging_);
  const int64_t n = host.numel(), rows = table_.shape[0];
  rows_.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double v = 0;
    switch (host.dtype()) {
      case DType::i32:
        v = host.data<int32_t>()[i];
        break;
      case DType::f32:
        v = host.data<float>()[i];
        break;
      case DType::f64:
        v = host.data<double>()[i];
        break;
      default:
        FRUGAL_CHECK(false, "embedding: indices of ", dtype_name(host.dtype()));
    }
    FRUGAL_CHECK(std::isfinite(v) && v == std::floor(v), "embedding: index ", v, " at position ", i,
                 " of the indices ", host.shape(), " is not a whole number");
    FRUGAL_CHECK(v >= -static_cast<double>(rows) && v < static_cast<double>(rows),
                 "embedding: index ", v, " at position ", i, " of the indices ", host.shape(),
                 " is outside the table's ", rows, " rows");
    const int64_t k = static_cast<int64_t>(v);
    rows_[static_cast<size_t>(i)] = k < 0 ? k + rows : k;
  }
  return rows_;
}

void EmbeddingOp::forward(const OpContext& ctx) {
  ctx.backend().embedding_forward(ctx.input(0), rows_of(ctx), ctx.output(0));
}

// dtable = 0 but at the gathered rows, which sum the dy rows taken from them.
void EmbeddingOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  ctx.backend().embedding_backward(ctx.grad_output(0), rows_of(ctx), ctx.grad_input(0));
}

Value embedding(Value table, Value indices, std::source_location where) {
  return table.tape().record(std::make_unique<EmbeddingOp>(), {table, indices}, where)[0];
}

}  // namespace frugal
