// ONNX import, reading: the file parsed by the ONNX protobuf library, every node checked and
// turned into a plain description of the frugal op it becomes (models/onnx_graph.h; nothing of
// protobuf outlives load_onnx), then a batch-1 recording on a shapes-only store to catch shape
// errors and learn the class count. One function holds the table of ops, one branch each, so
// what is imported, and how, reads in one place (models/onnx_record.cpp records it).
#include "models/onnx.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "models/onnx_graph.h"

namespace frugal {

namespace {

// The largest ONNX file read: protobuf's own limit for one message.
constexpr int64_t kMaxOnnxBytes = (int64_t{1} << 31) - 1;
// The largest kernel side, stride or padding read from a file (far beyond any network's).
constexpr int64_t kMaxWindow = 4096;
// The largest tensor (elements) an initializer may hold.
constexpr int64_t kMaxInitializerElements = int64_t{1} << 31;

using Kind = OnnxKind;

}  // namespace

namespace {

struct Reader {
  const std::string& path;

  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const {
    throw Error(path + ": node '" + n.name() + "' (" + n.op_type() + "): " + what);
  }

  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) const {
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  // The attribute `name`, or null; one of another type than `type` is an error.
  const onnx::AttributeProto* typed(const onnx::NodeProto& n, const char* name,
                                    onnx::AttributeProto::AttributeType type,
                                    const char* what) const {
    const onnx::AttributeProto* a = attr(n, name);
    if (a && a->type() != type) fail(n, std::string("attribute ") + name + " is not " + what);
    return a;
  }
  int64_t get_int(const onnx::NodeProto& n, const char* name, int64_t fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::INT, "an int");
    return a ? a->i() : fallback;
  }
  double get_float(const onnx::NodeProto& n, const char* name, double fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::FLOAT, "a float");
    return a ? a->f() : fallback;
  }
  std::vector<int64_t> get_ints(const onnx::NodeProto& n, const char* name) const {
    const auto* a = typed(n, name, onnx::AttributeProto::INTS, "a list of ints");
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  std::string get_string(const onnx::NodeProto& n, const char* name,
                         const std::string& fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::STRING, "a string");
    return a ? a->s() : fallback;
  }

  // A 2-D window's kernel, stride and padding: square, one stride, symmetric padding, no
  // dilation, auto_pad NOTSET.
  void window(const onnx::NodeProto& n, OnnxNode& o) const {
    const std::vector<int64_t> k = get_ints(n, "kernel_shape");
    if (k.size() != 2 || k[0] != k[1] || k[0] < 1 || k[0] > kMaxWindow)
      fail(n, "kernel_shape must be two equal sides in 1.." + std::to_string(kMaxWindow) +
                  " (square kernels only)");
    o.kernel = k[0];
    const std::vector<int64_t> s = get_ints(n, "strides");
    if (!s.empty() && (s.size() != 2 || s[0] != s[1] || s[0] < 1 || s[0] > kMaxWindow))
      fail(n, "strides must be two equal values in 1.." + std::to_string(kMaxWindow) +
                  " (one stride for both axes)");
    o.stride = s.empty() ? 1 : s[0];
    const std::vector<int64_t> p = get_ints(n, "pads");
    if (!p.empty() && (p.size() != 4 || p[0] != p[1] || p[0] != p[2] || p[0] != p[3] || p[0] < 0 ||
                       p[0] > kMaxWindow))
      fail(n, "pads must be four equal values in 0.." + std::to_string(kMaxWindow) +
                  " (asymmetric padding is not imported yet)");
    o.pad = p.empty() ? 0 : p[0];
    for (int64_t d : get_ints(n, "dilations"))
      if (d != 1) fail(n, "dilations other than 1 are not imported yet");
    const std::string auto_pad = get_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET")
      fail(n, "auto_pad " + auto_pad + " is not imported (export with explicit pads)");
  }

  // A Conv's strides, pads (each side its own), dilations and group; the kernel comes from the
  // weight, which kernel_shape (optional) must agree with when the weight is recorded.
  void conv_window(const onnx::NodeProto& n, OnnxNode& o) const {
    auto pair = [&](const char* name, int64_t lo) {
      std::vector<int64_t> v = get_ints(n, name);
      if (v.empty()) v = {1, 1};
      if (v.size() != 2 || v[0] < lo || v[1] < lo || v[0] > kMaxWindow || v[1] > kMaxWindow)
        fail(n, std::string(name) + " must be two values in " + std::to_string(lo) + ".." +
                    std::to_string(kMaxWindow));
      return v;
    };
    const std::vector<int64_t> s = pair("strides", 1), d = pair("dilations", 1);
    if (!get_ints(n, "kernel_shape").empty()) {
      const std::vector<int64_t> k = pair("kernel_shape", 1);
      o.kernel_h = k[0], o.kernel_w = k[1];
    }
    std::vector<int64_t> p = get_ints(n, "pads");
    if (p.empty()) p = {0, 0, 0, 0};
    if (p.size() != 4 || *std::min_element(p.begin(), p.end()) < 0 ||
        *std::max_element(p.begin(), p.end()) > kMaxWindow)
      fail(n, "pads must be four values in 0.." + std::to_string(kMaxWindow) +
                  " (top, left, bottom, right)");
    const int64_t group = get_int(n, "group", 1);
    if (group < 1 || group > kMaxWindow * kMaxWindow)
      fail(n, "group " + std::to_string(group) + " out of range");
    o.conv = {.stride_h = s[0],
              .stride_w = s[1],
              .pad_top = p[0],
              .pad_left = p[1],
              .pad_bottom = p[2],
              .pad_right = p[3],
              .dilation_h = d[0],
              .dilation_w = d[1],
              .groups = group};
    const std::string auto_pad = get_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET")
      fail(n, "auto_pad " + auto_pad + " is not imported (export with explicit pads)");
  }

  // TensorProto -> host tensor: FLOAT as f32, INT64 as i64 values in `ints`.
  Tensor tensor(const onnx::TensorProto& t, std::vector<int64_t>* ints) const {
    int64_t count = 1;
    std::vector<int64_t> dims;
    for (int64_t d : t.dims()) {
      FRUGAL_CHECK(d >= 0 && (d == 0 || count <= kMaxInitializerElements / d), path, ": tensor '",
                   t.name(), "' has dimension ", d, ", too large or negative");
      count *= d;
      dims.push_back(d);
    }
    const std::string& raw = t.raw_data();
    if (t.data_type() == onnx::TensorProto::FLOAT) {
      // What the file holds is checked before anything is allocated for it.
      if (!raw.empty())
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count * 4, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " floats");
      else
        FRUGAL_CHECK(t.float_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.float_data_size(), " floats for ", count, " elements");
      Tensor out = Tensor::empty(Shape(dims), DType::f32);
      if (!raw.empty() && count > 0)
        std::memcpy(out.raw(), raw.data(), raw.size());
      else
        for (int64_t i = 0; i < count; ++i)
          out.data<float>()[i] = t.float_data(static_cast<int>(i));
      return out;
    }
    if (t.data_type() == onnx::TensorProto::INT64 && ints) {
      ints->clear();
      if (!raw.empty()) {
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count * 8, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " int64 values");
        ints->resize(static_cast<size_t>(count));
        if (count > 0) std::memcpy(ints->data(), raw.data(), raw.size());
      } else {
        FRUGAL_CHECK(t.int64_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.int64_data_size(), " int64 values for ", count, " elements");
        ints->assign(t.int64_data().begin(), t.int64_data().end());
      }
      return {};
    }
    if (t.data_type() == onnx::TensorProto::BOOL && ints) {
      // Dropout's training_mode: one byte per value (raw) or int32_data.
      ints->clear();
      if (!raw.empty()) {
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " booleans");
        for (char c : raw) ints->push_back(c != 0);
      } else {
        FRUGAL_CHECK(t.int32_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.int32_data_size(), " booleans for ", count, " elements");
        for (int32_t v : t.int32_data()) ints->push_back(v != 0);
      }
      return {};
    }
    throw Error(path + ": tensor '" + t.name() + "' has data type " +
                std::to_string(t.data_type()) +
                "; frugal imports float32 weights (and int64 shapes, booleans)");
  }
};

std::vector<char> read_file(const std::string& path) {
  std::error_code ec;
  FRUGAL_CHECK(std::filesystem::is_regular_file(path, ec), path, ": no such file");
  const auto size = std::filesystem::file_size(path, ec);
  FRUGAL_CHECK(!ec, path, ": cannot read: ", ec.message());
  FRUGAL_CHECK(size > 0, path, ": empty file (0 bytes), not an ONNX model");
  FRUGAL_CHECK(size <= static_cast<uintmax_t>(kMaxOnnxBytes), path, ": ", size,
               " bytes, over protobuf's 2 GiB limit for one model");
  std::vector<char> bytes(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  FRUGAL_CHECK(in.gcount() == static_cast<std::streamsize>(size), path, ": read ", in.gcount(),
               " of ", size, " bytes");
  return bytes;
}

}  // namespace

OnnxModel load_onnx(const std::string& path, bool keep_weights) {
  const std::vector<char> bytes = read_file(path);
  return load_onnx_bytes(path, bytes.data(), bytes.size(), keep_weights);
}

// The parser proper, on bytes already read (the fuzz target calls it directly).
OnnxModel load_onnx_bytes(const std::string& path, const char* data, size_t size,
                          bool keep_weights) {
  onnx::ModelProto m;
  FRUGAL_CHECK(
      size <= static_cast<size_t>(kMaxOnnxBytes) && m.ParseFromArray(data, static_cast<int>(size)),
      path, ": not an ONNX model (protobuf parsing failed: truncated or corrupt)");
  FRUGAL_CHECK(m.has_graph(), path, ": the model has no graph");
  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  FRUGAL_CHECK(opset >= 11 && opset <= 17, path, ": opset ", opset,
               " of the default domain; frugal imports opsets 11 to 17 (torch.onnx.export's "
               "opset_version=11..17)");
  const onnx::GraphProto& g = m.graph();
  Reader r{path};
  auto graph = std::make_shared<OnnxGraph>();
  std::map<std::string, std::vector<int64_t>> int_constants;
  std::map<std::string, Tensor> float_constants;
  for (const onnx::TensorProto& t : g.initializer()) {
    std::vector<int64_t> ints;
    Tensor v = r.tensor(t, &ints);
    if (v.defined())
      graph->initializers[t.name()] = v;
    else
      int_constants[t.name()] = ints;
  }
  // The image input: the one graph input that is not an initializer.
  OnnxModel model;
  model.path = path;
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (graph->initializers.count(v.name()) || int_constants.count(v.name())) continue;
    FRUGAL_CHECK(graph->input.empty(), path, ": inputs '", graph->input, "' and '", v.name(),
                 "'; frugal imports models with one image input");
    graph->input = v.name();
    const auto& shape = v.type().tensor_type().shape();
    FRUGAL_CHECK(
        v.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT && shape.dim_size() == 4,
        path, ": input '", v.name(), "' must be float (N, C, H, W)");
    std::vector<int64_t> chw;
    for (int i = 1; i < 4; ++i) {
      const auto& d = shape.dim(i);
      FRUGAL_CHECK(d.has_dim_value() && d.dim_value() >= 1 && d.dim_value() <= 65536, path,
                   ": input '", v.name(), "' dimension ", i, " is ",
                   d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param(),
                   "; C, H and W must be fixed (only the batch may be dynamic)");
      chw.push_back(d.dim_value());
    }
    model.input = Shape(chw);
  }
  FRUGAL_CHECK(!graph->input.empty(), path, ": the graph has no image input");
  FRUGAL_CHECK(g.output_size() == 1, path, ": ", g.output_size(),
               " outputs; frugal imports models with one");
  graph->output = g.output(0).name();

  std::set<std::string> defined = {graph->input};
  for (const auto& [name, t] : graph->initializers) defined.insert(name);
  // Identity over a weight or constant (PyTorch writes one where two names share a tensor):
  // its output names that tensor.
  std::map<std::string, std::string> alias;
  auto canon = [&](const std::string& name) {
    auto it = alias.find(name);
    return it == alias.end() ? name : it->second;
  };
  auto need = [&](const onnx::NodeProto& n, int i) -> std::string {
    if (i >= n.input_size() || n.input(i).empty())
      r.fail(n, "input " + std::to_string(i) + " is missing");
    const std::string name = canon(n.input(i));
    if (!defined.count(name) && !int_constants.count(name) && !float_constants.count(name))
      r.fail(n, "input '" + n.input(i) +
                    "' is not produced before this node (graph not in topological order?)");
    return name;
  };
  auto param = [&](const onnx::NodeProto& n, int i, bool trainable) -> std::string {
    const std::string name = need(n, i);
    if (!graph->initializers.count(name))
      r.fail(n, "input " + std::to_string(i) + " ('" + name +
                    "') must be a float initializer (a weight)");
    graph->params[name] = trainable;
    return name;
  };
  // An operand of broadcast arithmetic: an activation; an initializer (a weight, trainable:
  // PyTorch writes nn.Parameters as initializers); or a Constant node's float tensor (fixed).
  // Scalars become (1).
  auto operand = [&](const onnx::NodeProto& n, int i) -> std::string {
    const std::string name = need(n, i);
    if (auto c = float_constants.find(name); c != float_constants.end()) {
      graph->initializers[name] = c->second;
      graph->params[name] = false;
    } else if (graph->initializers.count(name)) {
      graph->params.try_emplace(name, true);
    } else if (int_constants.count(name)) {
      r.fail(n, "input " + std::to_string(i) + " ('" + name + "') is an integer constant");
    } else {
      return name;
    }
    Tensor& t = graph->initializers[name];
    if (t.shape().rank() == 0) t = t.reshape(Shape{1});
    return name;
  };
  auto activation_input = [&](const onnx::NodeProto& n) -> std::string {
    const std::string x = need(n, 0);
    if (graph->initializers.count(x))
      r.fail(n, "input 0 is a constant; frugal imports ops over activations");
    return x;
  };
  auto scalar = [&](const onnx::NodeProto& n, int i, double fallback) -> double {
    if (i >= n.input_size() || n.input(i).empty()) return fallback;
    const std::string name = canon(n.input(i));
    const Tensor* t = nullptr;
    if (auto it = float_constants.find(name); it != float_constants.end()) t = &it->second;
    if (auto it = graph->initializers.find(name); it != graph->initializers.end()) t = &it->second;
    if (t == nullptr || t->numel() != 1)
      r.fail(n, "input " + std::to_string(i) + " must be a constant scalar");
    return t->data<float>()[0];
  };

  for (const onnx::NodeProto& n : g.node()) {
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      r.fail(n, "domain '" + n.domain() + "' is not imported");
    if (n.output_size() < 1 || n.output(0).empty()) r.fail(n, "has no output");
    OnnxNode o;
    o.name = n.name();
    o.op_type = op;
    o.output = n.output(0);
    if (op == "Constant") {
      const onnx::AttributeProto* v = r.attr(n, "value");
      if (!v || v->type() != onnx::AttributeProto::TENSOR)
        r.fail(n, "only a tensor 'value' is imported");
      std::vector<int64_t> ints;
      Tensor t = r.tensor(v->t(), &ints);
      if (t.defined())
        float_constants[o.output] = t;
      else
        int_constants[o.output] = ints;
      continue;  // folded: read by the nodes that take constants
    }
    if (op == "Conv") {
      o.kind = Kind::conv;
      r.conv_window(n, o);
      o.inputs = {activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) o.inputs.push_back(param(n, 2, true));
    } else if (op == "BatchNormalization") {
      // An export in training mode (torch.onnx.TrainingMode.TRAINING) keeps BatchNorm with its
      // running statistics as extra outputs, which frugal updates in place: no node may read
      // them (they are never defined here).
      o.kind = Kind::batch_norm;
      o.eps = r.get_float(n, "epsilon", 1e-5);
      o.momentum = 1.0 - r.get_float(n, "momentum", 0.9);  // ONNX keeps that share of the old value
      if (!(o.eps > 0) || !(o.momentum >= 0 && o.momentum <= 1))
        r.fail(n, "epsilon or momentum out of range");
      o.inputs = {activation_input(n), param(n, 1, true), param(n, 2, true), param(n, 3, false),
                  param(n, 4, false)};
    } else if (op == "Gemm") {
      o.kind = Kind::gemm;
      if (r.get_float(n, "alpha", 1) != 1 || r.get_float(n, "beta", 1) != 1 ||
          r.get_int(n, "transA", 0) != 0 || r.get_int(n, "transB", 0) != 1)
        r.fail(n, "only alpha = beta = 1, transA = 0, transB = 1 is imported (nn.Linear's export)");
      o.inputs = {activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) o.inputs.push_back(param(n, 2, true));
    } else if (op == "MaxPool" || op == "AveragePool") {
      o.kind = op == "MaxPool" ? Kind::max_pool : Kind::avg_pool;
      r.window(n, o);
      if (n.output_size() > 1 && !n.output(1).empty())
        r.fail(n, "the Indices output is not imported");
      if (r.get_int(n, "storage_order", 0) != 0) r.fail(n, "storage_order 1 is not imported");
      o.ceil = r.get_int(n, "ceil_mode", 0) != 0;
      if (op == "AveragePool" && o.pad > 0 && r.get_int(n, "count_include_pad", 0) == 0)
        r.fail(n,
               "count_include_pad 0 with padding is not imported yet (frugal's average counts "
               "padding)");
      if (o.pad * 2 > o.kernel) r.fail(n, "padding above half the kernel");
      o.inputs = {activation_input(n)};
    } else if (op == "GlobalAveragePool") {
      o.kind = Kind::global_avg_pool;
      o.inputs = {activation_input(n)};
    } else if (op == "Flatten") {
      o.kind = Kind::flatten;
      if (r.get_int(n, "axis", 1) != 1) r.fail(n, "only axis 1 is imported");
      o.inputs = {activation_input(n)};
    } else if (op == "Reshape") {
      o.kind = Kind::flatten;
      const std::string s = need(n, 1);
      auto it = int_constants.find(s);
      if (it == int_constants.end() || it->second.size() != 2 || it->second[1] == 0 ||
          it->second[1] < -1)
        r.fail(n, "only a constant shape (N, F) or (N, -1) is imported (a flatten)");
      o.flatten_features = it->second[1];
      o.inputs = {activation_input(n)};
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      o.kind = Kind::binary;
      o.binary = op == "Add"   ? BinaryKind::add
                 : op == "Sub" ? BinaryKind::sub
                 : op == "Mul" ? BinaryKind::mul
                               : BinaryKind::div;
      o.inputs = {operand(n, 0), operand(n, 1)};
      if (graph->initializers.count(o.inputs[0]) && graph->initializers.count(o.inputs[1]))
        r.fail(n, "both inputs are constants (fold them before exporting)");
    } else if (op == "Concat") {
      o.kind = Kind::concat;
      if (r.get_int(n, "axis", 0) != 1) r.fail(n, "only axis 1 (channels) is imported");
      for (int i = 0; i < n.input_size(); ++i) o.inputs.push_back(need(n, i));
    } else if (op == "Relu") {
      o.kind = Kind::relu;
      o.inputs = {activation_input(n)};
    } else if (op == "LeakyRelu") {
      o.kind = Kind::leaky_relu;
      o.alpha = r.get_float(n, "alpha", 0.01);
      o.inputs = {activation_input(n)};
    } else if (op == "Sigmoid" || op == "Tanh" || op == "HardSwish" || op == "HardSigmoid") {
      o.kind = Kind::activation;
      o.activation = op == "Sigmoid"     ? Activation::sigmoid
                     : op == "Tanh"      ? Activation::tanh
                     : op == "HardSwish" ? Activation::hardswish
                                         : Activation::hardsigmoid;
      if (op == "HardSigmoid" && (std::abs(r.get_float(n, "alpha", 0.2) - 1.0 / 6) > 1e-6 ||
                                  r.get_float(n, "beta", 0.5) != 0.5))
        r.fail(n, "only alpha 1/6, beta 1/2 (PyTorch's hardsigmoid) is imported");
      o.inputs = {activation_input(n)};
    } else if (op == "Clip") {
      const double lo = scalar(n, 1, -INFINITY), hi = scalar(n, 2, INFINITY);
      if (lo == 0 && hi == 6) {
        o.kind = Kind::activation;
        o.activation = Activation::relu6;
      } else if (lo == 0 && std::isinf(hi)) {
        o.kind = Kind::relu;
      } else {
        r.fail(n, "only Clip to [0, 6] (ReLU6) or [0, inf) (ReLU) is imported");
      }
      o.inputs = {activation_input(n)};
    } else if (op == "Dropout" || op == "Identity") {
      const std::string x = need(n, 0);
      if (graph->initializers.count(x) || int_constants.count(x) || float_constants.count(x)) {
        alias[o.output] = x;  // another name for a weight or constant
        continue;
      }
      o.kind = Kind::identity;
      o.inputs = {activation_input(n)};
      // In a training-mode export, Dropout(ratio, training_mode = true) is frugal's dropout
      // (its mask output must go unread); in eval mode, or opset 11's attribute form, it folds.
      if (op == "Dropout" && n.input_size() > 2 && !n.input(2).empty()) {
        const auto mode = int_constants.find(need(n, 2));
        if (mode == int_constants.end() || mode->second.size() != 1)
          r.fail(n, "training_mode must be a constant boolean");
        if (mode->second[0] != 0) {
          o.kind = Kind::dropout;
          o.alpha = scalar(n, 1, 0.5);
          if (!(o.alpha >= 0 && o.alpha < 1)) r.fail(n, "ratio must be in [0, 1)");
        }
      }
    } else if (op == "Pad") {
      // PyTorch writes a Pad of zeros before some pools (DenseNet's transitions): folded.
      const auto pads = int_constants.find(need(n, 1));
      if (r.get_string(n, "mode", "constant") != "constant" || pads == int_constants.end() ||
          std::any_of(pads->second.begin(), pads->second.end(), [](int64_t p) { return p != 0; }))
        r.fail(n, "only a Pad of zeros on every side is imported yet (folded)");
      o.kind = Kind::identity;
      o.inputs = {activation_input(n)};
    } else {
      r.fail(n,
             "op not imported yet; frugal imports Conv, BatchNormalization, Gemm, MaxPool, "
             "AveragePool, GlobalAveragePool, Flatten, Reshape, Add, Sub, Mul, Div, Concat, "
             "Relu, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Clip, Dropout, Identity, "
             "Constant, Pad (of zeros)");
    }
    defined.insert(o.output);
    graph->nodes.push_back(std::move(o));
  }
  graph->output = canon(graph->output);
  FRUGAL_CHECK(defined.count(graph->output), path, ": the output '", graph->output,
               "' is produced by no node");
  fuse_onnx_graph(*graph);
  for (const auto& [name, t] : graph->initializers) graph->metas[name] = t.meta();
  if (!keep_weights) {
    for (const auto& [name, trainable] : graph->params) graph->initializers.erase(name);
    graph->weights_dropped = true;
  }
  model.graph = graph;
  // A batch-1 recording on a shapes-only store: shape errors now, and the class count.
  ParamStore shapes = ParamStore::shapes_only();
  Tape tape(shapes);
  Value x =
      tape.input("images", Shape({1, model.input[0], model.input[1], model.input[2]}), DType::f32);
  const Value y = record_onnx(model, x);
  FRUGAL_CHECK(y.shape().rank() == 2, path, ": the output '", graph->output, "' is ", y.shape(),
               "; frugal imports classifiers whose output is (N, classes)");
  model.classes = y.shape()[1];
  return model;
}

}  // namespace frugal
