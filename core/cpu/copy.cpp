// The CPU's strided copy: the simplified box's innermost axis as one memcpy where it is
// contiguous in x and y, else element by element; rows split over the threads.
#include <cstring>

#include "core/cpu/cpu_backend.h"
#include "core/kernel_checks.h"

namespace frugal {

namespace {

// Copies the elements of one innermost row (size n, strides sx, sy in elements of T).
template <typename T>
void copy_row(const T* x, T* y, int64_t n, int64_t sx, int64_t sy) {
  for (int64_t i = 0; i < n; ++i) y[i * sy] = x[i * sx];
}

template <typename T>
void copy_box(const CopyBox& b, const char* xp, char* yp) {
  const int last = b.rank - 1;
  const auto l = static_cast<size_t>(last);
  const int64_t n = b.size[l], sx = b.x_stride[l], sy = b.y_stride[l];
  int64_t rows = 1;
  for (int k = 0; k < last; ++k) rows *= b.size[static_cast<size_t>(k)];
  const T* x = reinterpret_cast<const T*>(xp) + b.x_offset;
  T* y = reinterpret_cast<T*>(yp) + b.y_offset;
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t ox = 0, oy = 0, rest = r;
    for (int k = last - 1; k >= 0; --k) {
      const auto u = static_cast<size_t>(k);
      const int64_t i = rest % b.size[u];
      rest /= b.size[u];
      ox += i * b.x_stride[u];
      oy += i * b.y_stride[u];
    }
    if (sx == 1 && sy == 1)
      std::memcpy(y + oy, x + ox, static_cast<size_t>(n) * sizeof(T));
    else
      copy_row(x + ox, y + oy, n, sx, sy);
  }
}

}  // namespace

void CpuBackend::strided_copy(const CopyBox& g, const Tensor& x, Tensor& y) {
  check_strided_copy(g, x, y, device());
  const CopyBox b = g.simplified();
  if (b.numel() == 0) return;
  const char* xp = static_cast<const char*>(x.raw());
  char* yp = static_cast<char*>(y.raw());
  switch (dtype_size(x.dtype())) {
    case 1:
      return copy_box<uint8_t>(b, xp, yp);
    case 2:
      return copy_box<uint16_t>(b, xp, yp);
    case 4:
      return copy_box<uint32_t>(b, xp, yp);
    case 8:
      return copy_box<uint64_t>(b, xp, yp);
    default:
      throw Error("strided_copy: elements of " + std::to_string(dtype_size(x.dtype())) + " bytes");
  }
}

}  // namespace frugal
