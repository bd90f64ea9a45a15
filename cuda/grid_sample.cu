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
  grid_plane_grad(g, grid, dy + nc * g.P * g.Q, nc / g.C, dx + nc * g.H * g.W);
}

template <typename T>
__global__ void grid_grad_kernel(GridSampleGeometry g, const T* x, const T* grid, const T* dy,
                                 T* dgrid) {
  const int64_t i = thread_index();
  if (i >= g.N * g.P * g.Q) return;
  grid_point_grad(g, x, grid, dy, i / (g.P * g.Q), i / g.Q % g.P, i % g.Q, dgrid + i * 2);
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
