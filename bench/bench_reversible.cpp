// bench_reversible: what reversible blocks buy and what they cost. (a) training memory of
// RevNet-110 against ResNet-110, (b) against RevNet-110 with its activations stored, (c) the
// step time of both RevNet-110s, and (d) how far a chain of reversible blocks drifts from its
// stored twin with depth: the rebuilt input and the gradients, in f64 and f32, with memcnn's
// floating-point coupling and with frugal's fixed-point one.
#include <omp.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/channel_slice.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/fixed_point.h"
#include "layers/relu.h"
#include "layers/softmax_cross_entropy.h"
#include "memory/layout.h"
#include "models/resnet_cifar.h"
#include "models/revnet.h"
#include "recompute/reversible.h"
#include "recompute/subgraph.h"
#include "report/report.h"
#include "run/executor.h"
#include "run/plan.h"

using namespace frugal;

namespace {

using Builder = std::function<Value(Value)>;

// The RevNets' coupling in (a)-(c): ModelConfig::fixed_point_range (0: floating point).
int g_fixed_point_range = ModelConfig{}.fixed_point_range;

double mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

// ---- (a), (b): planned training memory, f32 ----

struct StepMemory {
  size_t arena = 0, lower_bound = 0, outputs = 0, buffers = 0;
  size_t stored = 0;  // outputs and saved tensors held across the forward/backward boundary
};

StepMemory step_memory(const Builder& build, int64_t N) {
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  Value x = tape.input("images", {N, 3, 32, 32}, DType::f32);
  Value loss = softmax_cross_entropy(build(x), tape.input("labels", {N}, DType::i32));
  const ReportOptions ro{.keep = {loss.id()}};
  const MemoryReport r = memory_report(tape, Mode::training, cpu_backend(), ro);
  StepMemory m{r.planned.arena, r.planned.lower_bound, r.planned.bytes.outputs,
               r.planned.bytes.buffers, 0};
  const Layout l = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(),
                                 report_layout_options(Mode::training, ro));
  // Alias groups live from the last forward step (n - 1) into backward (n), counted once.
  const int n = l.live.ops;
  std::set<int> held;
  for (size_t i = 0; i < l.live.buffers.size(); ++i) {
    const Buffer& b = l.live.buffers[i];
    if ((b.kind != BufferKind::value && b.kind != BufferKind::saved) || b.first > n - 1 ||
        b.last < n)
      continue;
    held.insert(l.live.alias_root(static_cast<int>(i)));
  }
  for (int b : held) m.stored += l.rounded_bytes(b);
  return m;
}

void print_memory(int64_t N) {
  struct Net {
    const char* name;
    Builder build;
  };
  const Net nets[] = {
      {"ResNet-110", [](Value x) { return resnet_cifar(x, 110); }},
      {"RevNet-110 stored",
       [](Value x) { return revnet(x, 110, {.fixed_point_range = g_fixed_point_range}, false); }},
      {"RevNet-110 reversible",
       [](Value x) { return revnet(x, 110, {.fixed_point_range = g_fixed_point_range}); }},
  };
  std::printf("(a, b) training step, batch %lld, f32, planned (MiB)\n", static_cast<long long>(N));
  std::printf("%-22s %9s %9s %9s %9s %9s\n", "network", "arena", "bound", "outputs", "buffers",
              "stored");
  StepMemory m[3];
  for (int i = 0; i < 3; ++i) {
    m[i] = step_memory(nets[i].build, N);
    std::printf("%-22s %9.2f %9.2f %9.2f %9.2f %9.2f\n", nets[i].name, mib(m[i].arena),
                mib(m[i].lower_bound), mib(m[i].outputs), mib(m[i].buffers), mib(m[i].stored));
  }
  auto ratio = [](size_t a, size_t b) { return static_cast<double>(a) / static_cast<double>(b); };
  for (int i = 0; i < 2; ++i)
    std::printf("%s / RevNet-110 reversible: arena %.2fx, stored %.2fx\n", nets[i].name,
                ratio(m[i].arena, m[2].arena), ratio(m[i].stored, m[2].stored));
  std::printf(
      "(stored: outputs and saved tensors live across the forward/backward boundary;\n"
      " arena: the whole planned step, gradients and scratch included)\n\n");
}

// ---- (c): step time ----

struct Trainer {
  ParamStore store{1};
  Tape tape{store, DType::f32};
  Value loss;
  std::unique_ptr<Executor> ex;

  Trainer(bool reversible, int64_t N) {
    Value x = tape.input("images", {N, 3, 32, 32}, DType::f32);
    Value labels = tape.input("labels", {N}, DType::i32);
    loss = softmax_cross_entropy(
        revnet(x, 110, {.fixed_point_range = g_fixed_point_range}, reversible), labels);
    ex = std::make_unique<Executor>(
        tape, cpu_backend(),
        ExecutorOptions{.memory = MemoryMode::planned,
                        .keep = {loss},
                        .optimizer = OptimizerConfig{.lr = 0.01, .momentum = 0.9}});
    Rng rng(3);
    Tensor& images = ex->input(x);
    for (int64_t i = 0; i < images.numel(); ++i)
      images.data<float>()[i] = static_cast<float>(rng.normal());
    Tensor& y = ex->input(labels);
    for (int64_t i = 0; i < N; ++i) y.data<int32_t>()[i] = static_cast<int32_t>(rng.below(10));
  }
  // One step: {wall seconds, process CPU seconds}. On a machine shared with other jobs the
  // CPU time of a one-thread run (OMP_NUM_THREADS=1) is the steadier figure.
  std::pair<double, double> step() {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    ex->forward();
    ex->backward(loss);
    const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cpu};
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void print_time(int64_t N, int steps) {
  Trainer rev(true, N), stored(false, N);
  rev.step();  // warm-up: sub-graph executors, first touch of the arenas
  stored.step();
  std::vector<double> wall[2], cpu[2];  // 0: stored, 1: reversible
  for (int s = 0; s < steps; ++s) {     // alternating, so load on the machine hits both alike
    for (int i = 0; i < 2; ++i) {
      const auto [w, c] = (i ? rev : stored).step();
      wall[i].push_back(w);
      cpu[i].push_back(c);
    }
  }
  std::printf(
      "(c) RevNet-110 training step, batch %lld, f32, planned, SGD, median of %d "
      "(alternating), %d threads\n",
      static_cast<long long>(N), steps, omp_get_max_threads());
  const double w0 = median(wall[0]), w1 = median(wall[1]), c0 = median(cpu[0]), c1 = median(cpu[1]);
  std::printf("wall: stored %.3f s, reversible %.3f s: %.2fx\n", w0, w1, w1 / w0);
  std::printf("CPU:  stored %.3f s, reversible %.3f s: %.2fx\n", c0, c1, c1 / c0);
  std::printf("(arenas: stored %.2f MiB, reversible %.2f MiB)\n\n", mib(stored.ex->arena_bytes()),
              mib(rev.ex->arena_bytes()));
}

// ---- (d): drift of a reversible chain from its stored twin ----

// F and G of a RevNet unit on h's channels: BN, ReLU, conv 3x3, BN, ReLU, conv 3x3.
Value half_unit(Value h) {
  const int64_t c = h.shape()[1];
  h = conv2d(relu(batch_norm(h, {.name = "bn1"})),
             {.out = c, .kernel = 3, .pad = 1, .bias = false, .name = "conv1"});
  return conv2d(relu(batch_norm(h, {.name = "bn2"})),
                {.out = c, .kernel = 3, .pad = 1, .bias = false, .name = "conv2"});
}

// A block of the stored twin, under the scopes the reversible op gives F and G; with `exact`,
// F and G's outputs rounded onto the grid as the fixed-point coupling does.
Value stored_block(Value x, bool exact) {
  Tape& t = x.tape();
  const int64_t c = x.shape()[1];
  Tape::Scope scope(t, t.unique_name("reversible"));
  Value x1 = channel_slice(x, 0, c / 2), x2 = channel_slice(x, c / 2, c);
  Value y1, y2;
  {
    Tape::Scope s(t, "F");
    y1 = add(x1, exact ? fixed_point(half_unit(x2)) : half_unit(x2));
  }
  {
    Tape::Scope s(t, "G");
    y2 = add(x2, exact ? fixed_point(half_unit(y1)) : half_unit(y1));
  }
  return concat({y1, y2});
}

Tensor random(const Shape& s, uint64_t seed, DType dtype) {
  Tensor t = Tensor::empty(s, dtype);
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (dtype == DType::f32)
      t.data<float>()[i] = static_cast<float>(rng.normal());
    else
      t.data<double>()[i] = rng.normal();
  }
  return t;
}

Tensor clone(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  copy_bytes(t, c);
  return c;
}

// Relative errors of a against b: max |a - b| / max |b| and ||a - b|| / ||b||.
struct RelError {
  double max = 0, l2 = 0;
};

RelError rel_error(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 0, d2 = 0, b2 = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = element_as_double(a, i), y = element_as_double(b, i);
    diff = std::max(diff, std::abs(x - y));
    scale = std::max(scale, std::abs(y));
    d2 += (x - y) * (x - y);
    b2 += y * y;
  }
  return {scale > 0 ? diff / scale : diff, b2 > 0 ? std::sqrt(d2 / b2) : std::sqrt(d2)};
}

struct ChainRun {
  Tensor x, y, dx;
  std::vector<Tensor> grads;  // trainable parameters, in store order
  RelError rebuild_error;     // rebuilt input against x (reversible only)
};

// Rebuilds the chain's input from its output block by block, as the reversible op does:
// x2 = y2 - G(y1), x1 = y1 - F(x2) (on the grid when `exact`), F and G run on tapes of their
// own over the same parameters (BatchNorm on batch statistics, running statistics left alone).
Tensor rebuild_input(ParamStore& store, const Tensor& y, int depth, bool exact) {
  Backend& be = cpu_backend();
  TensorMeta half{y.shape(), y.dtype()};
  half.shape[1] /= 2;
  Tensor y1 = Tensor::empty(half.shape, y.dtype()), y2 = Tensor::empty(half.shape, y.dtype());
  Tensor x = clone(y);
  for (int i = depth - 1; i >= 0; --i) {
    Tensor parts[2] = {y1, y2};
    be.concat_backward(x, parts);
    for (const char* which : {"G", "F"}) {
      const std::string scope = "reversible" + std::to_string(i) + "/" + which;
      SubGraph net(store, y.dtype(), scope, half_unit, half);
      Tensor arena =
          Tensor::empty({static_cast<int64_t>(net.arena_bytes(Mode::training, be))}, DType::u8);
      Executor& ex = net.executor(Mode::training, be, arena);
      ex.set_update_state(false);
      Tensor& in = which[0] == 'G' ? y1 : y2;
      copy_bytes(in, ex.input(net.input()));
      ex.forward();
      Tensor& out = which[0] == 'G' ? y2 : y1;  // y2 <- x2, then y1 <- x1
      if (exact)
        fixed_point_add(cpu_backend(), out, ex.value(net.output()), {}, true, out, "rebuild");
      else
        be.subtract(out, ex.value(net.output()), out);
    }
    const Tensor halves[2] = {y1, y2};
    be.concat_forward(halves, x);
  }
  return x;
}

ChainRun run_chain(bool reversible, bool exact, int depth, DType dtype, const Shape& shape) {
  ParamStore store(11);
  Tape tape(store, dtype);
  Value x = tape.input("x", shape, dtype, true);
  Value y = exact ? fixed_point(x) : x;
  const ReversibleOptions options{.fixed_point = exact ? std::optional<FixedPoint>(FixedPoint{})
                                                       : std::nullopt};
  for (int i = 0; i < depth; ++i)
    y = reversible ? reversible_block(y, half_unit, half_unit, options) : stored_block(y, exact);
  Executor ex(tape, cpu_backend(),
              {.memory = reversible ? MemoryMode::planned : MemoryMode::baseline,
               .keep = {y},
               .keep_param_grads = true});
  ChainRun r;
  r.x = random(shape, 3, dtype);
  // what the chain's first block sees
  if (exact) fixed_point_round(cpu_backend(), r.x, {}, r.x, "input");
  ex.set_input(x, r.x);
  ex.forward();
  r.y = clone(ex.value(y));
  std::pair<Value, Tensor> seed{y, random(shape, 4, dtype)};
  ex.backward(std::span<const std::pair<Value, Tensor>>(&seed, 1));
  r.dx = clone(ex.grad(x));
  for (Parameter* p : store.all())
    for (size_t v = 0; p->trainable && v < tape.values().size(); ++v)
      if (tape.values()[v].param == p) {
        r.grads.push_back(clone(ex.grad(Value(&tape, static_cast<int>(v)))));
        break;
      }
  if (reversible) r.rebuild_error = rel_error(rebuild_input(store, r.y, depth, exact), r.x);
  return r;
}

void print_drift(const std::vector<int>& depths, const Shape& shape) {
  std::printf(
      "(d) reversible chain against its stored twin, x %s; relative errors, max: "
      "max|a-b|/max|b|, l2: ||a-b||/||b||\n",
      shape.str().c_str());
  std::printf("%-8s %-5s %5s %10s %10s %10s %10s %10s %10s %10s\n", "coupling", "dtype", "depth",
              "x max", "x l2", "y max", "dx max", "dx l2", "dW max", "dW l2");
  for (bool exact : {false, true})
    for (DType dtype : {DType::f64, DType::f32})
      for (int depth : depths) {
        ChainRun rev = run_chain(true, exact, depth, dtype, shape);
        ChainRun twin = run_chain(false, exact, depth, dtype, shape);
        RelError dw;  // the worst parameter
        for (size_t i = 0; i < rev.grads.size(); ++i) {
          const RelError e = rel_error(rev.grads[i], twin.grads[i]);
          dw = {std::max(dw.max, e.max), std::max(dw.l2, e.l2)};
        }
        const RelError dx = rel_error(rev.dx, twin.dx);
        std::printf("%-8s %-5s %5d %10.2e %10.2e %10.2e %10.2e %10.2e %10.2e %10.2e\n",
                    exact ? "fixed" : "float", dtype_name(dtype), depth, rev.rebuild_error.max,
                    rev.rebuild_error.l2, rel_error(rev.y, twin.y).max, dx.max, dx.l2, dw.max,
                    dw.l2);
      }
  std::printf(
      "(x: the input rebuilt from the output block by block; y: the output; dW: the "
      "worst parameter)\n");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reversible blocks: memory, time and numerical drift against stored activations"};
  int64_t batch = 64, time_batch = 64;
  int steps = 5;
  std::vector<int> depths{1, 4, 16, 64};
  bool memory = true, time = true, drift = true;
  app.add_option("--batch", batch, "batch for the memory figures (a, b)")
      ->check(CLI::PositiveNumber);
  app.add_option("--time-batch", time_batch, "batch for the step times (c)")
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", steps, "timed steps per network (c)")->check(CLI::PositiveNumber);
  app.add_option("--depths", depths, "chain depths (d)");
  app.add_option("--fixed-point-range", g_fixed_point_range,
                 "RevNet coupling grid's range bits in (a)-(c); 0: floating point")
      ->check(CLI::Range(0, 23));
  app.add_flag("!--no-memory", memory, "skip (a, b)");
  app.add_flag("!--no-time", time, "skip (c)");
  app.add_flag("!--no-drift", drift, "skip (d)");
  CLI11_PARSE(app, argc, argv);
  try {
    if (memory) print_memory(batch);
    if (time) print_time(time_batch, steps);
    if (drift) print_drift(depths, Shape{8, 32, 16, 16});
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_reversible: %s\n", e.what());
    return 1;
  }
  return 0;
}
