// Pad forward and backward, with its roles.
#include "layers/pad.h"

#include <algorithm>
#include <cmath>

#include "core/copy_box.h"
#include "layers/concat.h"
#include "layers/slice.h"

namespace frugal {

std::vector<TensorMeta> PadOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "pad: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "pad: input must be f32 or f64, got ", dtype_name(in[0].dtype));
  const Shape& s = in[0].shape;
  FRUGAL_CHECK(s.rank() >= 1 && s.rank() <= CopyBox::kMaxRank &&
                   static_cast<int>(o_.before.size()) == s.rank() &&
                   static_cast<int>(o_.after.size()) == s.rank(),
               "pad: ", o_.before.size(), " and ", o_.after.size(), " amounts for x ", s,
               " (one per axis before and after, ranks 1 to 6)");
  FRUGAL_CHECK(std::isfinite(o_.value), "pad: the value ", o_.value, " is not finite");
  FRUGAL_CHECK(o_.before[0] == 0 && o_.after[0] == 0, "pad: the batch axis of x ", s,
               " is not padded");
  y_ = in[0];
  for (int k = 0; k < s.rank(); ++k) {
    const auto u = static_cast<size_t>(k);
    const int64_t b = o_.before[u], a = o_.after[u], most = int64_t{1} << 30;
    // Bounded before the sum, which could overflow otherwise (found by fuzz_onnx).
    FRUGAL_CHECK(b >= -most && b <= most && a >= -most && a <= most, "pad: axis ", k, " of x ", s,
                 " padded by ", b, " and ", a, " (at most 2^30 either way)");
    const int64_t n = s[k] + b + a;
    FRUGAL_CHECK(b >= -s[k] && a >= -s[k] && n >= 1, "pad: axis ", k, " of x ", s, " padded by ", b,
                 " and ", a, " leaves ", n, " (must be >= 1)");
    y_.shape[k] = n;
  }
  x_ = in[0];
  return {y_};
}

std::vector<int64_t> PadOp::shift() const {
  std::vector<int64_t> s = o_.before;
  for (int64_t& v : s) v = -v;
  return s;
}

Roles PadOp::roles(Mode mode, const Backend&) const {
  Roles r;
  rebuild_by_forward(r, mode, {0}, static_cast<double>(x_.bytes()), y_, 0);
  return r;
}

// y = value everywhere, then x where it lands.
void PadOp::forward(const OpContext& ctx) {
  Tensor& y = ctx.output(0);
  ctx.backend().fill(y, o_.value);
  ctx.backend().strided_copy(shifted_box(x_.shape, y_.shape, shift()), ctx.input(0), y);
}

// dx = dy where x landed; 0 where x was cropped away.
void PadOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  Tensor& dx = ctx.grad_input(0);
  bool crops = false;
  for (size_t k = 0; k < o_.before.size(); ++k)
    crops = crops || o_.before[k] < 0 || o_.after[k] < 0;
  if (crops) ctx.backend().fill(dx, 0.0);
  ctx.backend().strided_copy(shifted_box(y_.shape, x_.shape, o_.before), ctx.grad_output(0), dx);
}

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::edge:
      return "edge";
  }
  return "?";
}

// Reflect and edge borders record an op per border element: a bound on how many.
constexpr int64_t kMaxBorder = 4096;

Value pad(Value x, PadOptions o, std::source_location where) {
  if (o.mode == PadMode::constant)
    return x.tape().record(std::make_unique<PadOp>(std::move(o)), {x}, where)[0];
  const Shape s = x.shape();
  const char* mode = pad_mode_name(o.mode);
  FRUGAL_CHECK(s.rank() >= 2 && static_cast<int>(o.before.size()) == s.rank() &&
                   static_cast<int>(o.after.size()) == s.rank(),
               "pad (", mode, "): ", o.before.size(), " and ", o.after.size(), " amounts for x ", s,
               " (one per axis before and after, rank 2 or more)");
  FRUGAL_CHECK(o.before[0] == 0 && o.after[0] == 0, "pad (", mode, "): the batch axis of x ", s,
               " is not padded");
  // Crops first, through the constant op (its value is never read).
  PadOptions crop{.before = o.before, .after = o.after};
  bool crops = false;
  for (size_t k = 0; k < crop.before.size(); ++k) {
    crops = crops || crop.before[k] < 0 || crop.after[k] < 0;
    crop.before[k] = std::min<int64_t>(crop.before[k], 0);
    crop.after[k] = std::min<int64_t>(crop.after[k], 0);
  }
  if (crops) x = pad(x, crop, where);
  for (int64_t k = 1; k < s.rank(); ++k) {
    const auto u = static_cast<size_t>(k);
    const int64_t b = std::max<int64_t>(o.before[u], 0), a = std::max<int64_t>(o.after[u], 0);
    if (b == 0 && a == 0) continue;
    const int64_t n = x.shape()[k];
    FRUGAL_CHECK(o.mode != PadMode::reflect || (b < n && a < n), "pad (reflect): axis ", k,
                 " of x ", s, " padded by ", b, " and ", a,
                 "; reflection needs each amount below the axis' extent, ", n);
    FRUGAL_CHECK(b <= kMaxBorder && a <= kMaxBorder, "pad (", mode, "): axis ", k, " of x ", s,
                 " padded by ", b, " and ", a, " (at most ", kMaxBorder, " a side)");
    auto at = [&](int64_t i) { return slice(x, k, i, i + 1, 1, where); };
    std::vector<Value> pieces;
    if (o.mode == PadMode::reflect) {
      for (int64_t i = b; i >= 1; --i) pieces.push_back(at(i));
      pieces.push_back(x);
      for (int64_t i = 1; i <= a; ++i) pieces.push_back(at(n - 1 - i));
    } else {  // one slice of each edge, read as many times as it is repeated
      if (b > 0) pieces.assign(static_cast<size_t>(b), at(0));
      pieces.push_back(x);
      if (a > 0) pieces.insert(pieces.end(), static_cast<size_t>(a), at(n - 1));
    }
    x = concat(std::move(pieces), k, where);
  }
  return x;
}

}  // namespace frugal
