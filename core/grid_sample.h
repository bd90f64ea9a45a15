// Sampling an image at the points of a grid (ONNX's GridSample, PyTorch's F.grid_sample: spatial
// transformers, warping by a flow): where each grid point reads the input and with which
// weights, and how its coordinates move the sample, one function each, shared by the CPU and
// CUDA kernels so both read the same neighbours with the same weights, as PyTorch's
// grid_sampler_2d computes them.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define FRUGAL_GRID_HD __host__ __device__
#else
#define FRUGAL_GRID_HD
#endif
#if defined(__CUDA_ARCH__)
#define FRUGAL_GRID_MATH(f) f  // CUDA's overloads for float and double
#else
#define FRUGAL_GRID_MATH(f) std::f
#endif

namespace frugal {

// Bilinear: the two by two neighbours, weighted; nearest: the nearest pixel (halves to even).
enum class GridSampleMode { bilinear, nearest };
// Points outside the image read zeros, the border's pixels, or the image reflected at its border.
enum class GridSamplePadding { zeros, border, reflection };

// x (N,C,H,W) sampled at grid (N,P,Q,2), whose last axis is (x, y) in [-1, 1] across the image:
// the corners' pixel centres (align_corners) or the image's edges; y (N,C,P,Q).
struct GridSampleGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;  // input
  int64_t P = 0, Q = 0;                // output (the grid's height and width)
  GridSampleMode mode = GridSampleMode::bilinear;
  GridSamplePadding padding = GridSamplePadding::zeros;
  bool align_corners = false;
};

// Where in [0, size) grid coordinate g lands, and its derivative by g (`grad`): unnormalized,
// then clipped (border) or reflected and clipped (reflection), as PyTorch's
// grid_sampler_compute_source_index_set_grad.
template <typename T>
FRUGAL_GRID_HD inline T grid_source(T g, int64_t size, GridSamplePadding padding,
                                    bool align_corners, T* grad) {
  const T n = static_cast<T>(size);
  T at, d;
  if (align_corners) {
    at = (g + T(1)) / T(2) * (n - T(1));
    d = (n - T(1)) / T(2);
  } else {
    at = ((g + T(1)) * n - T(1)) / T(2);
    d = n / T(2);
  }
  auto clip = [&](T v, T& m) {  // into [0, size - 1]; NaN to 0
    const T limit = n - T(1);
    m = T(0);
    if (!(v >= T(0))) return T(0);
    if (v > limit) return limit;
    m = T(1);
    return v;
  };
  if (padding == GridSamplePadding::border) {
    T m;
    at = clip(at, m);
    d *= m;
  } else if (padding == GridSamplePadding::reflection) {
    // Reflected about [low, high] (align_corners: the corner pixels' centres, 0 and size - 1;
    // else the edges, -1/2 and size - 1/2), then clipped.
    const T low = align_corners ? T(0) : T(-0.5), high = align_corners ? n - T(1) : n - T(0.5);
    T m = T(1);
    if (high <= low) {
      at = T(0), m = T(0);
    } else {
      const T span = high - low;
      T v = at - low;
      if (v < T(0)) {
        m = T(-1);
        v = -v;
      }
      const T extra = FRUGAL_GRID_MATH(fmod)(v, span);
      if (FRUGAL_GRID_MATH(fmod)(FRUGAL_GRID_MATH(floor)(v / span), T(2)) ==
          T(0)) {  // an even number of flips
        at = extra + low;
      } else {
        at = span - extra + low;
        m = -m;
      }
    }
    T c;
    at = clip(at, c);
    d *= m * c;
  }
  *grad = d;
  return at;
}

// A pixel index for coordinate v rounded down (bilinear) or to the nearest, halves to even
// (nearest); a coordinate that is not finite or lies far outside any image (zeros padding lets
// points anywhere) gives -2, whose taps all lie outside.
template <typename T>
FRUGAL_GRID_HD inline int64_t grid_index(T v, bool nearest) {
  constexpr T kFar = T(1 << 30);
  if (!(v > -kFar && v < kFar)) return -2;
  return static_cast<int64_t>(nearest ? FRUGAL_GRID_MATH(nearbyint)(v)
                                      : FRUGAL_GRID_MATH(floor)(v));
}

// One grid point's bilinear taps: rows y0, y0 + 1 and columns x0, x0 + 1 with weights (1 - fy,
// fy) and (1 - fx, fx); a tap outside the image reads 0 (zeros padding: border and reflection
// keep their points inside).
template <typename T>
struct GridTaps {
  int64_t x0, y0;
  T fx, fy;
};

template <typename T>
FRUGAL_GRID_HD inline GridTaps<T> grid_taps(T ix, T iy) {
  const int64_t x0 = grid_index(ix, false), y0 = grid_index(iy, false);
  return {x0, y0, x0 == -2 ? T(0) : ix - static_cast<T>(x0),
          y0 == -2 ? T(0) : iy - static_cast<T>(y0)};
}

// Whether (row, column) lies inside an H x W image.
FRUGAL_GRID_HD inline bool grid_inside(int64_t row, int64_t col, int64_t H, int64_t W) {
  return row >= 0 && row < H && col >= 0 && col < W;
}

// Grid point (n, p, q)'s source in pixels (ix across, iy down) and their derivatives by the
// point's two coordinates.
template <typename T>
struct GridSource {
  T ix, iy, dix, diy;
};

template <typename T>
FRUGAL_GRID_HD inline GridSource<T> grid_point(const GridSampleGeometry& g, const T* grid,
                                               int64_t n, int64_t p, int64_t q) {
  const T* at = grid + ((n * g.P + p) * g.Q + q) * 2;
  GridSource<T> s;
  s.ix = grid_source(at[0], g.W, g.padding, g.align_corners, &s.dix);
  s.iy = grid_source(at[1], g.H, g.padding, g.align_corners, &s.diy);
  return s;
}

// The input at (row, col) of plane xp (H x W), or 0 outside the image.
template <typename T>
FRUGAL_GRID_HD inline T grid_pixel(const T* xp, const GridSampleGeometry& g, int64_t row,
                                   int64_t col) {
  return grid_inside(row, col, g.H, g.W) ? xp[row * g.W + col] : T(0);
}

// The bilinear sample of plane xp at taps t.
template <typename T>
FRUGAL_GRID_HD inline T grid_bilinear(const T* xp, const GridSampleGeometry& g,
                                      const GridTaps<T>& t) {
  const T wx0 = T(1) - t.fx, wy0 = T(1) - t.fy;
  return grid_pixel(xp, g, t.y0, t.x0) * (wx0 * wy0) +
         grid_pixel(xp, g, t.y0, t.x0 + 1) * (t.fx * wy0) +
         grid_pixel(xp, g, t.y0 + 1, t.x0) * (wx0 * t.fy) +
         grid_pixel(xp, g, t.y0 + 1, t.x0 + 1) * (t.fx * t.fy);
}

// The bilinear sample's slopes along ix (*sx) and iy (*sy) at taps t of plane xp.
template <typename T>
FRUGAL_GRID_HD inline void grid_slopes(const T* xp, const GridSampleGeometry& g,
                                       const GridTaps<T>& t, T* sx, T* sy) {
  const T wx0 = T(1) - t.fx, wy0 = T(1) - t.fy;
  const T nw = grid_pixel(xp, g, t.y0, t.x0), ne = grid_pixel(xp, g, t.y0, t.x0 + 1);
  const T sw = grid_pixel(xp, g, t.y0 + 1, t.x0), se = grid_pixel(xp, g, t.y0 + 1, t.x0 + 1);
  *sx = (ne - nw) * wy0 + (se - sw) * t.fy;
  *sy = (sw - nw) * wx0 + (se - ne) * t.fx;
}

// The input gradient of plane nc of sample n (dxp, H x W): zeroed, then each output's dy
// (dyp: plane nc of dy, P x Q) added at its taps, walking the outputs in order (the same sums in
// the same order on every device and thread count).
template <typename T>
FRUGAL_GRID_HD inline void grid_plane_grad(const GridSampleGeometry& g, const T* grid, const T* dyp,
                                           int64_t n, T* dxp) {
  auto add = [&](int64_t row, int64_t col, T v) {
    if (grid_inside(row, col, g.H, g.W)) dxp[row * g.W + col] += v;
  };
  for (int64_t i = 0; i < g.H * g.W; ++i) dxp[i] = T(0);
  for (int64_t p = 0; p < g.P; ++p)
    for (int64_t q = 0; q < g.Q; ++q) {
      const GridSource<T> s = grid_point(g, grid, n, p, q);
      const T d = dyp[p * g.Q + q];
      if (g.mode == GridSampleMode::nearest) {
        add(grid_index(s.iy, true), grid_index(s.ix, true), d);
        continue;
      }
      const GridTaps<T> t = grid_taps(s.ix, s.iy);
      const T wx0 = T(1) - t.fx, wy0 = T(1) - t.fy;
      add(t.y0, t.x0, d * (wx0 * wy0));
      add(t.y0, t.x0 + 1, d * (t.fx * wy0));
      add(t.y0 + 1, t.x0, d * (wx0 * t.fy));
      add(t.y0 + 1, t.x0 + 1, d * (t.fx * t.fy));
    }
}

// The gradient of grid point (n, p, q)'s two coordinates (dg[0], dg[1]): its channels' slopes
// times dy summed in channel order, times the source's derivatives; 0 in nearest mode
// (piecewise constant, as PyTorch).
template <typename T>
FRUGAL_GRID_HD inline void grid_point_grad(const GridSampleGeometry& g, const T* x, const T* grid,
                                           const T* dy, int64_t n, int64_t p, int64_t q, T* dg) {
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

}  // namespace frugal
