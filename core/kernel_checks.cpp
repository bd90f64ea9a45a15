// The kernel contracts every backend shares, worded once; see core/kernel_checks.h. Every
// kernel's checks in one file, by design, hence past 400 lines.
#include "core/kernel_checks.h"

#include <algorithm>
#include <tuple>

#include "core/error.h"

namespace frugal {

namespace {
bool is_float(const Tensor& t) {
  return t.dtype() == DType::f32 || t.dtype() == DType::f64;
}
}  // namespace

void check_device(const char* op, std::initializer_list<const Tensor*> ts, const Device& device) {
  for (const Tensor* t : ts)
    FRUGAL_CHECK(!t->defined() || t->device() == device, op, ": tensor ", t->shape(), " ",
                 dtype_name(t->dtype()), " lives on ", t->device().str(), ", the backend runs on ",
                 device.str(),
                 device.is_host() ? " (copy it to the host with copy_to_host)"
                                  : " (copy host data in with copy_to_device)");
}

void check_same(const char* op, const Tensor& x, const Tensor& y, const Device& device) {
  FRUGAL_CHECK(x.meta() == y.meta(), op, ": x ", x.shape(), " ", dtype_name(x.dtype()), " and y ",
               y.shape(), " ", dtype_name(y.dtype()), " must match");
  FRUGAL_CHECK(is_float(x), op, ": expects f32 or f64, got ", dtype_name(x.dtype()));
  check_device(op, {&x, &y}, device);
}

void check_mask(const char* op, const Tensor& mask, int64_t n, const Device& device) {
  if (!mask.defined()) return;
  FRUGAL_CHECK(mask.dtype() == DType::u8 && mask.numel() == mask_bytes(n), op, ": mask ",
               mask.shape(), " ", dtype_name(mask.dtype()), " for ", n, " elements, expected [",
               mask_bytes(n), "] u8");
  check_device(op, {&mask}, device);
}

void check_required_mask(const char* op, const Tensor& mask, int64_t n, const Device& device) {
  FRUGAL_CHECK(mask.defined(), op, ": no mask");
  check_mask(op, mask, n, device);
}

void check_defined(const char* op, const char* what, const Tensor& t) {
  FRUGAL_CHECK(t.defined(), op, ": missing ", what);
}

void check_packable(const char* op, const Tensor& x, const Device& device) {
  FRUGAL_CHECK(is_float(x), op, ": expects f32 or f64, got ", dtype_name(x.dtype()));
  check_device(op, {&x}, device);
}

int64_t check_pack(const Tensor& x, std::span<const int64_t> counts, const Tensor& packed,
                   const Device& device) {
  check_packable("pack", x, device);
  const int64_t n = x.numel();
  FRUGAL_CHECK(static_cast<int64_t>(counts.size()) == packed_blocks(n), "pack: ", counts.size(),
               " block counts for ", n, " elements, expected ", packed_blocks(n));
  int64_t total = 0;
  for (size_t b = 0; b < counts.size(); ++b) {
    const int64_t in_block = packed_block_size(n, static_cast<int64_t>(b));
    const int64_t most = packed_block_max_words(in_block, x.dtype());
    FRUGAL_CHECK(counts[b] >= 0 && counts[b] <= most, "pack: block ", b, " counts ", counts[b],
                 " elements of words for its ", in_block, " elements (at most ", most, ")");
    total += counts[b];
  }
  const int64_t bytes = packed_bytes(n, total, x.dtype());
  FRUGAL_CHECK(packed.dtype() == DType::u8 && packed.numel() == bytes, "pack: packed ",
               packed.shape(), " ", dtype_name(packed.dtype()), " for ", n, " ",
               dtype_name(x.dtype()), " elements whose blocks take ", total,
               " elements of words, expected [", bytes, "] u8");
  check_device("pack", {&packed}, device);
  return total;
}

int64_t check_unpack(const Tensor& packed, const Tensor& x, const Device& device) {
  check_packable("unpack", x, device);
  check_device("unpack", {&packed}, device);
  const int64_t n = x.numel(), per = static_cast<int64_t>(dtype_size(x.dtype()));
  const int64_t rest = packed.numel() - packed_bytes(n, 0, x.dtype());
  int64_t most = 0;
  for (int64_t b = 0; b < packed_blocks(n); ++b)
    most += packed_block_max_words(packed_block_size(n, b), x.dtype());
  FRUGAL_CHECK(packed.dtype() == DType::u8 && rest >= 0 && rest % per == 0 && rest / per <= most,
               "unpack: packed ", packed.shape(), " ", dtype_name(packed.dtype()),
               " does not hold ", n, " ", dtype_name(x.dtype()), " elements");
  return rest / per;
}

void check_dropout_p(double p) {
  FRUGAL_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
}

void check_elu_backward(const Tensor& v, bool from_output, const EluCoefficients& c,
                        const Tensor& dy, const Tensor& dx, const Device& device) {
  check_same("elu backward", dy, dx, device);
  check_same("elu backward", v, dx, device);
  FRUGAL_CHECK(!from_output || elu_backward_reads_output(c),
               "elu backward: reading the output needs alpha >= 0 and positive scales, got alpha ",
               c.alpha, ", scale ", c.scale, ", input scale ", c.input_scale);
}

void check_add(const Tensor& a, const Tensor& b, const Tensor& y, const Device& device) {
  FRUGAL_CHECK(a.meta() == b.meta(), "add: a ", a.shape(), " ", dtype_name(a.dtype()), " and b ",
               b.shape(), " ", dtype_name(b.dtype()), " must match");
  check_same("add", a, y, device);
  check_device("add", {&b}, device);
}

void check_subtract(const Tensor& a, const Tensor& b, const Tensor& y, const Device& device) {
  FRUGAL_CHECK(a.meta() == b.meta() && a.meta() == y.meta(), "subtract: a ", a.shape(), " b ",
               b.shape(), " y ", y.shape(), " must match");
  check_same("subtract", a, y, device);
  check_device("subtract", {&b}, device);
}

void check_sgd(const Tensor& w, const Tensor& dw, const Tensor& v, const Device& device) {
  FRUGAL_CHECK(w.meta() == dw.meta() && w.meta() == v.meta(), "sgd: weight ", w.shape(),
               ", gradient ", dw.shape(), ", momentum ", v.shape(), " must match");
  check_same("sgd", w, dw, device);
  check_device("sgd", {&v}, device);
}

void check_adamw(const Tensor& w, const Tensor& dw, const Tensor& m, const Tensor& v,
                 const OptimizerConfig& c, const Device& device) {
  FRUGAL_CHECK(w.meta() == dw.meta() && w.meta() == m.meta() && w.meta() == v.meta(),
               "adamw: weight ", w.shape(), ", gradient ", dw.shape(), ", moments ", m.shape(),
               " and ", v.shape(), " must match");
  FRUGAL_CHECK(c.step >= 1, "adamw: step ", c.step, " must count from 1");
  check_same("adamw", w, dw, device);
  check_device("adamw", {&m, &v}, device);
}

void check_copy(const Tensor& x, const Tensor& y) {
  FRUGAL_CHECK(x.bytes() == y.bytes(), "copy: ", x.shape(), " and ", y.shape(), " differ in size");
}

LinearDims check_linear(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                        const Tensor& y, const Device& device) {
  FRUGAL_CHECK(is_float(x), op, ": needs f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(
      x.shape().rank() == 2 && y.shape().rank() == 2 && (!w.defined() || w.shape().rank() == 2), op,
      ": expects x (N,I), w (O,I), y (N,O); got x ", x.shape(), " w ", w.shape(), " y ", y.shape());
  const LinearDims d{x.shape()[0], x.shape()[1], y.shape()[1]};
  FRUGAL_CHECK(y.shape()[0] == d.N && (!w.defined() || w.shape() == Shape{d.O, d.I}), op, ": x ",
               x.shape(), " w ", w.shape(), " y ", y.shape(), " do not agree");
  FRUGAL_CHECK(!b.defined() || b.shape() == Shape{d.O}, op, ": bias ", b.shape(), " for ", d.O,
               " outputs");
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()) &&
                   (!b.defined() || b.dtype() == x.dtype()),
               op, ": mixed dtypes");
  check_device(op, {&x, &w, &b, &y}, device);
  return d;
}

void check_conv(const char* op, const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                const Tensor& y, const Device& device) {
  FRUGAL_CHECK(x.defined() && y.defined(), op, ": missing input or output tensor");
  FRUGAL_CHECK(is_float(x), op, ": needs f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(y.dtype() == x.dtype() && (!w.defined() || w.dtype() == x.dtype()), op,
               ": mixed dtypes");
  FRUGAL_CHECK(g.groups >= 1 && g.C % g.groups == 0 && g.K % g.groups == 0, op, ": ", g.groups,
               " groups do not divide ", g.C, " input and ", g.K, " output channels");
  FRUGAL_CHECK(x.numel() == g.N * g.C * g.H * g.W && y.numel() == g.N * g.K * g.P * g.Q &&
                   (!w.defined() || w.numel() == g.K * (g.C / g.groups) * g.R * g.S),
               op, ": tensors x ", x.shape(), " w ", w.shape(), " y ", y.shape(),
               " do not match the geometry N,C,H,W = ", g.N, ",", g.C, ",", g.H, ",", g.W,
               " K,R,S = ", g.K, ",", g.R, ",", g.S, " P,Q = ", g.P, ",", g.Q, " groups ",
               g.groups);
  FRUGAL_CHECK(
      g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h_end >= 0 && g.pad_w_end >= 0 && g.dilation_h >= 1 &&
          g.dilation_w >= 1 && g.P >= 1 && g.Q >= 1 &&
          g.P == conv_output_size(g.H, g.R, g.stride_h, g.pad_h, g.pad_h_end, g.dilation_h) &&
          g.Q == conv_output_size(g.W, g.S, g.stride_w, g.pad_w, g.pad_w_end, g.dilation_w),
      op, ": output ", g.P, "x", g.Q, " does not follow from input ", g.H, "x", g.W, " (pads ",
      g.pad_h, ",", g.pad_w, ",", g.pad_h_end, ",", g.pad_w_end, ", dilation ", g.dilation_h, "x",
      g.dilation_w, ")");
  check_device(op, {&x, &w, &y}, device);
}

void check_binary(const char* op, const Broadcast& g, const Tensor& a, const Tensor& b,
                  const Tensor& y, const Device& device) {
  FRUGAL_CHECK(y.defined() && y.numel() == g.numel() && is_float(y), op, ": output ",
               y.defined() ? y.shape().str() : "undefined", " for ", g.numel(),
               " broadcast elements (f32 or f64)");
  FRUGAL_CHECK(
      !a.defined() || (a.numel() == binary_math::operand_numel(g, g.a) && a.dtype() == y.dtype()),
      op, ": operand a ", a.shape(), " ", dtype_name(a.dtype()), " does not fit the broadcast");
  FRUGAL_CHECK(
      !b.defined() || (b.numel() == binary_math::operand_numel(g, g.b) && b.dtype() == y.dtype()),
      op, ": operand b ", b.shape(), " ", dtype_name(b.dtype()), " does not fit the broadcast");
  check_device(op, {&a, &b, &y}, device);
}

void check_binary_forward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                          const Tensor& y, const Device& device) {
  check_defined(binary_name(k), "operand a", a);
  check_defined(binary_name(k), "operand b", b);
  check_binary(binary_name(k), g, a, b, y, device);
}

void check_binary_backward(BinaryKind k, const Broadcast& g, const Tensor& a, const Tensor& b,
                           const Tensor& dy, const Tensor& da, const Tensor& db,
                           const Device& device) {
  if (binary_backward_reads_operand(k, 0, da.defined(), db.defined()))
    check_defined(binary_name(k), "operand a", a);
  if (binary_backward_reads_operand(k, 1, da.defined(), db.defined()))
    check_defined(binary_name(k), "operand b", b);
  if (binary_backward_reads_inputs(k)) check_binary(binary_name(k), g, a, b, dy, device);
  check_binary(binary_name(k), g, da, db, dy, device);
}

void check_conv_bias(const char* op, const char* name, const Conv2dGeometry& g, const Tensor& b,
                     const Tensor& x, const Device& device) {
  FRUGAL_CHECK(!b.defined() || (b.numel() == g.K && b.dtype() == x.dtype()), op, ": ", name, " ",
               b.shape(), " for ", g.K, " filters");
  check_device(op, {&b}, device);
}

void check_pool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                const Device& device) {
  const Shape xs{g.N, g.C, g.H, g.W}, ys{g.N, g.C, g.P, g.Q};
  FRUGAL_CHECK(x.shape() == xs && y.shape() == ys && x.dtype() == y.dtype() && is_float(x), op,
               ": input side ", x.shape(), " ", dtype_name(x.dtype()), ", output side ", y.shape(),
               " ", dtype_name(y.dtype()), "; expected ", xs, " and ", ys,
               ", both f32 or both f64");
  check_device(op, {&x, &y}, device);
}

namespace {
// A pool's window: pads at either end at most half the kernel (PyTorch's rule; as ONNX's, a
// pad below the kernel), dilations >= 1, and no window of padding only.
void check_pool_window(const char* op, const Pool2dGeometry& g) {
  FRUGAL_CHECK(g.pad_h >= 0 && g.pad_w >= 0 && g.pad_h_end >= 0 && g.pad_w_end >= 0 &&
                   2 * std::max(g.pad_h, g.pad_h_end) <= g.kernel_h &&
                   2 * std::max(g.pad_w, g.pad_w_end) <= g.kernel_w,
               op, ": pads ", g.pad_h, ",", g.pad_w, ",", g.pad_h_end, ",", g.pad_w_end,
               " (top, left, bottom, right) must be >= 0 and at most half the kernel ", g.kernel_h,
               "x", g.kernel_w);
  FRUGAL_CHECK(g.dilation_h >= 1 && g.dilation_w >= 1 && g.stride_h >= 1 && g.stride_w >= 1, op,
               ": dilation ", g.dilation_h, "x", g.dilation_w, " and stride ", g.stride_h, "x",
               g.stride_w, " must be >= 1");
  FRUGAL_CHECK(pool_windows_hold_input(g), op, ": a ", g.kernel_h, "x", g.kernel_w,
               " window (dilation ", g.dilation_h, "x", g.dilation_w, ") of the ", g.P, "x", g.Q,
               " outputs over ", g.H, "x", g.W, " lies in the padding only");
}
}  // namespace

void check_avgpool(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                   const Device& device) {
  check_pool(op, g, x, y, device);
  check_pool_window(op, g);
  FRUGAL_CHECK(g.dilation_h == 1 && g.dilation_w == 1, op, ": dilation ", g.dilation_h, "x",
               g.dilation_w, ": average pools take none");
}

void check_upsample(const char* op, const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                    const Device& device) {
  FRUGAL_CHECK(
      g.kernel_h >= 1 && g.kernel_w >= 1 && g.P == g.H * g.kernel_h && g.Q == g.W * g.kernel_w, op,
      ": factors ", g.kernel_h, "x", g.kernel_w, " must be >= 1 and give ", g.P, "x", g.Q, " from ",
      g.H, "x", g.W);
  check_pool(op, g, x, y, device);
}

namespace {
// t (per-channel: gamma, beta, statistics and their gradients) is (C) in x's dtype.
void check_channel(const char* op, const Tensor& t, const Tensor& x, int64_t C,
                   const Device& device) {
  FRUGAL_CHECK(t.defined() && t.shape() == Shape{C} && t.dtype() == x.dtype(), op,
               ": per-channel tensor ", t.defined() ? t.shape().str() : "undefined", ", expected [",
               C, "] ", dtype_name(x.dtype()), " for x ", x.shape());
  check_device(op, {&t}, device);
}
}  // namespace

ChannelDims check_batchnorm(const char* op, const Tensor& x, const Tensor& y,
                            std::initializer_list<const Tensor*> per_channel,
                            const Device& device) {
  const int rank = x.shape().rank();
  FRUGAL_CHECK(rank >= 2 && rank <= 5, op,
               ": x must be (N,C), (N,C,L), (N,C,H,W) or (N,C,D,H,W), got ", x.shape());
  FRUGAL_CHECK(is_float(x), op, ": x must be f32 or f64, got ", dtype_name(x.dtype()));
  FRUGAL_CHECK(y.meta() == x.meta(), op, ": x ", x.shape(), " and y ", y.shape(), " differ");
  int64_t S = 1;  // the positions of a channel in a sample
  for (int i = 2; i < rank; ++i) S *= x.shape()[i];
  const ChannelDims d{x.shape()[0], x.shape()[1], S};
  for (const Tensor* t : per_channel) check_channel(op, *t, x, d.C, device);
  check_device(op, {&x, &y}, device);
  return d;
}

ChannelDims check_batchnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                     const Tensor& mean, const Tensor& inv_std, const Tensor& dx,
                                     const Tensor& dgamma, const Tensor& dbeta,
                                     const Device& device) {
  const char* op = "batch_norm backward";
  const ChannelDims d = check_batchnorm(op, x, dy, {&gamma, &mean, &inv_std}, device);
  if (dgamma.defined()) check_channel(op, dgamma, x, d.C, device);
  if (dbeta.defined()) check_channel(op, dbeta, x, d.C, device);
  if (dx.defined()) {
    FRUGAL_CHECK(dx.meta() == x.meta(), op, ": dx ", dx.shape(), " for x ", x.shape());
    check_device(op, {&dx}, device);
  }
  return d;
}

void check_invertible_weights(const std::string& who, const Tensor& gamma, const char* unit,
                              const char* flag) {
  for (int64_t c = 0; c < gamma.numel(); ++c) {
    const double g = element_as_double(gamma, c);
    FRUGAL_CHECK(std::isfinite(g), who, ": weight of ", unit, " ", c, " is ", g,
                 ": the weights diverged (train --check-finite names the op that first wrote a ",
                 "value that is not finite)");
    FRUGAL_CHECK(g != 0, who, ": weight of ", unit, " ", c, " is 0, so its normalized input ",
                 "cannot be recovered from the output; record it with from_output off ",
                 "(frugal's commands: without ", flag, ")");
  }
}

RowDims check_layernorm(const char* op, const Tensor& x, const Tensor& y,
                        std::initializer_list<const Tensor*> per_column,
                        std::initializer_list<const Tensor*> per_row, const Device& device) {
  check_defined(op, "x", x);
  FRUGAL_CHECK(is_float(x), op, ": x must be f32 or f64, got ", dtype_name(x.dtype()));
  const Tensor* gamma = *per_column.begin();
  check_defined(op, "gamma", *gamma);
  const int64_t C = gamma->numel();
  FRUGAL_CHECK(C >= 1 && x.numel() % C == 0 && x.numel() >= C, op, ": x ", x.shape(),
               " is not rows of gamma's ", gamma->shape());
  const RowDims d{x.numel() / C, C};
  FRUGAL_CHECK(!y.defined() || y.meta() == x.meta(), op, ": x ", x.shape(), " and ", y.shape(),
               " differ");
  auto check = [&](const Tensor* t, int64_t n, const char* what) {
    if (!t->defined()) return;
    FRUGAL_CHECK(t->numel() == n && t->dtype() == x.dtype(), op, ": a ", what, " tensor is ",
                 t->shape(), " ", dtype_name(t->dtype()), ", expected ", n, " values of ",
                 dtype_name(x.dtype()), " for x ", x.shape());
    check_device(op, {t}, device);
  };
  for (const Tensor* t : per_column) check(t, C, "per-column");
  for (const Tensor* t : per_row) check(t, d.R, "per-row");
  check_device(op, {&x, &y}, device);
  return d;
}

RowDims check_layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                const Tensor& y, const Tensor& mean, const Tensor& inv_std,
                                const Device& device) {
  const RowDims d = check_layernorm("layer_norm", x, y, {&gamma, &beta}, {&mean, &inv_std}, device);
  check_defined("layer_norm", "y", y);
  check_defined("layer_norm", "beta", beta);
  return d;
}

RowDims check_layernorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                 const Tensor& mean, const Tensor& inv_std, const Tensor& dx,
                                 const Tensor& dgamma, const Tensor& dbeta, const Device& device) {
  const char* op = "layer_norm backward";
  const RowDims d =
      check_layernorm(op, x, dy, {&gamma, &dgamma, &dbeta}, {&mean, &inv_std}, device);
  check_defined(op, "dy", dy);
  check_defined(op, "mean", mean);
  check_defined(op, "inv_std", inv_std);
  FRUGAL_CHECK(!dx.defined() || dx.meta() == x.meta(), op, ": dx ", dx.shape(), " for x ",
               x.shape());
  if (dx.defined()) check_device(op, {&dx}, device);
  return d;
}

namespace {

GroupDims check_groupnorm(const char* op, const Tensor& x, const Tensor& y, int64_t groups,
                          std::initializer_list<const Tensor*> per_channel,
                          std::initializer_list<const Tensor*> per_row, const Device& device) {
  check_defined(op, "x", x);
  FRUGAL_CHECK(is_float(x), op, ": x must be f32 or f64, got ", dtype_name(x.dtype()));
  const Shape& s = x.shape();
  FRUGAL_CHECK(s.rank() >= 2 && s[0] >= 1 && s[1] >= 1, op, ": x ", s,
               " is not (N, C, ...) with a sample and a channel");
  FRUGAL_CHECK(groups >= 1 && s[1] % groups == 0, op, ": ", groups, " groups do not divide the ",
               s[1], " channels of x ", s);
  const GroupDims d{s[0], groups, s[1] / groups, x.numel() / (s[0] * s[1])};
  FRUGAL_CHECK(!y.defined() || y.meta() == x.meta(), op, ": x ", s, " and ", y.shape(), " differ");
  auto check = [&](const Tensor* t, int64_t n, const char* what) {
    if (!t->defined()) return;
    FRUGAL_CHECK(t->numel() == n && t->dtype() == x.dtype(), op, ": a ", what, " tensor is ",
                 t->shape(), " ", dtype_name(t->dtype()), ", expected ", n, " values of ",
                 dtype_name(x.dtype()), " for x ", s, " in ", groups, " groups");
    check_device(op, {t}, device);
  };
  for (const Tensor* t : per_channel) check(t, s[1], "per-channel");
  for (const Tensor* t : per_row) check(t, d.N * d.G, "per-group");
  check_device(op, {&x, &y}, device);
  return d;
}

}  // namespace

double* scratch_doubles(const char* op, const Tensor& scratch, size_t bytes, const Device& device) {
  FRUGAL_CHECK(scratch.defined() && scratch.bytes() >= bytes, op, ": needs ", bytes,
               " bytes of scratch, got ", scratch.defined() ? scratch.bytes() : 0);
  check_device(op, {&scratch}, device);
  return static_cast<double*>(scratch.device_raw());
}

ChannelDims check_prelu(const char* op, const Tensor& x, const Tensor& slope,
                        std::initializer_list<const Tensor*> like_x, const Tensor& dslope,
                        const Device& device) {
  check_defined(op, "x", x);
  check_defined(op, "slope", slope);
  FRUGAL_CHECK(is_float(x), op, ": x must be f32 or f64, got ", dtype_name(x.dtype()));
  const Shape& s = x.shape();
  FRUGAL_CHECK(s.rank() >= 2 && s[0] >= 1 && s[1] >= 1, op, ": x ", s,
               " is not (N, C, ...) with a sample and a channel");
  for (const Tensor* t : {&slope, &dslope}) {
    if (!t->defined()) continue;
    FRUGAL_CHECK((t->numel() == s[1] || t->numel() == 1) && t->dtype() == x.dtype() &&
                     t->shape() == slope.shape(),
                 op, ": a slope tensor is ", t->shape(), " ", dtype_name(t->dtype()), ", expected ",
                 s[1], " values or one of ", dtype_name(x.dtype()), " for x ", s);
    check_device(op, {t}, device);
  }
  for (const Tensor* t : like_x) {
    if (!t->defined()) continue;
    FRUGAL_CHECK(t->meta() == x.meta(), op, ": x ", s, " and ", t->shape(), " ",
                 dtype_name(t->dtype()), " differ");
    check_device(op, {t}, device);
  }
  check_device(op, {&x}, device);
  return {s[0], s[1], x.numel() / (s[0] * s[1])};
}

GroupDims check_groupnorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                  int64_t groups, const Tensor& y, const Tensor& mean,
                                  const Tensor& inv_std, const Device& device) {
  check_defined("group_norm", "y", y);
  check_defined("group_norm", "gamma", gamma);
  check_defined("group_norm", "beta", beta);
  return check_groupnorm("group_norm", x, y, groups, {&gamma, &beta}, {&mean, &inv_std}, device);
}

GroupDims check_groupnorm_backward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& mean, const Tensor& inv_std, int64_t groups,
                                   const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                                   const Device& device) {
  const char* op = "group_norm backward";
  check_defined(op, "dy", dy);
  check_defined(op, "gamma", gamma);
  check_defined(op, "mean", mean);
  check_defined(op, "inv_std", inv_std);
  const GroupDims d =
      check_groupnorm(op, x, dy, groups, {&gamma, &dgamma, &dbeta}, {&mean, &inv_std}, device);
  FRUGAL_CHECK(!dx.defined() || dx.meta() == x.meta(), op, ": dx ", dx.shape(), " for x ",
               x.shape());
  if (dx.defined()) check_device(op, {&dx}, device);
  return d;
}

namespace {

// (R, C) of a float tensor `full` of R x C elements and a float tensor `rows` of R of its dtype.
RowDims reduce_dims(const char* op, const char* full_name, const Tensor& full,
                    const char* rows_name, const Tensor& rows) {
  check_defined(op, full_name, full);
  check_defined(op, rows_name, rows);
  FRUGAL_CHECK(is_float(full) && rows.dtype() == full.dtype(), op, ": ", full_name, " ",
               dtype_name(full.dtype()), " and ", rows_name, " ", dtype_name(rows.dtype()),
               ", expected one of f32 and f64");
  const int64_t R = rows.numel();
  FRUGAL_CHECK(R >= 1 && full.numel() >= R && full.numel() % R == 0, op, ": ", full_name, " ",
               full.shape(), " is not rows of ", rows_name, " ", rows.shape());
  return {R, full.numel() / R};
}

void check_reduce_index(const char* op, Reduction r, const Tensor& index, int64_t R) {
  if (reduction_keeps_index(r)) check_defined(op, "index", index);
  FRUGAL_CHECK(!index.defined() || (index.dtype() == DType::i32 && index.numel() == R), op,
               ": index ", index.shape(), " ", dtype_name(index.dtype()), ", expected ", R, " i32");
}

}  // namespace

RowDims check_reduce_forward(Reduction r, const Tensor& x, const Tensor& y, const Tensor& index,
                             const Device& device) {
  const char* op = reduction_name(r);
  const RowDims d = reduce_dims(op, "x", x, "y", y);
  if (index.defined()) check_reduce_index(op, r, index, d.R);
  check_device(op, {&x, &y, &index}, device);
  return d;
}

RowDims check_reduce_backward(Reduction r, const Tensor& x, const Tensor& y, const Tensor& index,
                              const Tensor& dy, const Tensor& dx, const Device& device) {
  const std::string name = std::string(reduction_name(r)) + " backward";
  const char* op = name.c_str();
  const RowDims d = reduce_dims(op, "dx", dx, "dy", dy);
  if (reduction_reads_input(r)) {
    check_defined(op, "x", x);
    FRUGAL_CHECK(x.meta() == dx.meta(), op, ": x ", x.shape(), " and dx ", dx.shape(), " differ");
  }
  if (reduction_reads_output(r)) {
    check_defined(op, "y", y);
    FRUGAL_CHECK(y.meta() == dy.meta(), op, ": y ", y.shape(), " and dy ", dy.shape(), " differ");
  }
  check_reduce_index(op, r, index, d.R);
  check_device(op, {&x, &y, &index, &dy, &dx}, device);
  return d;
}

void check_rows(const char* op, const Tensor& x, const Tensor& y, const Device& device) {
  FRUGAL_CHECK(x.shape().rank() == 2 && x.shape()[0] >= 1 && x.shape()[1] >= 1 && is_float(x), op,
               ": x ", x.shape(), " ", dtype_name(x.dtype()), ", expected (N,C) f32/f64");
  FRUGAL_CHECK(!y.defined() || x.meta() == y.meta(), op, ": x ", x.shape(), " ",
               dtype_name(x.dtype()), " and ", y.shape(), " ", dtype_name(y.dtype()),
               " must match");
  check_device(op, {&x, &y}, device);
}

void check_labels(const char* op, const Tensor& x, const Tensor& labels, const Tensor& loss,
                  const Device& device) {
  check_rows(op, x, Tensor(), device);
  const int64_t N = x.shape()[0];
  FRUGAL_CHECK(labels.dtype() == DType::i32 && labels.shape() == Shape{N}, op, ": labels ",
               labels.shape(), " ", dtype_name(labels.dtype()), " for x ", x.shape(),
               ", expected [", N, "] i32");
  FRUGAL_CHECK(loss.numel() == 1 && loss.dtype() == x.dtype(), op, ": loss ", loss.shape(), " ",
               dtype_name(loss.dtype()), ", expected [1] ", dtype_name(x.dtype()));
  check_device(op, {&labels, &loss}, device);
}

void throw_label_outside(const char* op, int32_t label, int64_t n, const Tensor& x) {
  throw Error(detail::concat(op, ": label ", label, " of sample ", n, " is outside [0, ",
                             x.shape()[1], ") for x ", x.shape()));
}

void check_concat(const char* op, std::span<const Tensor> xs, const Tensor& y,
                  const Device& device) {
  const Shape& ys = y.shape();
  FRUGAL_CHECK(!xs.empty() && (ys.rank() == 2 || ys.rank() == 4), op, ": ", xs.size(),
               " parts into y ", ys, ", expected at least one part and y (N,C) or (N,C,H,W)");
  int64_t C = 0;
  for (const Tensor& x : xs) {
    const Shape& s = x.shape();
    const bool fits = x.dtype() == y.dtype() && s.rank() == ys.rank() && s[0] == ys[0] &&
                      (s.rank() == 2 || (s[2] == ys[2] && s[3] == ys[3]));
    FRUGAL_CHECK(fits, op, ": part ", s, " ", dtype_name(x.dtype()), " does not fit y ", ys, " ",
                 dtype_name(y.dtype()), " (N, H, W and dtype must match)");
    C += s[1];
    check_device(op, {&x}, device);
  }
  FRUGAL_CHECK(C == ys[1], op, ": parts have ", C, " channels in all, y ", ys, " has ", ys[1]);
  check_device(op, {&y}, device);
}

namespace {
void check_fixed_point_float(const Tensor& t, const std::string& who) {
  FRUGAL_CHECK(is_float(t), who, ": fixed-point values must be f32 or f64, got ",
               dtype_name(t.dtype()));
}
}  // namespace

void check_fixed_point_round(const Tensor& x, const Tensor& y, const std::string& who,
                             const Device& device) {
  check_fixed_point_float(x, who);
  FRUGAL_CHECK(x.meta() == y.meta(), who, ": x ", x.shape(), " and y ", y.shape(), " must match");
  check_device("fixed_point_round", {&x, &y}, device);
}

void check_fixed_point_add(const Tensor& a, const Tensor& f, const Tensor& y,
                           const std::string& who, const Device& device) {
  check_fixed_point_float(a, who);
  FRUGAL_CHECK(a.meta() == f.meta() && a.meta() == y.meta(), who, ": a ", a.shape(), ", f ",
               f.shape(), " and y ", y.shape(), " must match");
  check_device("fixed_point_add", {&a, &f, &y}, device);
}

void check_affine_forward(const Tensor& x, const Tensor& h, const Tensor& y, const Device& device) {
  check_same("affine", x, y, device);
  check_device("affine", {&h}, device);
}

void check_affine_backward(const Tensor& y, const Tensor& h, const Tensor& dy, const Tensor& dx,
                           const Tensor& dh, const Tensor& x, const Device& device) {
  check_same("affine backward", y, dy, device);
  check_same("affine backward", dy, dx, device);
  check_same("affine backward", h, dh, device);
  if (x.defined()) check_same("affine backward", y, x, device);
}

void throw_fixed_point_range(double y, int64_t i, int range_bits, const std::string& who) {
  throw Error(detail::concat(who, ": value ", y, " at element ", i,
                             " is outside the fixed-point range (-2^", range_bits, ", 2^",
                             range_bits, "), where grid additions stay exact: use a larger ",
                             "FixedPoint::range_bits"));
}

void throw_off_grid(int64_t i, int frac, bool in_place, double a, const std::string& who) {
  throw Error(detail::concat(who, ": element ", i,
                             " of the input is not on the fixed-point grid 2^-", frac, " (",
                             in_place ? "updated in place to " : "", a,
                             "): record fixed_point(x) before the first exact reversible block"));
}

void throw_off_grid(int frac, const std::string& who) {
  throw Error(detail::concat(who, ": an element of the input is not on the fixed-point grid 2^-",
                             frac,
                             ": record fixed_point(x) before the first exact reversible block"));
}

void throw_affine_scale(double hs, double s, int64_t i, const Shape& shape, double clamp,
                        double min_scale, const std::string& who) {
  const std::string at =
      detail::concat(" at element ", i, " of ", shape, ", from h = ", hs, " (clamp ", clamp, ")");
  FRUGAL_CHECK(std::isfinite(hs), who, ": scale s is ", s, at, ": F returned a non-finite value");
  FRUGAL_CHECK(std::isfinite(s), who, ": scale s is ", s, at, ": e^clamp overflows");
  throw Error(detail::concat(who, ": scale s = exp(clamp·tanh(h/clamp)) = ", s, at,
                             " is below min_scale ", min_scale, ": (y - t) / s would lose x"));
}

}  // namespace frugal

namespace frugal {

namespace {
void check_maxpool_index(const char* op, const Pool2dGeometry& g, const Tensor& index,
                         const Device& device, int bits) {
  FRUGAL_CHECK(g.kernel_h * g.kernel_w <= (int64_t{1} << bits), op, ": window ", g.kernel_h, "x",
               g.kernel_w, " does not fit a ", bits, "-bit index");
  const TensorMeta want = maxpool_index_meta(g, bits);
  FRUGAL_CHECK(index.meta() == want, op, ": index ", index.shape(), " ", dtype_name(index.dtype()),
               ", expected u8 ", want.shape, " (", bits, "-bit positions)");
  check_device(op, {&index}, device);
}
}  // namespace

void check_maxpool_forward(const Pool2dGeometry& g, const Tensor& x, const Tensor& y,
                           const Tensor& index, const Device& device, int bits) {
  check_pool("max_pool2d", g, x, y, device);
  check_pool_window("max_pool2d", g);
  if (index.defined()) check_maxpool_index("max_pool2d", g, index, device, bits);
}

void check_maxpool_backward(const Pool2dGeometry& g, const Tensor& dy, const Tensor& index,
                            const Tensor& dx, const Device& device, int bits) {
  check_pool("max_pool2d backward", g, dx, dy, device);
  check_pool_window("max_pool2d backward", g);
  check_maxpool_index("max_pool2d backward", g, index, device, bits);
}

ChannelDims check_batchnorm_train(const Tensor& x, const Tensor& y,
                                  std::initializer_list<const Tensor*> per_channel,
                                  const Device& device) {
  const ChannelDims d = check_batchnorm("batch_norm", x, y, per_channel, device);
  FRUGAL_CHECK(d.N * d.S > 1, "batch_norm: training needs more than 1 value per channel, got x ",
               x.shape());
  return d;
}

void check_concat_forward(std::span<const Tensor> xs, const Tensor& y, const Device& device) {
  check_concat("concat", xs, y, device);
  for (const Tensor& x : xs) FRUGAL_CHECK(x.defined(), "concat: an input is undefined");
}

void check_strided_copy(const CopyBox& g, const Tensor& x, const Tensor& y, const Device& device) {
  check_defined("strided_copy", "x", x);
  check_defined("strided_copy", "y", y);
  check_device("strided_copy", {&x, &y}, device);
  FRUGAL_CHECK(x.dtype() == y.dtype(), "strided_copy: x is ", dtype_name(x.dtype()), ", y is ",
               dtype_name(y.dtype()));
  FRUGAL_CHECK(g.rank >= 1 && g.rank <= CopyBox::kMaxRank, "strided_copy: ", g.str(), " has rank ",
               g.rank);
  const auto xa = reinterpret_cast<uintptr_t>(x.device_raw());
  const auto ya = reinterpret_cast<uintptr_t>(y.device_raw());
  FRUGAL_CHECK(xa + x.bytes() <= ya || ya + y.bytes() <= xa || x.numel() == 0 || y.numel() == 0,
               "strided_copy: y overlaps x");
  // The lowest and highest element the box reaches in each tensor (a negative stride walks
  // backwards from the offset: a flip).
  int64_t x_low = g.x_offset, x_high = g.x_offset, y_low = g.y_offset, y_high = g.y_offset;
  bool ok = true;
  for (int k = 0; k < g.rank; ++k) {
    const auto u = static_cast<size_t>(k);
    ok = ok && g.size[u] >= 0;
    const int64_t dx = (g.size[u] - 1) * g.x_stride[u], dy = (g.size[u] - 1) * g.y_stride[u];
    (dx < 0 ? x_low : x_high) += dx;
    (dy < 0 ? y_low : y_high) += dy;
  }
  FRUGAL_CHECK(ok && (g.numel() == 0 ||
                      (x_low >= 0 && y_low >= 0 && x_high < x.numel() && y_high < y.numel())),
               "strided_copy: ", g.str(), " does not fit x ", x.shape(), " and y ", y.shape());
}

AxisDims check_softmax(const char* op, const Tensor& x, const Tensor& y, const Tensor& dy, int axis,
                       const Device& device) {
  check_defined(op, "x", x);
  check_defined(op, "y", y);
  FRUGAL_CHECK(is_float(x) && axis >= 0 && axis < x.shape().rank(), op, ": x ", x.shape(), " ",
               dtype_name(x.dtype()), " with axis ", axis, ", expected f32/f64 and an axis of x");
  FRUGAL_CHECK(x.meta() == y.meta() && (!dy.defined() || dy.meta() == x.meta()), op, ": x ",
               x.shape(), " ", dtype_name(x.dtype()), " and ", y.shape(), " ",
               dtype_name(y.dtype()), dy.defined() ? " and dy " + dy.shape().str() : std::string(),
               " must match");
  check_device(op, {&x, &y, &dy}, device);
  AxisDims d{1, x.shape()[axis], 1};
  for (int k = 0; k < axis; ++k) d.outer *= x.shape()[k];
  for (int k = axis + 1; k < x.shape().rank(); ++k) d.inner *= x.shape()[k];
  return d;
}

void check_resize(const char* op, const ResizeGeometry& g, const Tensor& x, const Tensor& y,
                  const Device& device) {
  check_defined(op, "x", x);
  check_defined(op, "y", y);
  check_device(op, {&x, &y}, device);
  FRUGAL_CHECK(g.N >= 0 && g.C >= 0 && g.H >= 1 && g.W >= 1 && g.P >= 1 && g.Q >= 1 &&
                   g.scale_h > 0 && g.scale_w > 0 && std::isfinite(g.scale_h) &&
                   std::isfinite(g.scale_w) && x.shape() == Shape({g.N, g.C, g.H, g.W}) &&
                   y.shape() == Shape({g.N, g.C, g.P, g.Q}) && is_float(x) &&
                   x.dtype() == y.dtype(),
               op, ": x ", x.shape(), " ", dtype_name(x.dtype()), " and y ", y.shape(), " ",
               dtype_name(y.dtype()), " do not fit ", g.H, "x", g.W, " -> ", g.P, "x", g.Q,
               " (scales ", g.scale_h, ", ", g.scale_w, ")");
}

void check_grid_sample(const char* op, const GridSampleGeometry& g, const Tensor& x,
                       const Tensor& grid, const Tensor& y, const Device& device) {
  check_device(op, {&x, &grid, &y}, device);
  FRUGAL_CHECK(g.N >= 0 && g.C >= 0 && g.H >= 1 && g.W >= 1 && g.P >= 1 && g.Q >= 1, op,
               ": sizes N ", g.N, " C ", g.C, " H ", g.H, " W ", g.W, " P ", g.P, " Q ", g.Q);
  const Shape xs{g.N, g.C, g.H, g.W}, gs{g.N, g.P, g.Q, 2}, ys{g.N, g.C, g.P, g.Q};
  const Tensor& first = x.defined() ? x : grid.defined() ? grid : y;
  FRUGAL_CHECK(first.defined() && is_float(first), op, ": needs f32 or f64 tensors");
  for (auto [t, want, name] : {std::tuple{&x, &xs, "x"}, {&grid, &gs, "grid"}, {&y, &ys, "y"}})
    FRUGAL_CHECK(!t->defined() || (t->shape() == *want && t->dtype() == first.dtype()), op, ": ",
                 name, " ", t->shape(), " ", dtype_name(t->dtype()), ", expected ", *want, " ",
                 dtype_name(first.dtype()));
}

std::pair<int64_t, int64_t> check_gather(const char* op, const Tensor& x,
                                         std::span<const int64_t> index, int64_t outer,
                                         const Tensor& y, const Device& device) {
  check_defined(op, "x", x);
  check_defined(op, "y", y);
  check_device(op, {&x, &y}, device);
  const auto K = static_cast<int64_t>(index.size());
  const int64_t I = outer > 0 && K > 0 ? y.numel() / (outer * K) : 0;
  const int64_t D = outer > 0 && I > 0 ? x.numel() / (outer * I) : 0;
  FRUGAL_CHECK(is_float(x) && x.dtype() == y.dtype() && I > 0 && D > 0 &&
                   y.numel() == outer * K * I && x.numel() == outer * D * I,
               op, ": x ", x.shape(), " ", dtype_name(x.dtype()), " and y ", y.shape(), " ",
               dtype_name(y.dtype()), " are not (", outer, ", D, I) and (", outer, ", ", K,
               ", I) of one float type");
  for (int64_t k : index)
    FRUGAL_CHECK(k >= 0 && k < D, op, ": index ", k, " outside an axis of ", D);
  return {D, I};
}

void check_matmul(const MatmulGeometry& g, const Tensor& a, const Tensor& b, const Tensor& c,
                  const Device& device) {
  check_defined("batched_matmul", "a", a);
  check_defined("batched_matmul", "b", b);
  check_defined("batched_matmul", "c", c);
  check_device("batched_matmul", {&a, &b, &c}, device);
  const bool fits = g.batch >= 0 && g.M >= 0 && g.N >= 0 && g.K >= 0 && is_float(a) &&
                    a.dtype() == b.dtype() && a.dtype() == c.dtype() &&
                    a.numel() == g.batch * g.M * g.K && b.numel() == g.batch * g.K * g.N &&
                    c.numel() == g.batch * g.M * g.N;
  FRUGAL_CHECK(fits, "batched_matmul: a ", a.shape(), " b ", b.shape(), " c ", c.shape(), " ",
               dtype_name(a.dtype()), " do not hold ", g.batch, " products of (", g.M, ",", g.K,
               ") x (", g.K, ",", g.N, ")");
}

}  // namespace frugal
