// The passes of a 3-D convolution over depth planes in scratch (layers/conv3d_planes.h).
#include "layers/conv3d_planes.h"

#include <algorithm>
#include <utility>

#include "core/broadcast.h"
#include "core/copy_box.h"

namespace frugal {

namespace {

constexpr size_t kAlign = 256;  // bytes between the pieces of scratch
size_t aligned(size_t bytes) {
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

// Consecutive views of one scratch buffer.
class Carve {
 public:
  Carve(const Tensor& scratch, DType t, const char* op) : s_(scratch), t_(t), op_(op) {}
  Tensor next(Shape shape) {
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(t_);
    FRUGAL_CHECK(s_.defined() && at_ + bytes <= s_.bytes(), op_, ": scratch of ",
                 s_.defined() ? s_.bytes() : 0, " bytes, needs more than ", at_ + bytes);
    Tensor v(s_.storage(), s_.offset() + at_, std::move(shape), t_);
    at_ += aligned(bytes);
    return v;
  }
  // The rest, as bytes (the 2-D convolution's own scratch).
  Tensor rest() const {
    const size_t left = s_.defined() && s_.bytes() > at_ ? s_.bytes() - at_ : 0;
    if (left == 0) return Tensor();
    return Tensor(s_.storage(), s_.offset() + at_, Shape{static_cast<int64_t>(left)}, DType::u8);
  }

 private:
  const Tensor& s_;
  DType t_;
  const char* op_;
  size_t at_ = 0;
};

// A box over up to four axes: sizes, x's and y's strides, offsets (elements).
CopyBox box4(std::initializer_list<int64_t> size, std::initializer_list<int64_t> xs,
             std::initializer_list<int64_t> ys, int64_t x_offset, int64_t y_offset) {
  CopyBox b;
  b.rank = static_cast<int>(size.size());
  std::copy(size.begin(), size.end(), b.size);
  std::copy(xs.begin(), xs.end(), b.x_stride);
  std::copy(ys.begin(), ys.end(), b.y_stride);
  b.x_offset = x_offset, b.y_offset = y_offset;
  return b;
}

}  // namespace

Conv3dPlanes::Conv3dPlanes(const char* op, const Shape& x, const Shape& w, const Conv3dParams& p,
                           DType t)
    : op_(op), p_(p), dtype_(t) {
  check_conv_params(op, p.plane);
  FRUGAL_CHECK(p.stride_d >= 1 && p.dilation_d >= 1 && p.pad_front >= 0 && p.pad_back >= 0, op,
               ": depth stride ", p.stride_d, " and dilation ", p.dilation_d,
               " must be >= 1, pads ", p.pad_front, ",", p.pad_back, " >= 0");
  N_ = x[0], C_ = x[1], D_ = x[2], H_ = x[3], W_ = x[4], K_ = w[0], kd_ = w[2], kh_ = w[3],
  kw_ = w[4];
  const int64_t sd = p.stride_d, dd = p.dilation_d, pf = p.pad_front;
  Do_ = conv_output_size(D_, kd_, sd, pf, p.pad_back, dd);
  FRUGAL_CHECK(Do_ >= 1, op, ": a depth window of ", kd_, " (dilation ", dd,
               ") is deeper than the padded input's ", D_ + pf + p.pad_back, " planes (x ", x,
               ", w ", w, ")");
  if (kd_ == 1) {  // only the planes the outputs read: o * sd - pf for o in [lo, hi)
    const int64_t lo = (pf + sd - 1) / sd, hi = std::min(Do_, (D_ - 1 + pf) / sd + 1);
    // hi <= lo: every output plane reads the padding (zeros, the bias alone), as PyTorch gives.
    planes_ = std::max<int64_t>(hi - lo, 0), first_plane_ = lo * sd - pf, plane_stride_ = sd;
    plane_step_ = 1;
  } else {
    planes_ = D_, first_plane_ = 0, plane_stride_ = 1, plane_step_ = sd;
  }
  chunk_ = planes_ == 0
               ? N_
               : std::min(N_, std::max<int64_t>(1, (kChunkPlanes + planes_ - 1) / planes_));
  g_ = chunk_geometry(chunk_);
  FRUGAL_CHECK(g_.P >= 1 && g_.Q >= 1, op, ": kernel ", kh_, "x", kw_,
               " is larger than the padded input planes ",
               H_ + p.plane.pad_top + p.plane.pad_bottom, "x",
               W_ + p.plane.pad_left + p.plane.pad_right, " (x ", x, ", w ", w, ")");
}

Conv2dGeometry Conv3dPlanes::chunk_geometry(int64_t samples) const {
  const Conv2dParams& p = p_.plane;
  Conv2dGeometry g{
      .N = samples * planes_, .C = C_, .H = H_, .W = W_, .K = K_ * kd_, .R = kh_, .S = kw_};
  g.stride_h = p.stride_h, g.stride_w = p.stride_w, g.pad_h = p.pad_top, g.pad_w = p.pad_left;
  g.pad_h_end = p.pad_bottom, g.pad_w_end = p.pad_right, g.dilation_h = p.dilation_h;
  g.dilation_w = p.dilation_w, g.groups = p.groups;
  g.P = conv_output_size(H_, g.R, p.stride_h, p.pad_top, p.pad_bottom, p.dilation_h);
  g.Q = conv_output_size(W_, g.S, p.stride_w, p.pad_left, p.pad_right, p.dilation_w);
  return g;
}

double Conv3dPlanes::macs() const {
  return static_cast<double>(N_ * K_ * Do_ * g_.P * g_.Q) *
         static_cast<double>(C_ / p_.plane.groups * kd_ * kh_ * kw_);
}

int64_t Conv3dPlanes::tap_offset(int64_t tap) const {
  if (kd_ == 1) return -(first_plane_ + p_.pad_front) / p_.stride_d;  // plane j is output j + lo
  return tap * p_.dilation_d - p_.pad_front;
}

Conv3dPlanes::TapRange Conv3dPlanes::tap_range(int64_t tap) const {
  const int64_t off = tap_offset(tap), step = plane_step_;
  const int64_t lo = off >= 0 ? 0 : (-off + step - 1) / step;
  const int64_t hi = planes_ - 1 - off < 0 ? 0 : (planes_ - 1 - off) / step + 1;
  return {std::min(lo, Do_), std::clamp(hi, std::min(lo, Do_), Do_)};
}

size_t Conv3dPlanes::weight_bytes() const {
  return aligned(dtype_size(dtype_) * static_cast<size_t>(g_.K * g_.C / g_.groups * g_.R * g_.S));
}

size_t Conv3dPlanes::forward_scratch(const Backend& backend) const {
  if (planes_ == 0) return 0;
  const size_t e = dtype_size(dtype_);
  const int64_t out = Do_ * chunk_ * K_ * g_.P * g_.Q;
  size_t conv = backend.conv2d_forward_scratch(g_, dtype_);
  if (N_ % chunk_ != 0)
    conv = std::max(conv, backend.conv2d_forward_scratch(chunk_geometry(N_ % chunk_), dtype_));
  return weight_bytes() + aligned(e * static_cast<size_t>(g_.N * C_ * H_ * W_)) +
         aligned(e * static_cast<size_t>(g_.N * g_.K * g_.P * g_.Q)) +
         aligned(e * static_cast<size_t>(out)) * (kd_ > 1 ? 2 : 1) + conv;
}

size_t Conv3dPlanes::backward_scratch(const Backend& backend, bool data, bool filter) const {
  if ((!data && !filter) || planes_ == 0) return 0;
  const size_t e = dtype_size(dtype_);
  size_t conv = backend.conv2d_backward_scratch(g_, dtype_);
  if (N_ % chunk_ != 0)
    conv = std::max(conv, backend.conv2d_backward_scratch(chunk_geometry(N_ % chunk_), dtype_));
  const size_t weights = (data ? 1 : 0) + (filter ? (N_ > chunk_ ? 2 : 1) : 0);
  return weights * weight_bytes() + aligned(e * static_cast<size_t>(g_.N * C_ * H_ * W_)) +
         aligned(e * static_cast<size_t>(g_.N * g_.K * g_.P * g_.Q)) + conv;
}

// Per chunk of samples: its planes moved to xs (planes, samples, C, H, W), z = every plane by
// every (filter, tap) (planes, samples, K*kd, Ho*Wo), then sum (Do, samples, K, Ho*Wo) adds
// tap i's partial sums of the plane output o reads, taps in order (zero where a tap reads the
// padding); y's chunk is sum moved back to (samples, K, Do, Ho*Wo).
void Conv3dPlanes::forward(Backend& b, const Tensor& x, const Tensor& w, Tensor& y,
                           const Tensor& scratch) const {
  if (planes_ == 0) {  // every output reads the depth padding
    b.fill(y, 0.0);
    return;
  }
  const int64_t Cg = C_ / p_.plane.groups, R = g_.R, S = g_.S, HW = H_ * W_, HoWo = g_.P * g_.Q,
                kk = R * S;
  Carve carve(scratch, dtype_, op_);
  Tensor wt = carve.next(Shape{K_ * kd_, Cg, R, S});
  b.strided_copy(box4({K_, kd_, Cg, kk}, {Cg * kd_ * kk, kk, kd_ * kk, 1},
                      {kd_ * Cg * kk, Cg * kk, kk, 1}, 0, 0),
                 w, wt);
  Tensor xs_all = carve.next(Shape{g_.N, C_, H_, W_});
  Tensor z_all = carve.next(Shape{g_.N, g_.K, g_.P, g_.Q});
  Tensor sum_all = carve.next(Shape{Do_ * chunk_ * K_ * HoWo});
  Tensor tap_all = kd_ > 1 ? carve.next(Shape{Do_ * chunk_ * K_ * HoWo}) : Tensor();
  Tensor conv_scratch = carve.rest();
  for (int64_t n0 = 0; n0 < N_; n0 += chunk_) {
    const int64_t B = std::min(chunk_, N_ - n0);
    const Conv2dGeometry g = chunk_geometry(B);
    Tensor xs = xs_all.elements(0, g.N * C_ * HW).reshape(Shape{g.N, C_, H_, W_});
    b.strided_copy(box4({planes_, B, C_, HW}, {plane_stride_ * HW, C_ * D_ * HW, D_ * HW, 1},
                        {B * C_ * HW, C_ * HW, HW, 1}, (n0 * C_ * D_ + first_plane_) * HW, 0),
                   x, xs);
    Tensor z = z_all.elements(0, g.N * g.K * HoWo).reshape(Shape{g.N, g.K, g.P, g.Q});
    Tensor none;
    b.conv2d_forward(g, xs, wt, none, z, conv_scratch);
    const int64_t row = B * K_ * HoWo;  // one output plane of the chunk in sum
    Tensor sum = sum_all.elements(0, Do_ * row);
    for (int64_t i = 0; i < kd_; ++i) {
      const TapRange t = tap_range(i);
      if (i == 0 && (t.lo > 0 || t.hi < Do_)) b.fill(sum, 0.0);
      if (t.hi <= t.lo) continue;
      const bool first = i == 0;
      Tensor dst = first ? sum.elements(t.lo * row, (t.hi - t.lo) * row)
                         : tap_all.elements(0, (t.hi - t.lo) * row);
      b.strided_copy(box4({t.hi - t.lo, B, K_, HoWo},
                          {plane_step_ * B * g.K * HoWo, g.K * HoWo, kd_ * HoWo, 1},
                          {row, K_ * HoWo, HoWo, 1}, (plane_of(t.lo, i) * B * g.K + i) * HoWo, 0),
                     z, dst);
      if (!first) {
        Tensor part = sum.elements(t.lo * row, (t.hi - t.lo) * row);
        b.accumulate(dst, part);
      }
    }
    b.strided_copy(box4({B, K_, Do_, HoWo}, {K_ * HoWo, HoWo, row, 1},
                        {K_ * Do_ * HoWo, Do_ * HoWo, HoWo, 1}, 0, n0 * K_ * Do_ * HoWo),
                   sum, y);
  }
}

// Per chunk: dz (planes, samples, K*kd, Ho*Wo) holds dy of output o at tap i's partial sums
// of the plane o reads (zero where no output reads that plane through that tap); the chunk's
// planes moved to xs; dw's taps (K*kd, C/groups, kh, kw) are the 2-D filter gradient of the
// chunks, added chunk after chunk; dxs = the 2-D data gradient over xs's bytes, moved back to
// dx's chunk (zero on planes no output reads).
void Conv3dPlanes::backward(Backend& b, const Tensor& x, const Tensor& dy, const Tensor& w,
                            Tensor* dx, Tensor* dw, const Tensor& scratch) const {
  const bool want_dx = dx != nullptr, want_dw = dw != nullptr;
  if (!want_dx && !want_dw) return;
  if (planes_ == 0) {  // no output reads x
    if (want_dx) b.fill(*dx, 0.0);
    if (want_dw) b.fill(*dw, 0.0);
    return;
  }
  const int64_t Cg = C_ / p_.plane.groups, R = g_.R, S = g_.S, HW = H_ * W_, HoWo = g_.P * g_.Q,
                kk = R * S;
  Carve carve(scratch, dtype_, op_);
  const Shape taps{K_ * kd_, Cg, R, S};
  Tensor wt = want_dx ? carve.next(taps) : Tensor();
  Tensor dwt = want_dw ? carve.next(taps) : Tensor();
  Tensor dwt_chunk = want_dw && N_ > chunk_ ? carve.next(taps) : Tensor();
  Tensor xs_all = carve.next(Shape{g_.N, C_, H_, W_});
  Tensor dz_all = carve.next(Shape{g_.N, g_.K, g_.P, g_.Q});
  Tensor conv_scratch = carve.rest();
  if (want_dx)
    b.strided_copy(box4({K_, kd_, Cg, kk}, {Cg * kd_ * kk, kk, kd_ * kk, 1},
                        {kd_ * Cg * kk, Cg * kk, kk, 1}, 0, 0),
                   w, wt);
  bool covered = true;  // whether every (plane, tap) is read by some output plane
  for (int64_t i = 0; i < kd_; ++i) {
    const TapRange t = tap_range(i);
    const int64_t reach = t.hi - t.lo;
    covered = covered && plane_step_ == 1 && reach == planes_;
  }
  for (int64_t n0 = 0; n0 < N_; n0 += chunk_) {
    const int64_t B = std::min(chunk_, N_ - n0);
    const Conv2dGeometry g = chunk_geometry(B);
    Tensor dz = dz_all.elements(0, g.N * g.K * HoWo).reshape(Shape{g.N, g.K, g.P, g.Q});
    if (!covered) b.fill(dz, 0.0);
    for (int64_t i = 0; i < kd_; ++i) {
      const TapRange t = tap_range(i);
      if (t.hi <= t.lo) continue;
      b.strided_copy(box4({t.hi - t.lo, B, K_, HoWo}, {HoWo, K_ * Do_ * HoWo, Do_ * HoWo, 1},
                          {plane_step_ * B * g.K * HoWo, g.K * HoWo, kd_ * HoWo, 1},
                          (n0 * K_ * Do_ + t.lo) * HoWo, (plane_of(t.lo, i) * B * g.K + i) * HoWo),
                     dy, dz);
    }
    Tensor xs = xs_all.elements(0, g.N * C_ * HW).reshape(Shape{g.N, C_, H_, W_});
    const CopyBox planes =
        box4({planes_, B, C_, HW}, {plane_stride_ * HW, C_ * D_ * HW, D_ * HW, 1},
             {B * C_ * HW, C_ * HW, HW, 1}, (n0 * C_ * D_ + first_plane_) * HW, 0);
    if (want_dw) {
      b.strided_copy(planes, x, xs);
      Tensor none, into = n0 == 0 ? dwt : dwt_chunk;
      b.conv2d_backward_filter(g, xs, dz, into, none, conv_scratch);
      if (n0 > 0) b.accumulate(dwt_chunk, dwt);
    }
    if (want_dx) {
      b.conv2d_backward_data(g, dz, wt, xs, conv_scratch);
      if (planes_ < D_) {
        Tensor part = dx->elements(n0 * C_ * D_ * HW, B * C_ * D_ * HW);
        b.fill(part, 0.0);
      }
      CopyBox back = planes;  // xs's planes to their places in dx
      std::swap(back.x_stride, back.y_stride);
      std::swap(back.x_offset, back.y_offset);
      b.strided_copy(back, xs, *dx);
    }
  }
  if (want_dw) {
    b.strided_copy(box4({K_, kd_, Cg, kk}, {kd_ * Cg * kk, Cg * kk, kk, 1},
                        {Cg * kd_ * kk, kk, kd_ * kk, 1}, 0, 0),
                   dwt, *dw);
  }
}

void set_conv3d_rebuildable(Roles& r, const Conv3dPlanes& c, DType t, bool bias) {
  const Conv2dGeometry& g = c.plane_geometry();
  std::vector<int> reads{0, 1};
  if (bias) reads.push_back(2);
  const double weights = static_cast<double>(g.K * g.C / g.groups * g.R * g.S);
  set_rebuildable(r, std::move(reads), 2 * c.macs(),
                  static_cast<double>(dtype_size(t)) *
                      (static_cast<double>(c.input().numel() + c.output().numel()) + weights));
  r.rebuild_expensive = true;
}

void add_channel_bias(Backend& be, Tensor& y, const Tensor& b) {
  Shape out;
  const Broadcast g = broadcast_of(y.shape(), Shape{1, y.shape()[1], 1, 1, 1}, &out);
  be.binary_forward(BinaryKind::add, g, y, b, y);
}

void channel_bias_grad(Backend& be, const Tensor& dy, Tensor& db) {
  Shape out;
  const Broadcast g = broadcast_of(dy.shape(), Shape{1, dy.shape()[1], 1, 1, 1}, &out);
  Tensor none;
  be.binary_backward(BinaryKind::add, g, none, none, dy, none, db);
}

}  // namespace frugal
