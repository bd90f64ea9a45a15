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
  const int64_t planes = std::max(D_, Do_);  // of a sample: the more of its input and output
  chunk_ = std::min(N_, std::max<int64_t>(1, (kChunkPlanes + planes - 1) / planes));
  g_ = chunk_geometry(chunk_, Do_);
  FRUGAL_CHECK(g_.P >= 1 && g_.Q >= 1, op, ": kernel ", kh_, "x", kw_,
               " is larger than the padded input planes ",
               H_ + p.plane.pad_top + p.plane.pad_bottom, "x",
               W_ + p.plane.pad_left + p.plane.pad_right, " (x ", x, ", w ", w, ")");
}

Conv2dGeometry Conv3dPlanes::chunk_geometry(int64_t samples, int64_t planes) const {
  const Conv2dParams& p = p_.plane;
  Conv2dGeometry g{.N = samples * planes, .C = C_, .H = H_, .W = W_, .K = K_, .R = kh_, .S = kw_};
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

// Output plane o's tap reads input plane o * sd - pf + tap * dd: those o where it lies in
// [0, D).
Conv3dPlanes::TapRange Conv3dPlanes::tap_range(int64_t tap) const {
  const int64_t sd = p_.stride_d, off = tap * p_.dilation_d - p_.pad_front;
  const int64_t lo = std::min(Do_, off >= 0 ? 0 : (-off + sd - 1) / sd);
  const int64_t hi = D_ - 1 - off < 0 ? lo : std::clamp((D_ - 1 - off) / sd + 1, lo, Do_);
  return {lo, hi, lo * sd + off};
}

size_t Conv3dPlanes::weight_bytes() const {
  return aligned(dtype_size(dtype_) * static_cast<size_t>(weight_numel()));
}

// The 2-D passes' scratch at every batch of planes a chunk's taps run.
size_t Conv3dPlanes::conv_scratch(const Backend& b, bool forward) const {
  size_t most = 0;
  for (int64_t samples : {chunk_, N_ % chunk_})
    for (int64_t i = 0; samples > 0 && i < kd_; ++i) {
      const int64_t n = tap_range(i).count();
      if (n == 0) continue;
      const Conv2dGeometry g = chunk_geometry(samples, n);
      most = std::max(most, forward ? b.conv2d_forward_scratch(g, dtype_)
                                    : b.conv2d_backward_scratch(g, dtype_));
    }
  return most;
}

size_t Conv3dPlanes::forward_scratch(const Backend& backend) const {
  const size_t e = dtype_size(dtype_);
  const size_t in = aligned(e * static_cast<size_t>(chunk_ * Do_ * C_ * H_ * W_));
  const size_t out = aligned(e * static_cast<size_t>(chunk_ * Do_ * K_ * g_.P * g_.Q));
  return weight_bytes() + in + out * (kd_ > 1 ? 2 : 1) + conv_scratch(backend, true);
}

size_t Conv3dPlanes::backward_scratch(const Backend& backend, bool data, bool filter) const {
  if (!data && !filter) return 0;
  const size_t e = dtype_size(dtype_);
  const size_t tap = aligned(e * static_cast<size_t>(weight_numel() / kd_));
  const size_t in = aligned(e * static_cast<size_t>(chunk_ * Do_ * C_ * H_ * W_));
  const size_t out = aligned(e * static_cast<size_t>(chunk_ * Do_ * K_ * g_.P * g_.Q));
  size_t bytes = in + out + conv_scratch(backend, false);
  if (data) {  // the taps' weights; past one tap, every input plane's sum and strided planes
    bytes += weight_bytes();
    if (kd_ > 1) bytes += aligned(e * static_cast<size_t>(chunk_ * C_ * D_ * H_ * W_));
    if (kd_ > 1 && p_.stride_d > 1) bytes += in;
  }
  if (filter) bytes += weight_bytes() + (N_ > chunk_ ? tap : 0);
  return bytes;
}

namespace {
// w (K, C/groups, kd, kh, kw), as (K, C/groups, kd, kh*kw), to the taps' weights (kd, K,
// C/groups, kh*kw), and back.
CopyBox tap_weights(int64_t K, int64_t Cg, int64_t kd, int64_t kk, bool back) {
  static constexpr int64_t to_taps[] = {2, 0, 1, 3}, from_taps[] = {1, 2, 0, 3};
  return back ? permute_box(Shape{kd, K, Cg, kk}, from_taps)
              : permute_box(Shape{K, Cg, kd, kk}, to_taps);
}

// A chunk's every plane laid (planes, samples, C, H*W) moved to (samples, C, planes, H*W), the
// chunk's place in the (N, C, planes, H, W) tensor from element `at` on.
CopyBox planes_back(int64_t planes, int64_t samples, int64_t C, int64_t HW, int64_t at) {
  static constexpr int64_t order[] = {1, 2, 0, 3};
  CopyBox b = permute_box(Shape{planes, samples, C, HW}, order);
  b.y_offset = at;
  return b;
}
}  // namespace

CopyBox Conv3dPlanes::input_planes(const TapRange& t, int64_t n0, int64_t samples) const {
  const int64_t HW = H_ * W_;
  return box4({t.count(), samples, C_, HW}, {p_.stride_d * HW, C_ * D_ * HW, D_ * HW, 1},
              {samples * C_ * HW, C_ * HW, HW, 1}, (n0 * C_ * D_ + t.first) * HW, 0);
}

// Per chunk of samples and per tap i: the input planes tap i reads moved to xs (planes,
// samples, C, H, W) and convolved by the tap's weight into its output planes' partial sums
// (planes, samples, K, Ho*Wo); sum (Do, samples, K, Ho*Wo) adds them, taps in order (zero
// where no tap reaches); y's chunk is sum moved back to (samples, K, Do, Ho*Wo).
void Conv3dPlanes::forward(Backend& b, const Tensor& x, const Tensor& w, Tensor& y,
                           const Tensor& scratch) const {
  const int64_t Cg = C_ / p_.plane.groups, kk = kh_ * kw_, HW = H_ * W_, HoWo = g_.P * g_.Q;
  const int64_t tap_weights_numel = K_ * Cg * kk;
  Carve carve(scratch, dtype_, op_);
  Tensor wt = carve.next(Shape{kd_ * tap_weights_numel});
  b.strided_copy(tap_weights(K_, Cg, kd_, kk, false), w, wt);
  Tensor xs_all = carve.next(Shape{chunk_ * Do_ * C_ * HW});
  Tensor sum_all = carve.next(Shape{chunk_ * Do_ * K_ * HoWo});
  Tensor tap_all = kd_ > 1 ? carve.next(Shape{chunk_ * Do_ * K_ * HoWo}) : Tensor();
  Tensor conv_scratch = carve.rest();
  const TapRange first = tap_range(0);
  for (int64_t n0 = 0; n0 < N_; n0 += chunk_) {
    const int64_t B = std::min(chunk_, N_ - n0);
    const int64_t row = B * K_ * HoWo;  // one output plane of the chunk in sum
    Tensor sum = sum_all.elements(0, Do_ * row);
    if (first.lo > 0 || first.hi < Do_) b.fill(sum, 0.0);  // planes tap 0 does not reach
    for (int64_t i = 0; i < kd_; ++i) {
      const TapRange t = tap_range(i);
      if (t.count() == 0) continue;
      const Conv2dGeometry g = chunk_geometry(B, t.count());
      Tensor xs = xs_all.elements(0, g.N * C_ * HW).reshape(Shape{g.N, C_, H_, W_});
      b.strided_copy(input_planes(t, n0, B), x, xs);
      const Tensor wi =
          wt.elements(i * tap_weights_numel, tap_weights_numel).reshape(Shape{K_, Cg, kh_, kw_});
      Tensor part = sum.elements(t.lo * row, t.count() * row);
      const bool direct = i == 0;  // tap 0 writes its planes of sum itself
      Tensor out =
          (direct ? part : tap_all.elements(0, t.count() * row)).reshape(Shape{g.N, K_, g.P, g.Q});
      Tensor none;
      b.conv2d_forward(g, xs, wi, none, out, conv_scratch);
      if (!direct) {
        Tensor into = part.reshape(out.shape());
        b.accumulate(out, into);
      }
    }
    b.strided_copy(planes_back(Do_, B, K_, HoWo, n0 * K_ * Do_ * HoWo), sum, y);
  }
}

// Per chunk and per tap i: dz (planes, samples, K, Ho*Wo) holds dy of the output planes the tap
// reaches; xs the input planes it reads; the tap's dw is the 2-D filter gradient, added chunk
// after chunk; its data gradient (over xs's bytes) is added into acc (D, samples, C, H*W), the
// chunk's every input plane, taps in order; acc (zero where no tap reads) moved back to dx's
// chunk. A window 1 deep writes its data gradient straight to dx's planes.
void Conv3dPlanes::backward(Backend& b, const Tensor& x, const Tensor& dy, const Tensor& w,
                            Tensor* dx, Tensor* dw, const Tensor& scratch) const {
  const bool want_dx = dx != nullptr, want_dw = dw != nullptr;
  if (!want_dx && !want_dw) return;
  const int64_t Cg = C_ / p_.plane.groups, kk = kh_ * kw_, HW = H_ * W_, HoWo = g_.P * g_.Q;
  const int64_t tap_weights_numel = K_ * Cg * kk, sd = p_.stride_d;
  Carve carve(scratch, dtype_, op_);
  Tensor xs_all = carve.next(Shape{chunk_ * Do_ * C_ * HW});
  Tensor dz_all = carve.next(Shape{chunk_ * Do_ * K_ * HoWo});
  // One tap writes every input plane's gradient at most once: no sums to hold.
  const bool single = kd_ == 1;
  Tensor wt, acc_all, strided_all, dwt, dwt_tap;
  if (want_dx) {
    wt = carve.next(Shape{kd_ * tap_weights_numel});
    if (!single) acc_all = carve.next(Shape{chunk_ * C_ * D_ * HW});
    if (!single && sd > 1) strided_all = carve.next(Shape{chunk_ * Do_ * C_ * HW});
    b.strided_copy(tap_weights(K_, Cg, kd_, kk, false), w, wt);
  }
  if (want_dw) {
    dwt = carve.next(Shape{kd_ * tap_weights_numel});
    if (N_ > chunk_) dwt_tap = carve.next(Shape{tap_weights_numel});
    b.fill(dwt, 0.0);  // a tap that reads only padding has no gradient
  }
  Tensor conv_scratch = carve.rest();
  for (int64_t n0 = 0; n0 < N_; n0 += chunk_) {
    const int64_t B = std::min(chunk_, N_ - n0);
    const int64_t plane = B * C_ * HW;  // one input plane of the chunk in acc
    Tensor acc = want_dx && !single ? acc_all.elements(0, D_ * plane) : Tensor();
    if (acc.defined()) b.fill(acc, 0.0);
    for (int64_t i = 0; i < kd_; ++i) {
      const TapRange t = tap_range(i);
      if (t.count() == 0) continue;
      const Conv2dGeometry g = chunk_geometry(B, t.count());
      Tensor dz = dz_all.elements(0, g.N * K_ * HoWo).reshape(Shape{g.N, K_, g.P, g.Q});
      b.strided_copy(box4({t.count(), B, K_, HoWo}, {HoWo, K_ * Do_ * HoWo, Do_ * HoWo, 1},
                          {B * K_ * HoWo, K_ * HoWo, HoWo, 1}, (n0 * K_ * Do_ + t.lo) * HoWo, 0),
                     dy, dz);
      Tensor xs = xs_all.elements(0, g.N * C_ * HW).reshape(Shape{g.N, C_, H_, W_});
      const CopyBox planes = input_planes(t, n0, B);
      if (want_dw) {
        b.strided_copy(planes, x, xs);
        Tensor mine =
            dwt.elements(i * tap_weights_numel, tap_weights_numel).reshape(Shape{K_, Cg, kh_, kw_});
        Tensor into = n0 == 0 ? mine : dwt_tap.reshape(Shape{K_, Cg, kh_, kw_});
        Tensor none;
        b.conv2d_backward_filter(g, xs, dz, into, none, conv_scratch);
        if (n0 > 0) b.accumulate(into, mine);
      }
      if (want_dx) {
        const Tensor wi =
            wt.elements(i * tap_weights_numel, tap_weights_numel).reshape(Shape{K_, Cg, kh_, kw_});
        b.conv2d_backward_data(g, dz, wi, xs, conv_scratch);
        if (single) {  // straight to dx's planes (zero on the planes no output reads)
          if (t.count() < D_) {
            Tensor part = dx->elements(n0 * C_ * D_ * HW, B * C_ * D_ * HW);
            b.fill(part, 0.0);
          }
          CopyBox back = planes;
          std::swap(back.x_stride, back.y_stride);
          std::swap(back.x_offset, back.y_offset);
          b.strided_copy(back, xs, *dx);
        } else if (sd == 1) {  // the planes lie together in acc
          Tensor part = acc.elements(t.first * plane, t.count() * plane).reshape(xs.shape());
          b.accumulate(xs, part);
        } else {  // every sd-th plane: gathered, added to, put back
          Tensor part = strided_all.elements(0, t.count() * plane);
          const CopyBox every =
              box4({t.count(), plane}, {sd * plane, 1}, {plane, 1}, t.first * plane, 0);
          b.strided_copy(every, acc, part);
          Tensor into = part.reshape(xs.shape());
          b.accumulate(xs, into);
          CopyBox back = every;
          std::swap(back.x_stride, back.y_stride);
          std::swap(back.x_offset, back.y_offset);
          b.strided_copy(back, part, acc);
        }
      }
    }
    if (acc.defined())  // acc (D, samples, C, H*W) to dx's chunk (samples, C, D, H*W)
      b.strided_copy(planes_back(D_, B, C_, HW, n0 * C_ * D_ * HW), acc, *dx);
  }
  if (want_dx && single && tap_range(0).count() == 0) b.fill(*dx, 0.0);  // no output reads x
  if (want_dw) b.strided_copy(tap_weights(K_, Cg, kd_, kk, true), dwt, *dw);
}

void set_conv3d_rebuildable(Roles& r, const Conv3dPlanes& c, DType t, bool bias) {
  std::vector<int> reads{0, 1};
  if (bias) reads.push_back(2);
  const double weights = static_cast<double>(c.weight_numel());
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
