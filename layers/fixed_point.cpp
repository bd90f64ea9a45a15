// Fixed-point rounding and exact grid addition on host memory (CPU backend), and the
// fixed_point op. Rounding uses the 2^(mantissa-1) trick rather than std::nearbyint, which
// the baseline x86-64 build would call once per element; both round ties to even.
#include "layers/fixed_point.h"

#include <cmath>
#include <limits>

namespace frugal {

namespace {

constexpr int64_t kParallelMin = 32768;  // fewer elements than this: one thread

// t rounded to an integer, ties to even. For |t| < 2^(digits-1), t ± 2^(digits-1) keeps no
// fraction bits, so the addition rounds t (in the default rounding mode) and the subtraction is
// exact; a larger |t| is an integer already. NaN stays NaN.
template <typename T>
T round_to_integer(T t) {
  constexpr T magic = static_cast<T>(uint64_t{1} << (std::numeric_limits<T>::digits - 1));
  const T m = std::copysign(magic, t);
  return std::abs(t) < magic ? (t + m) - m : t;
}

template <typename T>
struct Grid {
  T scale, inv, limit;  // 2^frac, 2^-frac, 2^range
  Grid(const FixedPoint& fp, int frac)
      : scale(std::ldexp(T(1), frac)),
        inv(std::ldexp(T(1), -frac)),
        limit(std::ldexp(T(1), fp.range_bits)) {}
  T round(T x) const { return round_to_integer(x * scale) * inv; }
  bool on(T x) const { return round_to_integer(x * scale) == x * scale; }  // false for NaN
  bool inside(T y) const { return std::abs(y) < limit; }                   // false for NaN
};

void check_host(const Tensor& t, const std::string& who) {
  FRUGAL_CHECK(t.device().kind == DeviceKind::cpu, who,
               ": fixed-point kernels run on host memory, need the CPU backend, got ",
               t.device().str());
  FRUGAL_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::f64, who,
               ": fixed-point values must be f32 or f64, got ", dtype_name(t.dtype()));
}

[[noreturn]] void throw_range(double y, int64_t i, const FixedPoint& fp, const std::string& who) {
  throw Error(detail::concat(who, ": value ", y, " at element ", i,
                             " is outside the fixed-point range (-2^", fp.range_bits, ", 2^",
                             fp.range_bits, "), where grid additions stay exact: use a larger ",
                             "FixedPoint::range_bits"));
}

template <typename T>
void round_t(const Tensor& xt, const Grid<T>& grid, const FixedPoint& fp, Tensor& yt,
             const std::string& who) {
  const int64_t n = xt.numel();
  const T* x = xt.data<T>();
  T* y = yt.data<T>();
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T yi = grid.round(x[i]);
    bad |= static_cast<int>(!grid.inside(yi));
    y[i] = yi;
  }
  if (!bad) return;
  for (int64_t i = 0; i < n; ++i)
    if (!grid.inside(y[i])) throw_range(static_cast<double>(y[i]), i, fp, who);
}

template <typename T>
void add_t(const Tensor& at, const Tensor& ft, const Grid<T>& grid, const FixedPoint& fp, int frac,
           bool subtract, Tensor& yt, const std::string& who) {
  const int64_t n = at.numel();
  const T* a = at.data<T>();
  const T* f = ft.data<T>();
  T* y = yt.data<T>();
  const T sign = subtract ? T(-1) : T(1);
  int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const T ai = a[i];
    const T yi = ai + sign * grid.round(f[i]);
    bad |= static_cast<int>(!grid.on(ai)) | static_cast<int>(!grid.inside(yi));
    y[i] = yi;
  }
  if (!bad) return;
  // y may have overwritten a (in place): then an input off the grid shows as a result off it.
  for (int64_t i = 0; i < n; ++i) {
    if (!grid.inside(y[i])) throw_range(static_cast<double>(y[i]), i, fp, who);
    const bool off = a == y ? !grid.on(y[i]) : !grid.on(a[i]);
    FRUGAL_CHECK(!off, who, ": element ", i, " of the input is not on the fixed-point grid 2^-",
                 frac, " (", a == y ? "updated in place to " : "", static_cast<double>(a[i]),
                 "): record fixed_point(x) before the first exact reversible block");
  }
  FRUGAL_CHECK(false, who, ": an element of the input is not on the fixed-point grid 2^-", frac,
               ": record fixed_point(x) before the first exact reversible block");
}

}  // namespace

int fixed_point_frac_bits(const FixedPoint& fp, DType t, const std::string& who) {
  FRUGAL_CHECK(t == DType::f32 || t == DType::f64, who,
               ": fixed-point values must be f32 or f64, got ", dtype_name(t));
  const int digits = t == DType::f32 ? 24 : 53;
  FRUGAL_CHECK(fp.range_bits >= 1 && fp.range_bits < digits, who, ": FixedPoint::range_bits ",
               fp.range_bits, " must be in [1, ", digits - 1, "] for ", dtype_name(t));
  return digits - fp.range_bits;
}

void fixed_point_round(const Tensor& x, const FixedPoint& fp, Tensor& y, const std::string& who) {
  check_host(x, who);
  FRUGAL_CHECK(x.meta() == y.meta(), who, ": x ", x.shape(), " and y ", y.shape(), " must match");
  const int frac = fixed_point_frac_bits(fp, x.dtype(), who);
  if (x.dtype() == DType::f32)
    round_t<float>(x, Grid<float>(fp, frac), fp, y, who);
  else
    round_t<double>(x, Grid<double>(fp, frac), fp, y, who);
}

void fixed_point_add(const Tensor& a, const Tensor& f, const FixedPoint& fp, bool subtract,
                     Tensor& y, const std::string& who) {
  check_host(a, who);
  FRUGAL_CHECK(a.meta() == f.meta() && a.meta() == y.meta(), who, ": a ", a.shape(), ", f ",
               f.shape(), " and y ", y.shape(), " must match");
  const int frac = fixed_point_frac_bits(fp, a.dtype(), who);
  if (a.dtype() == DType::f32)
    add_t<float>(a, f, Grid<float>(fp, frac), fp, frac, subtract, y, who);
  else
    add_t<double>(a, f, Grid<double>(fp, frac), fp, frac, subtract, y, who);
}

std::vector<TensorMeta> FixedPointOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "fixed_point: expects 1 input, got ", in.size());
  fixed_point_frac_bits(fp_, in[0].dtype, "fixed_point");
  return {in[0]};
}

// In place always allowed; backward reads nothing and dx may take dy's bytes.
Roles FixedPointOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};
  if (mode == Mode::training) r.grad_aliases = {{.output = 0, .input = 0}};
  return r;
}

// y = q(x)
void FixedPointOp::forward(const OpContext& ctx) {
  fixed_point_round(ctx.input(0), fp_, ctx.output(0), name());
}

// dx = dy (straight through the rounding)
void FixedPointOp::backward(const OpContext& ctx) {
  if (ctx.needs_grad_input(0)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(0));
}

Value fixed_point(Value x, FixedPoint fp, std::source_location where) {
  return x.tape().record(std::make_unique<FixedPointOp>(fp), {x}, where)[0];
}

}  // namespace frugal
