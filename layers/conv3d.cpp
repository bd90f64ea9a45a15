// Conv3d forward and backward over depth planes in scratch (layers/conv3d.h): backward reads x
// (for dw) and w (for dx); dx may take x's bytes, chunk by chunk.
#include "layers/conv3d.h"

#include <algorithm>
#include <cmath>

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
  Carve(const Tensor& scratch, DType t) : s_(scratch), t_(t) {}
  Tensor next(Shape shape) {
    const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(t_);
    FRUGAL_CHECK(s_.defined() && at_ + bytes <= s_.bytes(), "conv3d: scratch of ",
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

std::vector<TensorMeta> Conv3dOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 2 || in.size() == 3, "conv3d: expects inputs x, w[, b], got ",
               in.size());
  const Shape &x = in[0].shape, &w = in[1].shape;
  FRUGAL_CHECK(x.rank() == 5 && w.rank() == 5,
               "conv3d: expects x (N,C,D,H,W) and w (K,C/groups,kd,kh,kw), got x ", x, ", w ", w);
  check_conv_params("conv3d", p_.plane);
  FRUGAL_CHECK(p_.stride_d >= 1 && p_.dilation_d >= 1 && p_.pad_front >= 0 && p_.pad_back >= 0,
               "conv3d: depth stride ", p_.stride_d, " and dilation ", p_.dilation_d,
               " must be >= 1, pads ", p_.pad_front, ",", p_.pad_back, " >= 0");
  bias_ = check_conv_operands("conv3d", in, p_.plane.groups);
  dtype_ = in[0].dtype;
  N_ = x[0], C_ = x[1], D_ = x[2], H_ = x[3], W_ = x[4], K_ = w[0], kd_ = w[2], kh_ = w[3],
  kw_ = w[4];
  const int64_t sd = p_.stride_d, dd = p_.dilation_d, pf = p_.pad_front;
  Do_ = conv_output_size(D_, kd_, sd, pf, p_.pad_back, dd);
  FRUGAL_CHECK(Do_ >= 1, "conv3d: a depth window of ", kd_, " (dilation ", dd,
               ") is deeper than the padded input's ", D_ + pf + p_.pad_back, " planes (x ", x,
               ", w ", w, ")");
  if (kd_ == 1) {  // only the planes the outputs read: o * sd - pf for o in [lo, hi)
    const int64_t lo = (pf + sd - 1) / sd, hi = std::min(Do_, (D_ - 1 + pf) / sd + 1);
    FRUGAL_CHECK(hi > lo, "conv3d: every output plane of x ", x, " reads the depth padding (", pf,
                 ", ", p_.pad_back, ")");
    planes_ = hi - lo, first_plane_ = lo * sd - pf, plane_stride_ = sd, plane_step_ = 1;
  } else {
    planes_ = D_, first_plane_ = 0, plane_stride_ = 1, plane_step_ = sd;
  }
  chunk_ = std::min(N_, std::max<int64_t>(1, (kChunkPlanes + planes_ - 1) / planes_));
  g_ = chunk_geometry(chunk_);
  FRUGAL_CHECK(g_.P >= 1 && g_.Q >= 1, "conv3d: kernel ", w[3], "x", w[4],
               " is larger than the padded input planes ",
               H_ + p_.plane.pad_top + p_.plane.pad_bottom, "x",
               W_ + p_.plane.pad_left + p_.plane.pad_right, " (x ", x, ", w ", w, ")");
  return {{Shape{N_, K_, Do_, g_.P, g_.Q}, dtype_}};
}

Conv2dGeometry Conv3dOp::chunk_geometry(int64_t samples) const {
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

int64_t Conv3dOp::tap_offset(int64_t tap) const {
  if (kd_ == 1) return -(first_plane_ + p_.pad_front) / p_.stride_d;  // plane j is output j + lo
  return tap * p_.dilation_d - p_.pad_front;
}

Conv3dOp::TapRange Conv3dOp::tap_range(int64_t tap) const {
  const int64_t off = tap_offset(tap), step = plane_step_;
  const int64_t lo = off >= 0 ? 0 : (-off + step - 1) / step;
  const int64_t hi = planes_ - 1 - off < 0 ? 0 : (planes_ - 1 - off) / step + 1;
  return {std::min(lo, Do_), std::clamp(hi, std::min(lo, Do_), Do_)};
}

size_t Conv3dOp::forward_bytes(const Backend& backend) const {
  const int64_t out = Do_ * chunk_ * K_ * g_.P * g_.Q;
  const size_t e = dtype_size(dtype_);
  size_t conv = backend.conv2d_forward_scratch(g_, dtype_);
  if (N_ % chunk_ != 0)
    conv = std::max(conv, backend.conv2d_forward_scratch(chunk_geometry(N_ % chunk_), dtype_));
  return aligned(e * static_cast<size_t>(g_.K * g_.C / g_.groups * g_.R * g_.S)) +
         aligned(e * static_cast<size_t>(g_.N * C_ * H_ * W_)) +
         aligned(e * static_cast<size_t>(g_.N * g_.K * g_.P * g_.Q)) +
         aligned(e * static_cast<size_t>(out)) * (kd_ > 1 ? 2 : 1) + conv;
}

size_t Conv3dOp::backward_bytes(const Backend& backend) const {
  const size_t e = dtype_size(dtype_);
  const size_t weight = aligned(e * static_cast<size_t>(g_.K * g_.C / g_.groups * g_.R * g_.S));
  size_t conv = backend.conv2d_backward_scratch(g_, dtype_);
  if (N_ % chunk_ != 0)
    conv = std::max(conv, backend.conv2d_backward_scratch(chunk_geometry(N_ % chunk_), dtype_));
  return weight * (N_ > chunk_ ? 3 : 2) + aligned(e * static_cast<size_t>(g_.N * C_ * H_ * W_)) +
         aligned(e * static_cast<size_t>(g_.N * g_.K * g_.P * g_.Q)) + conv;
}

Roles Conv3dOp::roles(Mode mode, const Backend& backend) const {
  Roles r;
  r.forward_scratch = forward_bytes(backend);
  if (mode == Mode::training) {
    r.backward_reads_inputs = {0, 1};
    r.grad_takes_input = {0};  // each chunk's x is read before its dx is written over it
    r.backward_scratch = backward_bytes(backend);
    const double macs = static_cast<double>(N_ * K_ * Do_ * g_.P * g_.Q) *
                        static_cast<double>(C_ / p_.plane.groups * kd_ * g_.R * g_.S);
    const double elem = static_cast<double>(dtype_size(dtype_));
    std::vector<int> reads{0, 1};
    if (bias_) reads.push_back(2);
    set_rebuildable(r, std::move(reads), 2 * macs,
                    elem * static_cast<double>(N_ * (C_ * D_ * H_ * W_ + K_ * Do_ * g_.P * g_.Q) +
                                               K_ * C_ / p_.plane.groups * kd_ * g_.R * g_.S));
    r.rebuild_expensive = true;
  }
  return r;
}

// Per chunk of samples: its planes moved to xs (planes, samples, C, H, W), z = every plane by
// every (filter, tap) (planes, samples, K*kd, Ho*Wo), then sum (Do, samples, K, Ho*Wo) adds
// tap i's partial sums of the plane output o reads, taps in order (zero where a tap reads the
// padding); y's chunk is sum moved back to (samples, K, Do, Ho*Wo). Then y += b.
void Conv3dOp::forward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  const Tensor &x = ctx.input(0), &w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const int64_t Cg = C_ / p_.plane.groups, R = g_.R, S = g_.S, HW = H_ * W_, HoWo = g_.P * g_.Q,
                kk = R * S;
  Carve carve(ctx.scratch(), dtype_);
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
  if (bias_) {
    Shape out;
    const Broadcast bc = broadcast_of(y.shape(), Shape{1, K_, 1, 1, 1}, &out);
    b.binary_forward(BinaryKind::add, bc, y, ctx.input(2), y);
  }
}

// db = the sum of dy over (N, Do, Ho, Wo). Per chunk: dz (planes, samples, K*kd, Ho*Wo) holds
// dy of output o at tap i's partial sums of the plane o reads (zero where no output reads that
// plane through that tap); the chunk's planes moved to xs again; dw's taps (K*kd, C/groups, kh,
// kw) are the 2-D filter gradient of the chunks, added chunk after chunk; dxs = the 2-D data
// gradient over xs's bytes, moved back to dx's chunk (zero on planes no output reads).
void Conv3dOp::backward(const OpContext& ctx) {
  Backend& b = ctx.backend();
  const Tensor &x = ctx.input(0), &w = ctx.input(1), &dy = ctx.grad_output(0);
  const bool want_dx = ctx.needs_grad_input(0), want_dw = ctx.needs_grad_input(1);
  if (bias_ && ctx.needs_grad_input(2)) {
    Shape out;
    const Broadcast bc = broadcast_of(dy.shape(), Shape{1, K_, 1, 1, 1}, &out);
    Tensor none, db = ctx.grad_input(2);
    b.binary_backward(BinaryKind::add, bc, none, none, dy, none, db);
  }
  if (!want_dx && !want_dw) return;
  const int64_t Cg = C_ / p_.plane.groups, R = g_.R, S = g_.S, HW = H_ * W_, HoWo = g_.P * g_.Q,
                kk = R * S;
  Carve carve(ctx.scratch(), dtype_);
  Tensor wt = carve.next(Shape{K_ * kd_, Cg, R, S});
  Tensor dwt = carve.next(Shape{K_ * kd_, Cg, R, S});
  Tensor dwt_chunk = N_ > chunk_ ? carve.next(Shape{K_ * kd_, Cg, R, S}) : Tensor();
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
      Tensor& dx = ctx.grad_input(0);
      if (planes_ < D_) {
        Tensor part = dx.elements(n0 * C_ * D_ * HW, B * C_ * D_ * HW);
        b.fill(part, 0.0);
      }
      CopyBox back = planes;  // xs's planes to their places in dx
      std::swap(back.x_stride, back.y_stride);
      std::swap(back.x_offset, back.y_offset);
      b.strided_copy(back, xs, dx);
    }
  }
  if (want_dw) {
    Tensor& dw = ctx.grad_input(1);
    b.strided_copy(box4({K_, kd_, Cg, kk}, {kd_ * Cg * kk, Cg * kk, kk, 1},
                        {Cg * kd_ * kk, kk, kd_ * kk, 1}, 0, 0),
                   dwt, dw);
  }
}

Value conv3d(Value x, const Conv3dOptions& o, std::source_location where) {
  Tape& t = x.tape();
  FRUGAL_CHECK(x.shape().rank() == 5 && o.out >= 1 && o.kernel >= 1, source_line(where),
               ": conv3d: expects x (N,C,D,H,W), out >= 1 and kernel >= 1; got x ", x.shape(),
               ", out ", o.out, ", kernel ", o.kernel);
  const std::string name = o.name.empty() ? t.unique_name("conv3d") : o.name;
  FRUGAL_CHECK(o.groups >= 1 && x.shape()[1] % o.groups == 0 && o.out % o.groups == 0,
               source_line(where), ": conv3d: ", o.groups, " groups do not divide the ",
               x.shape()[1], " input and ", o.out, " output channels");
  const int64_t k = o.kernel, fan_out = k * k * k * o.out / o.groups;
  std::vector<Value> in = {x, t.param(name + ".weight", {o.out, x.shape()[1] / o.groups, k, k, k},
                                      Init::normal(std::sqrt(2.0 / static_cast<double>(fan_out))))};
  if (o.bias) in.push_back(t.param(name + ".bias", {o.out}, Init::zeros()));
  const Conv3dParams p{.stride_d = o.stride,
                       .pad_front = o.pad,
                       .pad_back = o.pad,
                       .dilation_d = o.dilation,
                       .plane = Conv2dParams::uniform(o.stride, o.pad, o.dilation, o.groups)};
  return t.record(std::make_unique<Conv3dOp>(p), std::move(in), where)[0];
}

}  // namespace frugal
