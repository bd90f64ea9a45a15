// Joins, slices and splits along an axis 0 that is not the batch's (models/onnx_layout.h).
#include "models/onnx_layout.h"

#include <map>

#include "core/error.h"
#include "layers/concat.h"
#include "layers/reshape.h"
#include "layers/slice.h"
#include "layers/split.h"

namespace frugal {

Value join_leading(std::span<const Value> parts) {
  const Shape s = parts[0].shape();  // copies: values are recorded over below
  std::vector<int64_t> d(s.dims().begin(), s.dims().end());
  d[0] = 0;
  std::vector<Value> flat;
  std::map<int, Value> rows;  // one (1, numel) view per distinct part (a Tile's copies are one)
  for (const Value& v : parts) {
    const Shape p = v.shape();
    FRUGAL_CHECK(p.rank() == s.rank(), "joining ", s, " and ", p, " along axis 0: ranks differ");
    for (int k = 1; k < s.rank(); ++k)
      FRUGAL_CHECK(p[k] == s[k], "joining ", s, " and ", p, " along axis 0: axis ", k, " differs");
    d[0] += p[0];
    auto [it, fresh] = rows.try_emplace(v.id(), v);
    if (fresh) it->second = reshape(v, Shape{1, p.numel()});
    flat.push_back(it->second);
  }
  return reshape(flat.size() == 1 ? flat[0] : concat(flat, 1), Shape(d));
}

Value slice_leading(Value x, int64_t begin, int64_t end, int64_t step) {
  std::vector<int64_t> d(x.shape().dims().begin(), x.shape().dims().end());
  d.insert(d.begin(), 1);
  const Value y = slice(reshape(x, Shape(d)), 1, begin, end, step);
  const std::vector<int64_t> e = y.shape().dims();  // a copy
  return reshape(y, Shape(std::vector<int64_t>(e.begin() + 1, e.end())));
}

std::vector<Value> split_leading(Value v, const Shape& each) {
  const int64_t k = v.shape()[0], rest = v.shape().numel() / k;
  if (k == 1) return {reshape(v, each)};
  std::vector<Value> p = split(reshape(v, Shape{1, k, rest}), 1, std::vector<int64_t>(k, 1));
  for (Value& x : p) x = reshape(x, each);
  return p;
}

}  // namespace frugal
