// LeakyReLU forward and backward, with its roles. No Backend kernel computes slope * x on one
// side of 0, and a layer cannot add one, so the loops below run directly on host memory (the
// CPU backend's tensors) with OpenMP; on any other device the op throws.
#include "layers/leaky_relu.h"

#include <algorithm>
#include <cmath>

namespace frugal {

namespace {

// A bit mask over n elements: bit i % 8 of byte i / 8.
int64_t mask_bytes(int64_t n) {
  return (n + 7) / 8;
}

void check_host(const OpContext& ctx) {
  FRUGAL_CHECK(ctx.backend().device().kind == DeviceKind::cpu,
               "leaky_relu: runs on host memory, needs the CPU backend, got ",
               ctx.backend().device().str());
}

// x (n)  y (n)  mask (ceil(n/8)) when backward reads it.  y may alias x: y[i] depends on
// x[i] alone. One mask byte (8 elements) per iteration, so threads never share a byte.
template <typename T>
void leaky_relu_forward_t(const OpContext& ctx, bool write_mask, T slope) {
  const int64_t n = ctx.input(0).numel();
  const T* x = ctx.input(0).data<T>();
  T* y = ctx.output(0).data<T>();
  uint8_t* mask = write_mask ? ctx.saved(0).data<uint8_t>() : nullptr;
  const int64_t bytes = mask_bytes(n);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < bytes; ++b) {
    uint8_t bits = 0;
    for (int64_t i = 8 * b; i < std::min(n, 8 * b + 8); ++i) {
      const bool positive = x[i] > T(0);
      y[i] = positive ? x[i] : slope * x[i];
      bits |= static_cast<uint8_t>(positive << (i - 8 * b));
    }
    if (mask) mask[b] = bits;
  }
}

// dy (n)  y (n) or mask (ceil(n/8))  dx (n).  dx may alias dy.
template <typename T>
void leaky_relu_backward_t(const OpContext& ctx, bool read_mask, T slope) {
  const int64_t n = ctx.grad_output(0).numel();
  const T* dy = ctx.grad_output(0).data<T>();
  const T* y = read_mask ? nullptr : ctx.output(0).data<T>();
  const uint8_t* mask = read_mask ? ctx.saved(0).data<uint8_t>() : nullptr;
  T* dx = ctx.grad_input(0).data<T>();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const bool positive = read_mask ? (mask[i / 8] >> (i % 8)) & 1 : y[i] > T(0);
    dx[i] = positive ? dy[i] : slope * dy[i];
  }
}

}  // namespace

std::vector<TensorMeta> LeakyReluOp::infer(std::span<const TensorMeta> in) {
  FRUGAL_CHECK(in.size() == 1, "leaky_relu: expects 1 input, got ", in.size());
  FRUGAL_CHECK(in[0].dtype == DType::f32 || in[0].dtype == DType::f64,
               "leaky_relu: input must be f32 or f64, got ", dtype_name(in[0].dtype), " ",
               in[0].shape);
  FRUGAL_CHECK(std::isfinite(slope_) && slope_ >= 0, "leaky_relu: slope must be finite and >= 0 ",
               "(backward tells x > 0 from y > 0), got ", slope_);
  x_ = in[0];
  return {x_};
}

// In place always allowed; in training, backward reads y or the mask, never x.
Roles LeakyReluOp::roles(Mode mode, const Backend&) const {
  Roles r;
  r.aliases = {{.output = 0, .input = 0}};  // y may take x's bytes
  if (mode == Mode::training) {
    if (saves == Saves::mask)
      r.saved = {{Shape{mask_bytes(x_.shape.numel())}, DType::u8}};
    else
      r.backward_reads_outputs = {0};
    r.grad_aliases = {{.output = 0, .input = 0}};  // dx may take dy's bytes
  }
  return r;
}

// y = x > 0 ? x : slope * x; in training also the mask x > 0 when backward reads the mask.
void LeakyReluOp::forward(const OpContext& ctx) {
  check_host(ctx);
  const bool mask = ctx.training() && saves == Saves::mask;
  if (ctx.input(0).dtype() == DType::f32)
    leaky_relu_forward_t(ctx, mask, static_cast<float>(slope_));
  else
    leaky_relu_forward_t(ctx, mask, slope_);
}

// dx = dy * (x > 0 ? 1 : slope), where x > 0 is read from the mask, or as y > 0.
void LeakyReluOp::backward(const OpContext& ctx) {
  if (!ctx.needs_grad_input(0)) return;
  check_host(ctx);
  const bool mask = saves == Saves::mask;
  if (ctx.grad_output(0).dtype() == DType::f32)
    leaky_relu_backward_t(ctx, mask, static_cast<float>(slope_));
  else
    leaky_relu_backward_t(ctx, mask, slope_);
}

Value leaky_relu(Value x, double slope, std::source_location where) {
  return x.tape().record(std::make_unique<LeakyReluOp>(slope), {x}, where)[0];
}

}  // namespace frugal
