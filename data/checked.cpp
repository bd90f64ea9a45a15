// Checked size arithmetic and bounded allocation for the readers (data/idx, cifar, safetensors).
#include "data/checked.h"

#include <cstdio>
#include <new>

#include "core/error.h"

namespace frugal {

int64_t checked_mul(const std::string& path, const std::string& field, int64_t a, int64_t b) {
  int64_t r = 0;
  FRUGAL_CHECK(a >= 0 && b >= 0 && !__builtin_mul_overflow(a, b, &r), path, ": ", field, ": ", a,
               " x ", b, " overflows 64 bits (corrupt header?)");
  return r;
}

int64_t checked_add(const std::string& path, const std::string& field, int64_t a, int64_t b) {
  int64_t r = 0;
  FRUGAL_CHECK(a >= 0 && b >= 0 && !__builtin_add_overflow(a, b, &r), path, ": ", field, ": ", a,
               " + ", b, " overflows 64 bits (corrupt header?)");
  return r;
}

int64_t checked_count(const std::string& path, const std::string& field,
                      std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    FRUGAL_CHECK(d >= 0 && !__builtin_mul_overflow(n, d, &n), path, ": ", field, " ",
                 Shape(std::vector<int64_t>(dims.begin(), dims.end())),
                 ": the element count overflows 64 bits (corrupt header?)");
  }
  return n;
}

Tensor reader_tensor(const std::string& path, const std::string& field, const Shape& shape,
                     DType dtype) {
  const int64_t count = checked_count(path, field, shape.dims());
  const int64_t bytes = checked_mul(path, field + " bytes", count, int64_t(dtype_size(dtype)));
  FRUGAL_CHECK(bytes <= kMaxReadTensorBytes, path, ": ", field, " ", shape, " ", dtype_name(dtype),
               " would take ", readable_bytes(bytes), ", over the limit of ",
               readable_bytes(kMaxReadTensorBytes), " for one tensor");
  try {
    return Tensor::empty(shape, dtype);
  } catch (const std::bad_alloc&) {
  } catch (const Error&) {  // the allocator's own out-of-memory error
  }
  throw Error(detail::concat(path, ": ", field, " ", shape, " ", dtype_name(dtype),
                             ": out of memory allocating ", readable_bytes(bytes)));
}

std::string readable_bytes(int64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " bytes";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f %s (%lld bytes)", v, units[u], (long long)bytes);
  return text;
}

}  // namespace frugal
