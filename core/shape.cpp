// Shape printing and dtype names.
#include "core/shape.h"

#include "core/dtype.h"
#include "core/error.h"

namespace frugal {

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

void Shape::throw_overflow() const {
  throw Error("shape " + str() + ": the element count overflows 64 bits");
}

std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.str();
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::i32:
      return 4;
    case DType::u8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::i32:
      return "i32";
    case DType::u8:
      return "u8";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::f32;
  if (s == "f64") return DType::f64;
  if (s == "i32") return DType::i32;
  if (s == "u8") return DType::u8;
  throw Error("unknown dtype '" + s + "' (expected f32, f64, i32 or u8)");
}

}  // namespace frugal
