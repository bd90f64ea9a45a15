// Sampling at a grid's points forward and backward, with its roles.
#include "layers/grid_sample.h"

namespace frugal {

std::vector<TensorMeta> GridSampleOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2, "grid_sample: expects x and grid, got ", in.size(), " inputs");
  const Shape &x = in[0].shape, &grid = in[1].shape;
  FRUGAL_CHECK(x.rank() == 4 && grid.rank() == 4 && grid[3] == 2 && grid[0] == x[0],
               "grid_sample: expects x (N,C,H,W) and grid (N,P,Q,2), got x ", x, " and grid ",
               grid);
  FRUGAL_CHECK(
      (in[0].dtype == DType::f32 || in[0].dtype == DType::f64) && in[1].dtype == in[0].dtype,
      "grid_sample: x and grid must be both f32 or both f64, got ", dtype_name(in[0].dtype),
      " and ", dtype_name(in[1].dtype));
  FRUGAL_CHECK(x[2] >= 1 && x[3] >= 1 && grid[1] >= 1 && grid[2] >= 1,
               "grid_sample: an empty image or grid (x ", x, ", grid ", grid, ")");
  g_ = {.N = x[0],
        .C = x[1],
        .H = x[2],
        .W = x[3],
        .P = grid[1],
        .Q = grid[2],
        .mode = o_.mode,
        .padding = o_.padding,
        .align_corners = o_.align_corners};
  dtype_ = in[0].dtype;
  return {{Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_}};
}

Roles GridSampleOp::roles(Mode mode, const Backend&) const {
  Roles r;
  if (mode != Mode::training) return r;
  r.backward_reads_inputs = {0, 1};
  r.reads_only_for = {{.input = 0, .grad = 1}};  // x: for the grid's gradient alone
  const TensorMeta y{Shape{g_.N, g_.C, g_.P, g_.Q}, dtype_};
  const double read = static_cast<double>((g_.N * g_.C * g_.H * g_.W + g_.N * g_.P * g_.Q * 2) *
                                          static_cast<int64_t>(dtype_size(dtype_)));
  rebuild_by_forward(r, mode, {0, 1}, read, y, 12);
  return r;
}

void GridSampleOp::forward(const OpContext& ctx) {
  ctx.backend().grid_sample_forward(g_, ctx.input(0), ctx.input(1), ctx.output(0));
}

void GridSampleOp::backward(const OpContext& ctx) {
  const bool dx = ctx.needs_grad_input(0), dgrid = ctx.needs_grad_input(1);
  if (!dx && !dgrid) return;
  Tensor none_x, none_grid;
  ctx.backend().grid_sample_backward(g_, dgrid ? ctx.input(0) : none_x, ctx.input(1),
                                     ctx.grad_output(0), dx ? ctx.grad_input(0) : none_x,
                                     dgrid ? ctx.grad_input(1) : none_grid);
}

Value grid_sample(Value x, Value grid, GridSampleOptions o, std::source_location where) {
  return x.tape().record(std::make_unique<GridSampleOp>(o), {x, grid}, where)[0];
}

}  // namespace frugal
