// Shape of a dense row-major tensor: a short list of extents, outermost first.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace frugal {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_.at(static_cast<size_t>(i)); }
  int64_t& operator[](int i) { return dims_.at(static_cast<size_t>(i)); }
  // Product of all extents (1 for rank 0); throws if it does not fit in int64 (a shape read
  // from a file: readers check theirs first, naming the file and the field).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims_)
      if (__builtin_mul_overflow(n, d, &n)) throw_overflow();
    return n;
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape&) const = default;
  // "[64,3,32,32]"
  std::string str() const;

 private:
  [[noreturn]] void throw_overflow() const;
  std::vector<int64_t> dims_;
};

std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace frugal
