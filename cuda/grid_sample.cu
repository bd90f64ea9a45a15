// The CUDA backend's sampling at a grid's points (core/grid_sample.h): forward one thread per
// output element; backward one thread per (n, c) plane of dx walking the outputs in the CPU's
// order (no atomics: the same sums every run, in the CPU's order), and one thread per grid point
// summing its channels in order.
#include "core/kernel_checks.h"
#include "cuda/cuda_backend.h"
#include "cuda/launch.cuh"

namespace frugal {

namespace {

template <typename T>
__device__ void add_at(T* dxp, const GridSampleGeometry& g, int64_t row, int64_t col, T v) {
  if (grid_inside(row, col, g.H, g.W)) dxp[row * g.W + col] += v;
}

template <typename T>
__global__ void forward_kernel(GridSampleGeometry g, const T* x, const T* grid, T* y) {
  const int64_t i = thread_index();
  if (i >= g.N * g.C * g.P * g.Q) return;
  const int64_t q = i % g.Q, p = i / g.Q % g.P, nc = i / (g.P * g.Q), n = nc / g.C;
  const GridSource<T> s = grid_point(g, grid, n, p, q);
  const T* xp = x + nc * g.H * g.W;
  if (g.mode == GridSampleMode::nearest) {
    y[i] = grid_pixel(xp, g, grid_index(s.iy, true), grid_index(s.ix, true));
    return;
  }
  y[i] = grid_bilinear(xp, g, grid_taps(s.ix, s.iy));
}

template <typename T>
__global__ void input_grad_kernel(GridSampleGeometry g, const T* grid, const T* dy, T* dx) {
  const int64_t nc = thread_index();
  if (nc >= g.N * g.C) return;
  const int64_t n = nc / g.C, plane = g.H * g.W;
  T* dxp = dx + nc * plane;
  for (int64_t i = 0; i < plane; ++i) dxp[i] = T(0);
  for (int64_t p = 0; p < g.P; ++p)
    for (int64_t q = 0; q < g.Q; ++q) {
      const GridSource<T> s = grid_point(g, grid, n, p, q);
      const T d = dy[nc * g.P * g.Q + p * g.Q + q];
      if (g.mode == GridSampleMode::nearest) {
        add_at(dxp, g, grid_index(s.iy, true), grid_index(s.ix, true), d);
        continue;
      }
      const GridTaps<T> t = grid_taps(s.ix, s.iy);
      const T wx0 = T(1) - t.fx, wy0 = T(1) - t.fy;
      add_at(dxp, g, t.y0, t.x0, d * (wx0 * wy0));
      add_at(dxp, g, t.y0, t.x0 + 1, d * (t.fx * wy0));
      add_at(dxp, g, t.y0 + 1, t.x0, d * (wx0 * t.fy));
      add_at(dxp, g, t.y0 + 1, t.x0 + 1, d * (t.fx * t.fy));
    }
}

template <typename T>
__global__ void grid_grad_kernel(GridSampleGeometry g, const T* x, const T* grid, const T* dy,
                                 T* dgrid) {
  const int64_t i = thread_index();
  if (i >= g.N * g.P * g.Q) return;
  const int64_t q = i % g.Q, p = i / g.Q % g.P, n = i / (g.P * g.Q);
  T* dg = dgrid + i * 2;
  if (g.mode == GridSampleMode::nearest) {
    dg[0] = dg[1] = T(0);
    return;
  }
  const GridSource<T> s = grid_point(g, grid, n, p, q);
  const GridTaps<T> t = grid_taps(s.ix, s.iy);
  T gx = 0, gy = 0;
  for (int64_t c = 0; c < g.C; ++c) {
    T sx, sy;
    grid_slopes(x + (n * g.C + c) * g.H * g.W, g, t, &sx, &sy);
    const T d = dy[(n * g.C + c) * g.P * g.Q + p * g.Q + q];
    gx += d * sx;
    gy += d * sy;
  }
  dg[0] = gx * s.dix;
  dg[1] = gy * s.diy;
}

template <typename T>
void backward_t(const GridSampleGeometry& g, const Tensor& x, const Tensor& grid, const Tensor& dy,
                Tensor& dx, Tensor& dgrid) {
  if (dx.defined())
    launch(g.N * g.C, input_grad_kernel<T>, g, grid.device_data<T>(), dy.device_data<T>(),
           dx.device_data<T>());
  if (dgrid.defined())
    launch(g.N * g.P * g.Q, grid_grad_kernel<T>, g, x.device_data<T>(), grid.device_data<T>(),
           dy.device_data<T>(), dgrid.device_data<T>());
}

}  // namespace

void CudaBackend::grid_sample_forward(const GridSampleGeometry& g, const Tensor& x,
                                      const Tensor& grid, Tensor& y) {
  check_defined("grid_sample", "x", x);
  check_defined("grid_sample", "grid", grid);
  check_defined("grid_sample", "y", y);
  check_grid_sample("grid_sample", g, x, grid, y, device());
  const int64_t n = g.N * g.C * g.P * g.Q;
  if (x.dtype() == DType::f32)
    launch(n, forward_kernel<float>, g, x.device_data<float>(), grid.device_data<float>(),
           y.device_data<float>());
  else
    launch(n, forward_kernel<double>, g, x.device_data<double>(), grid.device_data<double>(),
           y.device_data<double>());
}

void CudaBackend::grid_sample_backward(const GridSampleGeometry& g, const Tensor& x,
                                       const Tensor& grid, const Tensor& dy, Tensor& dx,
                                       Tensor& dgrid) {
  check_defined("grid_sample backward", "grid", grid);
  check_defined("grid_sample backward", "dy", dy);
  if (dgrid.defined()) check_defined("grid_sample backward", "x", x);
  check_grid_sample("grid_sample backward", g, x, grid, dy, device());
  check_grid_sample("grid_sample backward", g, dx, dgrid, dy, device());
  if (dy.dtype() == DType::f32)
    backward_t<float>(g, x, grid, dy, dx, dgrid);
  else
    backward_t<double>(g, x, grid, dy, dx, dgrid);
}

}  // namespace frugal
