// Tensor: a dense row-major view (shape, dtype) at a byte offset into a shared Storage.
// Many tensors may view one Storage: that is how a planned arena holds every buffer.
#pragma once

#include <cstddef>
#include <memory>

#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace frugal {

// Shape and element type of a tensor, without memory.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::f32;
  // numel() times the element size; throws if that does not fit in int64.
  size_t bytes() const;
  bool operator==(const TensorMeta&) const = default;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype);
  // A fresh tensor with its own storage from `alloc` (contents uninitialized).
  static Tensor empty(Shape shape, DType dtype, Role role = Role::input,
                      Allocator& alloc = cpu_allocator());
  static Tensor zeros(Shape shape, DType dtype, Role role = Role::input,
                      Allocator& alloc = cpu_allocator());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return meta_.shape; }
  DType dtype() const { return meta_.dtype; }
  const TensorMeta& meta() const { return meta_; }
  int64_t numel() const { return meta_.shape.numel(); }
  size_t bytes() const { return meta_.bytes(); }
  Device device() const { return storage_ ? storage_->device() : Device{}; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  size_t offset() const { return offset_; }

  // Host pointer to the bytes; throws unless the tensor lives in host memory (a device's
  // tensor is read by copying it to the host through its backend: Backend::copy_to_host).
  void* raw() const {
    if (!device().is_host()) throw_not_host();
    return device_raw();
  }
  // Typed host pointer; throws as raw() does, or if T does not match dtype().
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(raw());
  }
  // The bytes' address on the tensor's device, for that device's backend alone: host code
  // never dereferences it (a CUDA or sim address faults on the host).
  void* device_raw() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* device_data() const {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(device_raw());
  }
  // Same bytes, another shape with the same element count.
  Tensor reshape(Shape s) const;
  // Elements [begin, begin + count) in row-major order, as a 1-D view of the same bytes.
  Tensor elements(int64_t begin, int64_t count) const;

 private:
  [[noreturn]] void throw_not_host() const;
  void check_dtype(DType t) const {
    FRUGAL_CHECK(meta_.dtype == t, "tensor ", meta_.shape, " is ", dtype_name(meta_.dtype),
                 ", accessed as ", dtype_name(t));
  }

  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  TensorMeta meta_;
};

// Host helpers for tests and tools (not for hot paths).
double element_as_double(const Tensor& t, int64_t i);
void copy_bytes(const Tensor& src, Tensor& dst);  // same bytes(), host memory
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace frugal
