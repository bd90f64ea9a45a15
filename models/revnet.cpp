// CIFAR RevNets: one residual body (basic or bottleneck) serves as F and G of the reversible
// units on half the channels and as the stored full-width unit where the shape changes.
#include "models/revnet.h"

#include <array>
#include <functional>
#include <optional>
#include <string>

#include "core/error.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_slice.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/fixed_point.h"
#include "layers/flatten.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "recompute/checkpoint.h"
#include "recompute/reversible.h"

namespace frugal {
namespace {

struct RevNetSpec {
  int n;                          // units per stage
  bool bottleneck;                // 164: bottleneck bodies, width = planes x 4
  std::array<int64_t, 3> planes;  // per stage
};

Value maybe_bn(Value x, bool on, const std::string& name) {
  return on ? batch_norm(x, {.name = name}) : x;
}

Value conv(Value x, int64_t K, int64_t kernel, int64_t stride, const char* name) {
  return conv2d(x, {.out = K,
                    .kernel = kernel,
                    .stride = stride,
                    .pad = kernel / 2,
                    .bias = false,
                    .name = name});
}

// A residual body x (N,C,H,W) -> (N,K,H/stride,W/stride), pre-activation (skipped when
// `first`). Basic: conv 3x3 (stride), conv 3x3. Bottleneck of width B: conv 1x1, conv 3x3
// (stride), conv 1x1 to K. Each conv after the first is preceded by BN, ReLU.
Value body(Value x, int64_t K, int64_t B, int64_t stride, bool first, bool bottleneck, bool bn) {
  Value y = first ? x : relu(maybe_bn(x, bn, "bn1"));
  if (!bottleneck) {
    y = relu(maybe_bn(conv(y, K, 3, stride, "conv1"), bn, "bn2"));
    return conv(y, K, 3, 1, "conv2");
  }
  y = relu(maybe_bn(conv(y, B, 1, 1, "conv1"), bn, "bn2"));
  y = relu(maybe_bn(conv(y, B, 3, stride, "conv2"), bn, "bn3"));
  return conv(y, K, 1, 1, "conv3");
}

// The full-width unit that changes width or stride, storing its activations:
// body(x) + BN(conv 1x1 (stride) (x)).
Value downsampling_unit(Value x, int64_t K, int64_t B, int64_t stride, bool first, bool bottleneck,
                        bool bn) {
  Tape::Scope scope(x.tape(), "down");
  Value y = body(x, K, B, stride, first, bottleneck, bn);
  Value s;
  {
    Tape::Scope shortcut(x.tape(), "shortcut");
    s = maybe_bn(conv(x, K, 1, stride, "conv"), bn, "bn");
  }
  return add(y, s);
}

// y1 = x1 + F(x2), y2 = x2 + G(y1) on halves of c channels (F and G rounded onto `grid` when
// set): a reversible block, or its stored twin recorded under the scopes the block gives F and
// G ("reversible<k>/F"), so both have the same parameters.
Value reversible_unit(Value x, const HalfNet& half, bool reversible,
                      const std::optional<FixedPoint>& grid, Recompute rebuilds) {
  if (reversible)
    return reversible_block(x, half, half, {.fixed_point = grid, .rebuilds = rebuilds});
  Tape& t = x.tape();
  const int64_t c = x.shape()[1];
  Tape::Scope scope(t, t.unique_name("reversible"));
  Value x1 = channel_slice(x, 0, c / 2), x2 = channel_slice(x, c / 2, c);
  auto in_scope = [&](const char* name, Value v) {
    Tape::Scope s(t, name);
    Value f = half(v);
    return grid ? fixed_point(f, *grid) : f;
  };
  Value y1 = add(x1, in_scope("F", x2));
  Value y2 = add(x2, in_scope("G", y1));
  return concat({y1, y2});
}

}  // namespace

Value revnet(Value images, int depth, const ModelConfig& config, bool reversible) {
  FRUGAL_CHECK(depth == 38 || depth == 110 || depth == 164, "revnet: depth ", depth,
               " is not one of 38, 110, 164");
  const RevNetSpec spec = depth == 38 ? RevNetSpec{3, false, {32, 64, 112}}
                                      : RevNetSpec{9, depth == 164, {32, 64, 128}};
  Tape& t = images.tape();
  const bool bn = config.batch_norm;
  // Reversible: the stem, which cannot rebuild its input, is a checkpoint segment (its conv
  // output would otherwise stay for its BN's backward; recomputing it costs little); the
  // downsampling units too when config.checkpoint_downsampling.
  auto checkpointed = [&](Value x, const SubNet& unit, bool on) {
    return reversible && on ? checkpoint(x, unit, config.checkpoint_rebuilds) : unit(x);
  };
  Value x = checkpointed(
      images,
      [&](Value v) {
        Tape::Scope scope(v.tape(), "stem");
        return relu(maybe_bn(conv(v, 32, 3, 1, "conv"), bn, "bn"));
      },
      true);
  bool first = true;  // the stem's BN-ReLU is the first unit's pre-activation
  // Fixed-point coupling: each run of reversible units starts from an input rounded onto the
  // grid, which the units then keep it on.
  std::optional<FixedPoint> grid;
  if (config.fixed_point_range > 0) grid = FixedPoint{.range_bits = config.fixed_point_range};
  bool on_grid = false;
  for (int s = 0; s < 3; ++s) {
    Tape::Scope stage(t, "stage" + std::to_string(s + 1));
    const int64_t P = spec.planes[static_cast<size_t>(s)];
    const int64_t K = spec.bottleneck ? 4 * P : P;
    for (int u = 0; u < spec.n; ++u) {
      const int64_t stride = s > 0 && u == 0 ? 2 : 1;
      if (stride != 1 || x.shape()[1] != K) {
        x = checkpointed(
            x,
            [&](Value v) { return downsampling_unit(v, K, P, stride, first, spec.bottleneck, bn); },
            config.checkpoint_downsampling);
        on_grid = false;
      } else {
        // F and G on K/2 channels; the bottleneck's inner width halves too (memcnn).
        HalfNet half = [=](Value h) {
          return body(h, K / 2, P / 2, 1, first, spec.bottleneck, bn);
        };
        if (grid && !on_grid) x = fixed_point(x, *grid);
        on_grid = true;
        x = reversible_unit(x, half, reversible, grid, config.checkpoint_rebuilds);
      }
      first = false;
    }
  }
  Tape::Scope scope(t, "head");
  x = relu(maybe_bn(x, bn, "bn"));
  x = flatten(avg_pool2d(x, {.kernel = x.shape()[2], .stride = 1}));
  return linear(x, {.out = classes_or(config, 10), .name = "linear"});
}

}  // namespace frugal
