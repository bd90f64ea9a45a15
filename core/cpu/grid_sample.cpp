// The CPU's sampling at a grid's points (core/grid_sample.h): forward samples in parallel over
// the batch and the grid's rows, each point's taps found once for all channels; backward adds
// each dy into its inputs sample by sample, channel by channel in output order (one order on any
// thread count), and sums each point's coordinate derivatives over its channels in order.
#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

template <typename T>
void forward_t(const GridSampleGeometry& g, const T* x, const T* grid, T* y) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q) {
        const GridSource<T> s = grid_point(g, grid, n, p, q);
        T* yp = y + n * g.C * g.P * g.Q + p * g.Q + q;
        const T* xn = x + n * g.C * g.H * g.W;
        if (g.mode == GridSampleMode::nearest) {
          const int64_t col = grid_index(s.ix, true), row = grid_index(s.iy, true);
          for (int64_t c = 0; c < g.C; ++c)
            yp[c * g.P * g.Q] = grid_pixel(xn + c * g.H * g.W, g, row, col);
          continue;
        }
        const GridTaps<T> t = grid_taps(s.ix, s.iy);
        for (int64_t c = 0; c < g.C; ++c)
          yp[c * g.P * g.Q] = grid_bilinear(xn + c * g.H * g.W, g, t);
      }
}

template <typename T>
void backward_t(const GridSampleGeometry& g, const T* x, const T* grid, const T* dy, T* dx,
                T* dgrid) {
  const int64_t plane = g.H * g.W, out = g.P * g.Q;
  if (dx) {  // planes in parallel, each walking the outputs in order
#pragma omp parallel for schedule(static)
    for (int64_t nc = 0; nc < g.N * g.C; ++nc)
      grid_plane_grad(g, grid, dy + nc * out, nc / g.C, dx + nc * plane);
  }
  if (!dgrid) return;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t p = 0; p < g.P; ++p)
      for (int64_t q = 0; q < g.Q; ++q)
        grid_point_grad(g, x, grid, dy, n, p, q, dgrid + ((n * g.P + p) * g.Q + q) * 2);
}

}  // namespace

void CpuBackend::grid_sample_forward(const GridSampleGeometry& g, const Tensor& x,
                                     const Tensor& grid, Tensor& y) {
  check_defined("grid_sample", "x", x);
  check_defined("grid_sample", "grid", grid);
  check_defined("grid_sample", "y", y);
  check_grid_sample("grid_sample", g, x, grid, y, device());
  if (x.dtype() == DType::f32)
    forward_t(g, x.data<float>(), grid.data<float>(), y.data<float>());
  else
    forward_t(g, x.data<double>(), grid.data<double>(), y.data<double>());
}

void CpuBackend::grid_sample_backward(const GridSampleGeometry& g, const Tensor& x,
                                      const Tensor& grid, const Tensor& dy, Tensor& dx,
                                      Tensor& dgrid) {
  check_defined("grid_sample backward", "grid", grid);
  check_defined("grid_sample backward", "dy", dy);
  if (dgrid.defined()) check_defined("grid_sample backward", "x", x);
  check_grid_sample("grid_sample backward", g, x, grid, dy, device());
  check_grid_sample("grid_sample backward", g, dx, dgrid, dy, device());
  if (dy.dtype() == DType::f32)
    backward_t(g, x.defined() ? x.data<float>() : nullptr, grid.data<float>(), dy.data<float>(),
               dx.defined() ? dx.data<float>() : nullptr,
               dgrid.defined() ? dgrid.data<float>() : nullptr);
  else
    backward_t(g, x.defined() ? x.data<double>() : nullptr, grid.data<double>(), dy.data<double>(),
               dx.defined() ? dx.data<double>() : nullptr,
               dgrid.defined() ? dgrid.data<double>() : nullptr);
}

}  // namespace frugal
