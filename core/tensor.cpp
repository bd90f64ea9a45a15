// Tensor views, storage ownership and small host helpers.
#include "core/tensor.h"

#include <cstring>

namespace frugal {

Storage::Storage(Allocator& alloc, size_t bytes, Role role)
    : alloc_(&alloc), bytes_(bytes), role_(role), device_(alloc.device()) {
  data_ = alloc_->allocate(bytes, role);
}

Storage::Storage(void* data, size_t bytes, Device device, Role role)
    : data_(data), bytes_(bytes), role_(role), device_(device) {}

Storage::~Storage() {
  if (alloc_) alloc_->release(data_, bytes_, role_);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, size_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset), meta_{std::move(shape), dtype} {
  FRUGAL_CHECK(storage_ == nullptr || offset_ + meta_.bytes() <= storage_->bytes(), "tensor ",
               meta_.shape, " ", dtype_name(dtype), " at offset ", offset_,
               " does not fit its storage of ", storage_->bytes(), " bytes");
}

void Tensor::throw_not_host() const {
  throw Error(detail::concat("tensor ", meta_.shape, " ", dtype_name(meta_.dtype), " lives on ",
                             device().str(), "; copy it to the host through the backend first ",
                             "(Backend::copy_to_host)"));
}

size_t TensorMeta::bytes() const {
  int64_t b = 0;
  FRUGAL_CHECK(!__builtin_mul_overflow(shape.numel(), int64_t(dtype_size(dtype)), &b), "tensor ",
               shape, " ", dtype_name(dtype), ": the byte count overflows 64 bits");
  return static_cast<size_t>(b);
}

Tensor Tensor::empty(Shape shape, DType dtype, Role role, Allocator& alloc) {
  TensorMeta m{shape, dtype};
  auto s = std::make_shared<Storage>(alloc, m.bytes(), role);
  return Tensor(std::move(s), 0, std::move(shape), dtype);
}

Tensor Tensor::zeros(Shape shape, DType dtype, Role role, Allocator& alloc) {
  FRUGAL_CHECK(alloc.device().is_host(), "Tensor::zeros: host memory only, not ",
               alloc.device().str(), " (fill device memory through its backend)");
  Tensor t = empty(std::move(shape), dtype, role, alloc);
  std::memset(t.raw(), 0, t.bytes());
  return t;
}

Tensor Tensor::reshape(Shape s) const {
  FRUGAL_CHECK(s.numel() == numel(), "reshape: ", meta_.shape, " has ", numel(),
               " elements, cannot view as ", s);
  return Tensor(storage_, offset_, std::move(s), meta_.dtype);
}

Tensor Tensor::elements(int64_t begin, int64_t count) const {
  FRUGAL_CHECK(begin >= 0 && count >= 0 && begin + count <= numel(), "elements: [", begin, ", ",
               begin + count, ") is not within the ", numel(), " elements of ", meta_.shape);
  return Tensor(storage_, offset_ + static_cast<size_t>(begin) * dtype_size(meta_.dtype),
                Shape{count}, meta_.dtype);
}

double element_as_double(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32:
      return t.data<float>()[i];
    case DType::f64:
      return t.data<double>()[i];
    case DType::i32:
      return t.data<int32_t>()[i];
    case DType::u8:
      return t.data<uint8_t>()[i];
  }
  return 0;
}

void copy_bytes(const Tensor& src, Tensor& dst) {
  FRUGAL_CHECK(src.bytes() == dst.bytes(), "copy: source ", src.shape(), " ",
               dtype_name(src.dtype()), " and destination ", dst.shape(), " ",
               dtype_name(dst.dtype()), " differ in size");
  std::memmove(dst.raw(), src.raw(), src.bytes());
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.meta() == b.meta() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

}  // namespace frugal
