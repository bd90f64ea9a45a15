// What the ONNX tests share (tests/onnx_support.h).
#include "tests/onnx_support.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "check/gradcheck.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/layer_norm.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx_graph.h"
#include "tests/worst.h"

namespace frugal::testing {

std::filesystem::path onnx_data() {
  return std::filesystem::path(FRUGAL_SOURCE_DIR) / "tests" / "data" / "onnx";
}

std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

void check_matches_pytorch(const std::string& what, std::span<const float> got,
                           std::span<const float> want, double tolerance) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = worse(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  MESSAGE(what, ": largest difference ", worst, " of outputs up to ", scale);
  CHECK(scale > 0.01);
  CHECK(worst <= tolerance * scale);
}

ParamGradCheck compare_parameter_gradients(const std::filesystem::path& onnx, DType t,
                                           bool bn_from_output, double tolerance,
                                           bool ln_from_output) {
  const OnnxModel m = load_onnx(onnx.string());
  std::filesystem::path names_file = onnx, blob = onnx;
  names_file.replace_extension(".pgrad.txt");
  blob.replace_extension(".pgrad");
  std::ifstream names_in(names_file);
  REQUIRE(names_in.good());
  std::vector<std::pair<std::string, int64_t>> names;
  for (std::string name; names_in >> name;) {
    int64_t count = 0;
    names_in >> count;
    names.emplace_back(name, count);
  }
  const std::vector<float> data = read_floats(blob);  // x, labels (i32 bits), gradients
  const int64_t in = 4 * m.input.numel();
  int64_t total = in + 4;
  for (const auto& [name, count] : names) total += count;
  REQUIRE(static_cast<int64_t>(data.size()) == total);

  ParamGradCheck c;
  ParamStore store(1);
  Tape tape(store, t);
  Value x = tape.input("x", batched(4, m.input), t);
  Value labels = tape.input("labels", {4}, DType::i32);
  // Several outputs (auxiliary heads): each one's loss against the labels, summed.
  const std::vector<Value> outputs = record_onnx_outputs(m, x);
  Value loss = softmax_cross_entropy(outputs[0], labels);
  for (size_t o = 1; o < outputs.size(); ++o)
    loss = add(loss, softmax_cross_entropy(outputs[o], labels));
  if (bn_from_output || ln_from_output) {
    if (bn_from_output) c.switched += read_batch_norm_outputs(tape, cpu_backend());
    if (ln_from_output) c.switched += read_layer_norm_outputs(tape, cpu_backend());
    if (c.switched == 0) return c;
  }
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.memory = MemoryMode::baseline, .keep = {loss}});
  Tensor xt = Tensor::empty(x.shape(), t), lt = Tensor::empty({4}, DType::i32);
  for (int64_t i = 0; i < xt.numel(); ++i) {
    if (t == DType::f64)
      xt.data<double>()[i] = data[static_cast<size_t>(i)];
    else
      xt.data<float>()[i] = data[static_cast<size_t>(i)];
  }
  std::memcpy(lt.raw(), data.data() + in, lt.bytes());
  ex.set_input(x, xt);
  ex.set_input(labels, lt);
  ex.forward();
  ex.backward(loss);
  const float* want = data.data() + in + 4;
  double model_scale = 0;
  for (int64_t i = 0; i < total - in - 4; ++i)
    model_scale = std::max(model_scale, static_cast<double>(std::abs(want[i])));
  for (const auto& [name, count] : names) {
    CAPTURE(name);
    Parameter* p = store.find(name);
    REQUIRE(p != nullptr);  // the export keeps PyTorch's parameter names
    REQUIRE(p->value.numel() == count);
    const Tensor& got = ex.grad(tape.param(*p));
    double err = 0, scale = 0;
    for (int64_t i = 0; i < count; ++i) {
      err = worse(err, std::abs(element_as_double(got, i) - want[i]));
      scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    }
    c.vanishing += scale < 1e-2 * model_scale;
    const double rel = err / std::max(scale, 1e-2 * model_scale);
    if (!(rel <= c.worst)) c.worst = rel, c.worst_name = name;  // a NaN is the worst
    c.over += !(rel <= tolerance);
    ++c.params;
    want += count;
  }
  return c;
}

Tensor host_floats(const Shape& shape, const float* values) {
  Tensor t = Tensor::empty(shape, DType::f32);
  std::memcpy(t.raw(), values, t.bytes());
  return t;
}

std::vector<float> onnx_forward(const OnnxModel& m, const std::vector<float>& x) {
  ParamStore store(1);
  Tape tape(store);
  Value in = tape.input("x", batched(2, m.input), DType::f32);
  Value y = record_onnx(m, in);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  Tensor t = Tensor::empty(in.shape(), DType::f32);
  std::memcpy(t.raw(), x.data(), t.bytes());
  ex.set_input(in, t);
  ex.forward();
  const Tensor& out = ex.value(y);
  return {out.data<float>(), out.data<float>() + out.numel()};
}

size_t differing(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  REQUIRE(a.size() == b.size());
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += std::memcmp(a[i].raw(), b[i].raw(), a[i].bytes()) != 0;
  return n;
}

std::vector<Tensor> onnx_train(const OnnxModel& m, MemoryMode memory, bool pack,
                               bool bn_from_output, bool ln_from_output) {
  ParamStore store(1);
  Tape tape(store);
  const Shape shape = batched(4, m.input);
  Value x = tape.input("x", shape, DType::f32, true);
  // Models that label each position (output (N, K, L), (N, K, H, W), (N, K, D, H, W)) take a
  // label per position and the per-position loss.
  const Shape label_shape = batched(4, m.label_shape);
  Value labels = tape.input("labels", label_shape, DType::i32);
  Value y = record_onnx(m, x);
  Value loss =
      m.label_shape.rank() > 0 ? pixel_cross_entropy(y, labels) : softmax_cross_entropy(y, labels);
  if (bn_from_output) read_batch_norm_outputs(tape, cpu_backend());
  if (ln_from_output) read_layer_norm_outputs(tape, cpu_backend());
  load_onnx_weights(store, m);
  ExecutorOptions options = sgd_step_options(memory, loss);
  options.pack = pack;
  Executor ex(tape, cpu_backend(), options);
  std::vector<Tensor> out;
  for (int step = 0; step < 2; ++step) {
    ex.set_input(x, random_tensor(shape, 5 + step, -1, 1, DType::f32));
    ex.set_input(labels,
                 random_labels(label_shape.numel(), m.classes, 9 + step).reshape(label_shape));
    step_and_collect(ex, tape, loss, std::span<const Value>(&x, 1), out);
  }
  for (Parameter* p : store.all()) out.push_back(clone(p->value));
  return out;
}

void step_and_collect(Executor& ex, Tape& tape, Value loss, std::span<const Value> inputs,
                      std::vector<Tensor>& out) {
  ex.forward();
  out.push_back(clone(ex.value(loss)));
  ex.backward(loss);
  for (Value v : inputs) out.push_back(clone(ex.grad(v)));
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && tape.values()[v].requires_grad)
      out.push_back(clone(ex.grad(Value(&tape, static_cast<int>(v)))));
}

ExecutorOptions sgd_step_options(MemoryMode memory, Value loss) {
  return {.memory = memory,
          .poison = memory == MemoryMode::planned,
          .keep = {loss},
          .keep_param_grads = true,
          .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}};
}

std::function<std::vector<Value>(std::span<const Value>)> randomized(const OnnxModel& m,
                                                                     uint64_t seed, int max_rank) {
  return [&m, seed, max_rank](std::span<const Value> in) {
    std::vector<Value> y = record_onnx_outputs(m, in[0], in.subspan(1));
    load_onnx_weights(in[0].tape().params(), m);
    uint64_t s = seed;
    for (const auto& [name, trainable] : m.graph->params)
      if (trainable && m.graph->metas.at(name).shape.rank() <= max_rank)
        randomize_param(in[0].tape(), name, s++, -1, 1);
    return y;
  };
}

std::vector<float> two_input_forward(const OnnxModel& m, const float* xs, const float* ts,
                                     const Shape& x_shape, const Shape& t_shape) {
  ParamStore store(1);
  Tape tape(store);
  Value x = tape.input("x", x_shape, DType::f32);
  Value t = tape.input(m.extra_inputs.at(0).name, t_shape, DType::f32);
  const std::vector<Value> extra{t};
  Value y = record_onnx(m, x, extra);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  ex.set_input(x, host_floats(x_shape, xs));
  ex.set_input(t, host_floats(t_shape, ts));
  ex.forward();
  return {ex.value(y).data<float>(), ex.value(y).data<float>() + y.shape().numel()};
}

}  // namespace frugal::testing
