// The gradient-check harness: analytic gradients from the executor against central
// differences, in double precision, with poisoned buffers.
#include "check/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/rng.h"
#include "run/executor.h"

namespace frugal::testing {

Tensor random_tensor(Shape shape, uint64_t seed, double lo, double hi, DType dtype) {
  Tensor t = Tensor::empty(std::move(shape), dtype);
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = lo + (hi - lo) * rng.uniform();
    if (dtype == DType::f32)
      t.data<float>()[i] = static_cast<float>(v);
    else
      t.data<double>()[i] = v;
  }
  return t;
}

Tensor kink_free(Shape shape, uint64_t seed) {
  Tensor t = random_tensor(std::move(shape), seed, 0.1, 1.0);
  for (int64_t i = 0; i < t.numel(); i += 2) t.data<double>()[i] *= -1;
  return t;
}

void randomize_param(Tape& tape, const std::string& name, uint64_t seed, double lo, double hi) {
  Parameter* p = tape.params().find(name);
  FRUGAL_CHECK(p != nullptr, "randomize_param: the tape has no parameter '", name, "'");
  copy_bytes(random_tensor(p->value.shape(), seed, lo, hi, p->value.dtype()), p->value);
}

Tensor random_labels(int64_t n, int64_t classes, uint64_t seed) {
  Tensor t = Tensor::empty(Shape{n}, DType::i32);
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(rng.below(classes));
  return t;
}

namespace {

struct Target {
  std::string name;
  Tensor data;  // the live tensor the executor reads (input buffer or parameter)
  Tensor grad;  // analytic gradient (copied)
};

}  // namespace

std::vector<int64_t> gradcheck_sample(int64_t n, int64_t most, uint64_t seed) {
  std::vector<int64_t> picked;
  if (most <= 0 || n <= most) {
    for (int64_t i = 0; i < n; ++i) picked.push_back(i);
    return picked;
  }
  Rng rng(seed * 104729 + static_cast<uint64_t>(n));
  picked.push_back(0);
  const int64_t inner = most - 2;  // stretches over elements 1 .. n-2, each at least 1 long
  for (int64_t k = 0; k < inner; ++k) {
    const int64_t lo = 1 + k * (n - 2) / inner, hi = 1 + (k + 1) * (n - 2) / inner;
    picked.push_back(lo + static_cast<int64_t>(rng.below(static_cast<uint64_t>(hi - lo))));
  }
  picked.push_back(n - 1);
  return picked;
}

Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  copy_bytes(t, c);
  return c;
}

void check_gradients(const std::function<std::vector<Value>(std::span<const Value>)>& build,
                     const std::vector<Tensor>& inputs, GradcheckOptions o) {
  FRUGAL_CHECK(o.max_elements == 0 || o.max_elements >= 2, "gradcheck: max_elements ",
               o.max_elements, " must be 0 (all) or at least 2 (the first and the last)");
  ParamStore store(o.seed);
  Tape tape(store, DType::f64);
  std::vector<Value> in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in.push_back(tape.input(detail::concat("x", i), inputs[i].shape(), inputs[i].dtype(),
                            inputs[i].dtype() == DType::f64));
  std::vector<Value> out = build(in);
  std::vector<Value> keep = out;
  keep.insert(keep.end(), in.begin(), in.end());
  Executor ex(tape, cpu_backend(),
              {.mode = Mode::training,
               .memory = MemoryMode::baseline,
               .poison = true,
               .seed = o.seed,
               .keep = keep,
               .encodings_as_recorded = true});
  for (size_t i = 0; i < inputs.size(); ++i) ex.set_input(in[i], inputs[i]);

  // Random upstream gradients R; the scalar checked is f = sum R * out.
  std::vector<std::pair<Value, Tensor>> seeds;
  for (size_t j = 0; j < out.size(); ++j)
    if (out[j].dtype() == DType::f64)
      seeds.emplace_back(out[j], random_tensor(out[j].shape(), o.seed * 7919 + j + 1));
  auto objective = [&]() {
    ex.set_step(0);
    ex.forward();
    double f = 0;
    for (const auto& [v, r] : seeds) {
      const Tensor& y = ex.value(v);
      for (int64_t i = 0; i < y.numel(); ++i) f += r.data<double>()[i] * y.data<double>()[i];
    }
    return f;
  };
  objective();
  for (size_t j = 0; j < seeds.size(); ++j) {
    const Tensor& y = ex.value(seeds[j].first);
    for (int64_t i = 0; i < y.numel(); ++i)
      FRUGAL_CHECK(std::isfinite(y.data<double>()[i]), "gradcheck: forward output ", j, " element ",
                   i, " is not finite");
  }
  ex.backward(seeds);

  std::vector<Target> targets;
  for (size_t i = 0; i < in.size(); ++i)
    if (inputs[i].dtype() == DType::f64)
      targets.push_back({detail::concat("input ", i), ex.input(in[i]), clone(ex.grad(in[i]))});
  for (size_t v = 0; v < tape.values().size(); ++v) {
    const ValueNode& node = tape.values()[v];
    if (node.kind != ValueKind::param || !node.requires_grad) continue;
    Value pv(&tape, static_cast<int>(v));
    targets.push_back(
        {detail::concat("parameter ", node.name), node.param->value, clone(ex.grad(pv))});
  }
  FRUGAL_CHECK(!targets.empty(), "gradcheck: nothing to differentiate");
  std::string failures;

  for (size_t ti = 0; ti < targets.size(); ++ti) {
    Target& t = targets[ti];
    double worst = 0;
    std::string where;
    double* x = t.data.data<double>();
    for (int64_t i : gradcheck_sample(t.data.numel(), o.max_elements, o.seed * 1000003 + ti)) {
      const double saved = x[i];
      x[i] = saved + o.eps;
      const double fp = objective();
      x[i] = saved - o.eps;
      const double fm = objective();
      x[i] = saved;
      const double numeric = (fp - fm) / (2 * o.eps);
      const double analytic = t.grad.data<double>()[i];
      const double err =
          std::abs(analytic - numeric) / std::max({1.0, std::abs(analytic), std::abs(numeric)});
      if (!(err <= worst)) {
        worst = err;
        std::ostringstream s;
        s << t.name << " element " << i << ": analytic " << analytic << ", numeric " << numeric;
        where = s.str();
      }
    }
    if (!(worst <= o.tolerance))
      failures += detail::concat("\n  ", where, " (relative error ", worst, " > tolerance ",
                                 o.tolerance, ")");
  }
  FRUGAL_CHECK(failures.empty(), "gradcheck: analytic and numeric gradients differ:", failures);
}

}  // namespace frugal::testing
