// A box of elements copied between two dense tensors through strides: the one kernel behind
// every op that only moves data (transpose, slice, split, pad, concat on any axis). The box
// builders below describe those moves; Backend::strided_copy runs a box.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/shape.h"

namespace frugal {

// For every index i of the box (each i_k in [0, size[k])):
//   y[y_offset + sum_k i_k y_stride[k]] = x[x_offset + sum_k i_k x_stride[k]]   (in elements).
struct CopyBox {
  static constexpr int kMaxRank = 6;
  int rank = 0;
  int64_t size[kMaxRank]{}, x_stride[kMaxRank]{}, y_stride[kMaxRank]{};
  int64_t x_offset = 0, y_offset = 0;

  int64_t numel() const;
  // The same copy with unit axes dropped and neighbouring axes that are contiguous in both x
  // and y merged (a box of one axis of stride 1 is a memcpy). Kernels run the simplified box.
  CopyBox simplified() const;
  std::string str() const;
};

// Row-major strides of a shape, in elements.
std::vector<int64_t> row_strides(const Shape& s);

// y = x with its axes permuted: y's axis k is x's axis perm[k] (perm a permutation of
// 0..rank-1, rank <= kMaxRank). y's shape is permuted_shape(x, perm).
CopyBox permute_box(const Shape& x, std::span<const int64_t> perm);
Shape permuted_shape(const Shape& x, std::span<const int64_t> perm);

// x and y of one rank, y's element j taken from x's element j + shift (per axis; negative
// shifts pad, positive ones slice): the box of every j where both exist. Copies from y into x
// with the shift negated are its inverse (a slice's backward, a pad's backward).
CopyBox shifted_box(const Shape& x, const Shape& y, std::span<const int64_t> shift);

}  // namespace frugal
