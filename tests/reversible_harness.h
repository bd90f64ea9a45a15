// Helpers for tests of blocks that rebuild their input: a probe op that passes its input
// through and records what it saw (x in forward; in backward what its output holds then, which
// is the rebuilt copy when the next op rebuilds it), and error measures.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <functional>
#include <optional>
#include <vector>

#include "check/gradcheck.h"
#include "check/modecheck.h"
#include "layers/fixed_point.h"
#include "run/executor.h"

namespace frugal::testing {

struct ProbeRecord {
  Tensor forward, backward;  // host copies, defined once the pass has run
};

class ProbeOp final : public Op {
 public:
  explicit ProbeOp(ProbeRecord& record) : record_(record) {}
  std::string name() const override { return "probe"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override { return {in[0]}; }
  Roles roles(Mode mode, const Backend&) const override {
    Roles r;
    if (mode == Mode::training) r.backward_reads_outputs = {0};
    return r;
  }
  void forward(const OpContext& ctx) override {
    ctx.backend().copy(ctx.input(0), ctx.output(0));
    record_.forward = snapshot(ctx.input(0));
  }
  void backward(const OpContext& ctx) override {
    record_.backward = snapshot(ctx.output(0));
    if (ctx.needs_grad_input(0)) ctx.backend().copy(ctx.grad_output(0), ctx.grad_input(0));
  }

 private:
  static Tensor snapshot(const Tensor& t) {
    Tensor c = Tensor::empty(t.shape(), t.dtype());
    copy_bytes(t, c);
    return c;
  }
  ProbeRecord& record_;
};

inline Value probe(Value x, ProbeRecord& record) {
  return x.tape().record(std::make_unique<ProbeOp>(record), {x},
                         std::source_location::current())[0];
}

// max |a - b| / max(1, max |b|): the error of a rebuilt tensor a against b (infinite on NaN).
inline double round_trip_error(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 1;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = element_as_double(a, i), y = element_as_double(b, i);
    const double d = std::abs(x - y);
    diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
    scale = std::max(scale, std::abs(y));
  }
  return diff / scale;
}

// max over elements of |a - b| / max(1, |b|) (infinite on NaN).
inline double max_rel(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = element_as_double(a, i), y = element_as_double(b, i);
    const double d = std::abs(x - y) / std::max(1.0, std::abs(y));
    worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(worst, d);
  }
  return worst;
}

// One step of net over x (2,4,6,6) uniform in [-1, 1), seeded with a fixed upstream gradient:
// the output, d x, every trainable parameter's gradient and every running statistic after it.
struct StepResult {
  Tensor y, dx;
  std::vector<Tensor> grads, stats;
};
StepResult run_step(const Net& net, DType dtype, MemoryMode memory);

// Checks a rebuilding run against its stored-activation twin (f64): outputs within 1e-12,
// d x and parameter gradients within 1e-10, running statistics within 1e-12.
void check_equal_to_twin(const StepResult& rebuilt, const StepResult& twin);
// Checks that each probe's backward record (the rebuilt input) is within 1e-12 of its forward
// record.
void check_round_trips(const std::vector<ProbeRecord>& probes);

// F and G of a RevNet unit on h's channels: BN, ReLU, conv 3x3, (dropout 0.2), BN, ReLU,
// conv 3x3.
Value revnet_half(Value h, bool with_dropout);
// The stored-activation twin of reversible block `index` with F = G = revnet_half: split,
// y1 = x1 + F(x2), y2 = x2 + G(y1), concat, F and G recorded under the scopes the reversible
// op uses ("reversible<index>/F") so both share parameters; with `grid`, F's and G's outputs
// rounded onto it as the fixed-point coupling does.
Value stored_twin(Value x, int index, bool with_dropout,
                  const std::optional<FixedPoint>& grid = std::nullopt);

}  // namespace frugal::testing
