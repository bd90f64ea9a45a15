// Element types: f32 (training), f64 (gradient checks, optnet's CPU tables), i32 (labels,
// indices), u8 (compact saved encodings: bit masks, window-argmax indices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace frugal {

enum class DType { f32, f64, i32, u8 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
// Parses "f32", "f64", "i32", "u8"; throws on anything else.
DType parse_dtype(const std::string& s);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::u8;
}

}  // namespace frugal
