// ONNX import, reading: the file parsed by the ONNX protobuf library, every node checked and
// turned into a plain description of the frugal op it becomes (models/onnx_graph.h; nothing of
// protobuf outlives load_onnx), then a batch-1 recording on a shapes-only store to catch shape
// errors and learn the class count. One function holds the table of ops, one branch each, so
// what is imported, and how, reads in one place (models/onnx_record.cpp records it); that table
// is why this file runs past 400 lines.
#include "models/onnx.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/backend.h"
#include "core/copy_box.h"
#include "core/error.h"
#include "models/onnx_einsum.h"
#include "models/onnx_graph.h"
#include "models/onnx_reader.h"
#include "models/step.h"

namespace frugal {

namespace {
using Kind = OnnxKind;

// Add, Sub, Mul or Div (on activations and on integer shape values alike).
BinaryKind arithmetic(const std::string& op) {
  return op == "Add"   ? BinaryKind::add
         : op == "Sub" ? BinaryKind::sub
         : op == "Mul" ? BinaryKind::mul
                       : BinaryKind::div;
}

// ONNX's comparison ops, or nullopt.
std::optional<BinaryKind> comparison(const std::string& op) {
  static const std::map<std::string, BinaryKind> kinds = {
      {"Greater", BinaryKind::greater},
      {"Less", BinaryKind::less},
      {"GreaterOrEqual", BinaryKind::greater_equal},
      {"LessOrEqual", BinaryKind::less_equal},
      {"Equal", BinaryKind::equal}};
  const auto it = kinds.find(op);
  return it == kinds.end() ? std::nullopt : std::optional<BinaryKind>(it->second);
}

// Add, Sub, Mul, Div, a comparison or Concat: over activations wherever an operand is one.
bool over_any_activation(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Concat" ||
         comparison(op);
}

// The elementwise function an op computes on shape values and the constants computed from them
// (Neg, Abs, Sqrt, Exp and Log of an activation are activation ops), or none.
std::optional<UnaryKind> unary_kind(const std::string& op) {
  static const std::map<std::string, UnaryKind> kinds = {
      {"Ceil", UnaryKind::ceil},  {"Floor", UnaryKind::floor}, {"Sin", UnaryKind::sin},
      {"Cos", UnaryKind::cos},    {"Sqrt", UnaryKind::sqrt},   {"Exp", UnaryKind::exp},
      {"Log", UnaryKind::log},    {"Neg", UnaryKind::neg},     {"Abs", UnaryKind::abs},
      {"Round", UnaryKind::round}};
  const auto it = kinds.find(op);
  return it == kinds.end() ? std::nullopt : std::optional<UnaryKind>(it->second);
}

// The ELU family's coefficients (layers/elu.h) of Celu (any alpha), Elu with an alpha other
// than 1 and Selu with constants other than SELU's own (within float32's rounding of them);
// nullopt for the others, Elu's and Selu's defaults being activation ops as before. Constants
// that are not finite, and Celu's alpha of 0, are errors.
std::optional<EluCoefficients> elu_coefficients(const OnnxReader& r, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op != "Celu" && op != "Elu" && op != "Selu") return std::nullopt;
  EluCoefficients c;
  c.alpha = r.get_float(n, "alpha", op == "Selu" ? activation_math::kSeluAlpha : 1);
  if (op == "Selu") c.scale = r.get_float(n, "gamma", activation_math::kSeluScale);
  auto near = [](double a, double b) { return std::abs(a / b - 1) <= 1e-6; };
  if ((op == "Elu" && c.alpha == 1) ||
      (op == "Selu" && near(c.alpha, activation_math::kSeluAlpha) &&
       near(c.scale, activation_math::kSeluScale)))
    return std::nullopt;
  if (!std::isfinite(c.alpha) || !std::isfinite(c.scale) || (op == "Celu" && c.alpha == 0))
    r.fail(n, op == "Celu"   ? "alpha must be finite and not 0"
              : op == "Selu" ? "alpha and gamma must be finite"
                             : "alpha must be finite");
  if (op == "Celu") c.input_scale = 1 / c.alpha;
  return c;
}
}  // namespace

OnnxModel load_onnx(const std::string& path, bool keep_weights) {
  const std::vector<char> bytes = read_onnx_file(path);
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
  OnnxReader r{path};
  auto graph = std::make_shared<OnnxGraph>();
  std::map<std::string, IntTensor>& int_constants = graph->int_constants;
  std::map<std::string, Tensor> float_constants;
  std::set<std::string> int_values;  // integer values computed while recording
  // Values of the shape evaluator that may be float tensors (computed from a float constant or
  // cast to a float type): an activation op may read them (as a `constant` op, when recording
  // finds them float: EdgeNeXt's position features into a convolution).
  std::set<std::string> maybe_real;
  // Bools over activations (a comparison's output, Not, And, Or and Xor of them, their Casts):
  // 0/1 masks.
  std::set<std::string> masks;
  // Values computed from weights alone (a Gather of a table, then its reshapes): no batch axis.
  std::set<std::string> weight_values;
  // Activations whose axis 0 is not the batch: a Transpose moved it (attention's qkv, split
  // into q, k and v along the new axis 0).
  std::set<std::string> batch_moved;
  for (const onnx::TensorProto& t : g.initializer()) {
    std::vector<int64_t> ints;
    Tensor v = r.tensor(t, &ints);
    if (v.defined())
      graph->initializers[t.name()] = v;
    else
      int_constants[t.name()] =
          IntTensor{.dims = {t.dims().begin(), t.dims().end()}, .values = ints};
  }
  // The image input: the first graph input that is not an initializer; the others (a
  // timestep, a second image, a mask) are extra inputs of the same float type, batch first.
  OnnxModel model;
  model.path = path;
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (graph->initializers.count(v.name()) || int_constants.count(v.name())) continue;
    FRUGAL_CHECK(!v.name().empty(), path, ": an input has no name");
    const bool image = graph->input.empty();
    FRUGAL_CHECK(v.name() != graph->input &&
                     std::none_of(model.extra_inputs.begin(), model.extra_inputs.end(),
                                  [&](const OnnxInput& e) { return e.name == v.name(); }),
                 path, ": input '", v.name(), "' is named twice");
    const auto& shape = v.type().tensor_type().shape();
    const int elem = v.type().tensor_type().elem_type();
    const bool whole = elem == onnx::TensorProto::INT64 || elem == onnx::TensorProto::INT32;
    FRUGAL_CHECK(
        elem == onnx::TensorProto::FLOAT || elem == onnx::TensorProto::DOUBLE || (whole && !image),
        path, ": input '", v.name(), "' must be float or double",
        image ? "" : " (or int64 or int32, besides the image input)");
    const DType dtype = elem == onnx::TensorProto::DOUBLE ? DType::f64 : DType::f32;
    if (image) {
      // (N, F) features, (N, C, L) signals, (N, C, H, W) images, (N, C, D, H, W) volumes.
      FRUGAL_CHECK(shape.dim_size() >= 2 && shape.dim_size() <= 5, path, ": input '", v.name(),
                   "' has ", shape.dim_size(),
                   " axes; frugal imports (N, F), (N, C, L), (N, C, H, W) or (N, C, D, H, W)");
      model.dtype = dtype;
    } else {
      FRUGAL_CHECK(shape.dim_size() >= 1 && shape.dim_size() <= 5, path, ": input '", v.name(),
                   "' has ", shape.dim_size(), " axes; an input besides the image input '",
                   graph->input, "' must have the batch axis first and at most 5 axes");
      FRUGAL_CHECK(whole || dtype == model.dtype, path, ": input '", v.name(), "' is ",
                   dtype_name(dtype), " and the input '", graph->input, "' ",
                   dtype_name(model.dtype), "; frugal imports models of one float type");
    }
    std::vector<int64_t> sample;
    for (int i = 1; i < shape.dim_size(); ++i) {
      const auto& d = shape.dim(i);
      FRUGAL_CHECK(d.has_dim_value() && d.dim_value() >= 1 && d.dim_value() <= 65536, path,
                   ": input '", v.name(), "' dimension ", i, " is ",
                   d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param(),
                   "; every dimension but the batch's must be fixed, 1 to 65536");
      sample.push_back(d.dim_value());
    }
    // The image input's batch where the file fixes it (else 0: dynamic); every other input's
    // first axis must be the same batch, fixed alike or dynamic alike.
    const auto& batch = shape.dim(0);
    const int64_t fixed = batch.has_dim_value() && batch.dim_value() >= 1 ? batch.dim_value() : 0;
    if (image) {
      graph->export_batch = fixed;
    } else {
      auto said = [](int64_t b, const char* what) {
        return b > 0 ? std::string("a ") + what + " of " + std::to_string(b)
                     : std::string("a dynamic ") + what;
      };
      FRUGAL_CHECK(fixed == graph->export_batch, path, ": input '", v.name(), "' has ",
                   said(fixed, "first axis"), " where the image input '", graph->input, "' has ",
                   said(graph->export_batch, "batch"),
                   "; every input's first axis is the batch (an input broadcast over the batch "
                   "is not imported: export it with the same dynamic_axes as the images)");
    }
    if (image) {
      graph->input = v.name();
      model.input = Shape(sample);
    } else {
      graph->extra_inputs.push_back(v.name());
      model.extra_inputs.push_back({.name = v.name(), .sample = Shape(sample), .whole = whole});
    }
  }
  FRUGAL_CHECK(!graph->input.empty(), path, ": the graph has no image input");
  for (const auto& [name, t] : graph->initializers)
    FRUGAL_CHECK(t.dtype() == model.dtype, path, ": tensor '", name, "' is ", dtype_name(t.dtype()),
                 " and the input '", graph->input, "' ", dtype_name(model.dtype),
                 "; frugal imports models of one float type");
  // The first output is the model's; the others (GoogLeNet's and Inception's auxiliary
  // heads in training mode) are scored against the same labels beside it.
  FRUGAL_CHECK(g.output_size() >= 1, path, ": the graph has no output");
  graph->output = g.output(0).name();
  FRUGAL_CHECK(!graph->output.empty(), path, ": the first output has no name");
  for (int i = 1; i < g.output_size(); ++i) {
    const std::string& name = g.output(i).name();
    FRUGAL_CHECK(!name.empty(), path, ": output ", i, " has no name");
    FRUGAL_CHECK(name != graph->output &&
                     std::find(graph->extra_outputs.begin(), graph->extra_outputs.end(), name) ==
                         graph->extra_outputs.end(),
                 path, ": output '", name, "' is named twice");
    graph->extra_outputs.push_back(name);
  }

  std::set<std::string> defined = {graph->input};
  defined.insert(graph->extra_inputs.begin(), graph->extra_inputs.end());
  for (const auto& [name, t] : graph->initializers) defined.insert(name);
  // Identity over a weight or constant (PyTorch writes one where two names share a tensor):
  // its output names that tensor.
  std::map<std::string, std::string> alias;
  // Transposes of 2-D weights, read only by MatMul (as linear's weight): output -> weight.
  std::map<std::string, std::string> transposed_weight;
  auto canon = [&](const std::string& name) {
    auto it = alias.find(name);
    return it == alias.end() ? name : it->second;
  };
  auto need = [&](const onnx::NodeProto& n, int i) -> std::string {
    if (i >= n.input_size() || n.input(i).empty())
      r.fail(n, "input " + std::to_string(i) + " is missing");
    const std::string name = canon(n.input(i));
    if (auto w = transposed_weight.find(name); w != transposed_weight.end())
      r.fail(n, "input '" + n.input(i) + "' is the transpose of weight '" + w->second +
                    "', which frugal imports only as MatMul's second input");
    if (!defined.count(name) && !int_constants.count(name) && !float_constants.count(name) &&
        !int_values.count(name))
      r.fail(n, "input '" + n.input(i) +
                    "' is not produced before this node (graph not in topological order?)");
    return name;
  };
  auto param = [&](const onnx::NodeProto& n, int i, bool trainable) -> std::string {
    const std::string name = need(n, i);
    if (weight_values.count(name)) return name;  // computed from weights (standardized)
    if (auto c = float_constants.find(name);
        c != float_constants.end() && !graph->initializers.count(name)) {
      // A Constant node's tensor (a buffer the export wrote as a constant: TResNet's blur
      // filter): a fixed weight.
      graph->initializers[name] = c->second;
      graph->params[name] = false;
      return name;
    }
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
    } else {
      // An activation, or an integer constant of the file beside one (t + 1 of an int64 input
      // t): recording reads the constant as a `constant` op in the model's float type.
      return name;
    }
    Tensor& t = graph->initializers[name];
    if (t.shape().rank() == 0) t = t.reshape(Shape{1});
    return name;
  };
  auto is_int = [&](const std::string& name) {
    return int_constants.count(name) > 0 || int_values.count(name) > 0;
  };
  // A weight, a Constant's float tensor, or a value computed from them alone (no batch axis).
  auto is_weight = [&](const std::string& name) {
    return graph->initializers.count(name) > 0 || float_constants.count(name) > 0 ||
           weight_values.count(name) > 0;
  };
  // A binary node's two operands, any of them activations, weights or constants, but not both
  // fixed constants.
  auto arithmetic_operands = [&](OnnxNode& o, const onnx::NodeProto& n) {
    o.kind = Kind::binary;
    o.inputs = {operand(n, 0), operand(n, 1)};
    auto fixed = [&](const std::string& i) {
      return graph->initializers.count(i) && !graph->params.at(i);
    };
    if (fixed(o.inputs[0]) && fixed(o.inputs[1]))
      r.fail(n, "both inputs are constants (fold them before exporting)");
    // A weight times a weight or a constant (NFNets' gain * scale): computed from weights.
    if (is_weight(o.inputs[0]) && is_weight(o.inputs[1])) weight_values.insert(o.output);
  };
  auto activation_input = [&](const onnx::NodeProto& n) -> std::string {
    const std::string x = need(n, 0);
    if (graph->initializers.count(x) || float_constants.count(x))
      r.fail(n, "input 0 is a constant; frugal imports ops over activations");
    if (is_int(x) && !maybe_real.count(x))
      r.fail(n, "input 0 is an integer (shape) value; frugal imports this op over activations");
    return x;
  };
  // The input of an elementwise function: an activation, or a weight or a value computed from
  // weights (1 / p of GeM pooling's learned exponent), the result then computed from weights.
  auto unary_input = [&](OnnxNode& o, const onnx::NodeProto& n) {
    const std::string x = need(n, 0);
    if (!is_weight(x) || is_int(x)) {
      o.inputs = {activation_input(n)};
      return;
    }
    o.inputs = {operand(n, 0)};
    weight_values.insert(o.output);
  };
  // An integer operand (a shape, indices, pads): a constant or a value computed from shapes.
  auto int_input = [&](const onnx::NodeProto& n, int i) -> std::string {
    const std::string name = need(n, i);
    if (auto c = float_constants.find(name); c != float_constants.end() && !is_int(name)) {
      // A float Constant in arithmetic over shapes (masked_fill's value): a real constant. (A
      // float initializer is a weight, whose gradient that arithmetic would lose: an error.)
      IntTensor t{.dims = c->second.shape().dims(), .real = true};
      for (int64_t k = 0; k < c->second.numel(); ++k)
        t.reals.push_back(element_as_double(c->second, k));
      int_constants[name] = std::move(t);
      maybe_real.insert(name);
    }
    if (!is_int(name))
      r.fail(n, "input " + std::to_string(i) + " ('" + name +
                    "') must be an int64 constant or "
                    "shape value");
    return name;
  };
  // Whether every operand is a constant or computed from shapes (a node to evaluate while
  // recording: PyTorch leaves (C // heads) ** -0.5 as a Pow of two Constants).
  auto all_constant = [&](const onnx::NodeProto& n) {
    for (const std::string& name : n.input())
      if (!name.empty() && !is_int(canon(name)) && !float_constants.count(canon(name)))
        return false;
    return n.input_size() > 0;
  };
  // Whether input i is a constant or computed from shapes (a Where that folds while recording).
  auto constant_or_int = [&](const onnx::NodeProto& n, int i) {
    const std::string name = need(n, i);
    return is_int(name) || float_constants.count(name) > 0;
  };
  auto activation_input_at = [&](const onnx::NodeProto& n, int i) -> std::string {
    const std::string x = need(n, i);
    if (is_int(x)) r.fail(n, "input " + std::to_string(i) + " is an integer (shape) value");
    return x;
  };
  // A reduction of a value whose axis 0 is not the batch's may reduce that axis (the mean of
  // torch.stack(xs, dim=0) over it); without keepdims the batch is axis 0 again.
  auto moved_reduction = [&](OnnxNode& o, const std::vector<int64_t>& axes) {
    o.batch_moved = batch_moved.count(o.inputs[0]) > 0;
    const bool drops_0 = o.squeeze && std::find(axes.begin(), axes.end(), 0) != axes.end();
    if (o.batch_moved && !drops_0) batch_moved.insert(o.output);
  };
  auto optional_int_input = [&](const onnx::NodeProto& n, int i) -> std::string {
    return i < n.input_size() && !n.input(i).empty() ? int_input(n, i) : std::string();
  };
  auto scalar = [&](const onnx::NodeProto& n, int i, double fallback) -> double {
    if (i >= n.input_size() || n.input(i).empty()) return fallback;
    const std::string name = canon(n.input(i));
    const Tensor* t = nullptr;
    if (auto it = float_constants.find(name); it != float_constants.end()) t = &it->second;
    if (auto it = graph->initializers.find(name); it != graph->initializers.end()) t = &it->second;
    if (t == nullptr || t->numel() != 1)
      r.fail(n, "input " + std::to_string(i) + " must be a constant scalar");
    return element_as_double(*t, 0);
  };

  // The graph's nodes, an If's branches flattened in: where PyTorch cannot prove an axis 1 wide
  // it writes squeeze(dim) as an If on that extent (F.local_response_norm's export), whose
  // condition is computed from shapes and so known while recording. Each branch's nodes come
  // before the If, guarded by its condition (recorded only where they are taken), and the If
  // becomes a `choose` of the two branch outputs.
  struct Flat {
    const onnx::NodeProto* node;
    std::vector<std::pair<std::string, bool>> guards;
  };
  std::vector<Flat> flat;
  // Branch `b`'s graph, checked: one output, no inputs or initializers of its own.
  auto branch = [&](const onnx::NodeProto& n, const char* b) -> const onnx::GraphProto& {
    const onnx::AttributeProto* a = r.typed(n, b, onnx::AttributeProto::GRAPH, "a graph");
    if (!a) r.fail(n, std::string("has no ") + b);
    const onnx::GraphProto& sub = a->g();
    if (sub.output_size() != 1)
      r.fail(n, std::string(b) + " has " + std::to_string(sub.output_size()) +
                    " outputs; frugal imports Ifs with one");
    if (sub.initializer_size() > 0 || sub.input_size() > 0)
      r.fail(n, std::string(b) + " has inputs or initializers of its own (not imported)");
    return sub;
  };
  constexpr int kMaxIfDepth = 8;
  const auto flatten = [&](const auto& self, const onnx::GraphProto& graph,
                           const std::vector<std::pair<std::string, bool>>& guards) -> void {
    for (const onnx::NodeProto& n : graph.node()) {
      if (n.op_type() == "If" && (n.domain().empty() || n.domain() == "ai.onnx")) {
        if (guards.size() >= kMaxIfDepth)
          r.fail(n, "Ifs nested more than " + std::to_string(kMaxIfDepth) + " deep");
        if (n.input_size() != 1 || n.input(0).empty() || n.output_size() != 1)
          r.fail(n, "expects one input (the condition) and one output");
        for (const bool then : {true, false}) {
          auto inner = guards;
          inner.emplace_back(n.input(0), then);
          self(self, branch(n, then ? "then_branch" : "else_branch"), inner);
        }
      }
      flat.push_back({&n, guards});
    }
  };
  flatten(flatten, g, {});
  // What a node reads: an If also its branches' outputs.
  auto reads = [&](const onnx::NodeProto& n) {
    std::vector<std::string> in(n.input().begin(), n.input().end());
    if (n.op_type() == "If")
      for (const char* b : {"then_branch", "else_branch"})
        in.push_back(branch(n, b).output(0).name());
    return in;
  };

  // The nodes the output depends on, found backwards from it: an export may leave others (a
  // training-mode BatchNorm's running statistics of a weight, which timm's weight
  // standardization computes and nothing reads back), which are skipped unread.
  std::set<std::string> live = {graph->output};
  live.insert(graph->extra_outputs.begin(), graph->extra_outputs.end());
  std::vector<bool> node_live(flat.size(), false);
  for (size_t i = flat.size(); i-- > 0;) {
    const onnx::NodeProto& n = *flat[i].node;
    if (std::none_of(n.output().begin(), n.output().end(),
                     [&](const std::string& o) { return live.count(o) > 0; }))
      continue;
    node_live[i] = true;
    // A BatchNorm in training mode whose statistics outputs nothing reads: its running
    // statistics inputs are initializers (frugal keeps its own) or computed for nothing.
    const bool stats_unread = n.op_type() == "BatchNormalization" &&
                              r.get_int(n, "training_mode", 0) != 0 &&
                              std::none_of(n.output().begin() + 1, n.output().end(),
                                           [&](const std::string& o) { return live.count(o) > 0; });
    const std::vector<std::string> in = reads(n);
    for (size_t k = 0; k < in.size(); ++k)
      if (!(stats_unread && k >= 3)) live.insert(in[k]);
  }

  // Values of whole numbers: the integer inputs, carried in the model's float type, and what
  // exact integer arithmetic and moves make of them (value -> the input it comes from). A Cast
  // to a float type ends them; a Cast to an integer type is an identity over them; any other
  // reader (Div, Mod, a mean, a float function) would compute in floats where ONNX computes in
  // integers, so it is refused.
  std::map<std::string, std::string> whole;
  for (const OnnxInput& e : model.extra_inputs)
    if (e.whole) whole[e.name] = e.name;
  // Of those, the values that only moves made of an input (its numbers unchanged), so that an
  // embedding's table bounds what may be drawn for that input.
  std::set<std::string> unchanged;
  for (const auto& [name, from] : whole) unchanged.insert(name);
  static const std::set<std::string> kMoves = {"Identity", "Unsqueeze", "Squeeze", "Reshape",
                                               "Expand",   "Flatten",   "Slice",   "Transpose",
                                               "Gather",   "Tile"};
  // Exact over whole numbers: the moves, and integer arithmetic that stays whole.
  static const std::set<std::string> kWholeExact = [] {
    std::set<std::string> ops = kMoves;
    ops.insert({"Concat", "Add", "Sub", "Mul", "Neg", "Abs", "Max", "Min", "Where"});
    return ops;
  }();
  static const std::set<std::string> kCompare = {"Equal", "Less", "Greater", "LessOrEqual",
                                                 "GreaterOrEqual"};

  for (size_t node_index = 0; node_index < flat.size(); ++node_index) {
    if (!node_live[node_index]) continue;
    const onnx::NodeProto& n = *flat[node_index].node;
    const std::string& op = n.op_type();
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      r.fail(n, "domain '" + n.domain() + "' is not imported");
    if (n.output_size() < 1 || n.output(0).empty()) r.fail(n, "has no output");
    bool whole_cast = false;  // a Cast of whole numbers to an integer type: an identity
    for (int i = 0; i < n.input_size(); ++i) {
      auto w = whole.find(canon(n.input(i)));
      if (w == whole.end()) continue;
      const std::string& from = w->second;
      // Where its whole numbers may stand: data that moves, an operand of exact arithmetic or
      // of a comparison; not an index, a shape or a condition.
      const bool any = op == "Concat" || op == "Add" || op == "Sub" || op == "Mul" || op == "Max" ||
                       op == "Min" || kCompare.count(op) > 0;
      const bool data = any || (op == "Where" ? i >= 1 : i == 0);
      // The indices of a weight table's rows (nn.Embedding): an embedding op, which checks
      // them; where frugal makes up the input's values they are drawn below the table's rows,
      // or as zeros where arithmetic made the indices of them (label + 3 may index any row).
      if (op == "Gather" && i == 1 && n.input_size() == 2 &&
          graph->initializers.count(canon(n.input(0)))) {
        const Shape& table = graph->initializers.at(canon(n.input(0))).shape();
        const int64_t rows = table.rank() >= 1 && unchanged.count(canon(n.input(1))) ? table[0] : 1;
        for (OnnxInput& e : model.extra_inputs)
          if (e.name == from) e.below = std::min(e.below, rows);
        continue;
      }
      if (op == "Cast") {
        const int64_t to = r.get_int(n, "to", 0);
        if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32 &&
            to != onnx::TensorProto::FLOAT && to != onnx::TensorProto::DOUBLE)
          r.fail(n, "a Cast of whole numbers from the integer input '" + from +
                        "' to other than int64, int32, float or double");
        // To an integer type: an identity, still whole; to a float type: the Cast of an
        // activation below (to the model's own type), after which the values are floats.
        whole_cast = to == onnx::TensorProto::INT64 || to == onnx::TensorProto::INT32;
      } else if (!kCompare.count(op) && !(kWholeExact.count(op) && data)) {
        r.fail(n, "reads '" + n.input(i) + "', whole numbers from the integer input '" + from +
                      "', " +
                      (kWholeExact.count(op) ? std::string("as indices of an activation or a "
                                                           "shape (of a weight table's rows, "
                                                           "nn.Embedding, they are imported)")
                                             : "in " + op) +
                      "; frugal carries integer inputs in the model's float type and imports "
                      "only exact integer arithmetic over them (Add, Sub, Mul, Neg, Abs, Max, "
                      "Min, comparisons, moves) before a Cast");
      } else if (!kCompare.count(op)) {
        const bool moved = kMoves.count(op) && unchanged.count(canon(n.input(i)));
        for (const std::string& out : n.output())
          if (!out.empty()) {
            whole[out] = from;
            if (moved) unchanged.insert(out);
          }
      }
    }
    if (whole_cast) {  // the model's float type already holds the whole numbers
      alias[n.output(0)] = canon(n.input(0));
      continue;
    }
    OnnxNode o;
    o.name = n.name();
    o.op_type = op;
    o.output = n.output(0);
    for (const auto& [cond, then] : flat[node_index].guards)
      o.guards.emplace_back(canon(cond), then);
    if (op == "Constant") {
      const onnx::AttributeProto* v = r.attr(n, "value");
      if (!v || v->type() != onnx::AttributeProto::TENSOR)
        r.fail(n, "only a tensor 'value' is imported");
      std::vector<int64_t> ints;
      Tensor t = r.tensor(v->t(), &ints);
      if (t.defined())
        float_constants[o.output] = t;
      else
        int_constants[o.output] =
            IntTensor{.dims = {v->t().dims().begin(), v->t().dims().end()}, .values = ints};
      continue;  // folded: read by the nodes that take constants
    }
    if (op == "Conv") {
      o.kind = Kind::conv;
      r.conv_window(n, o, true, true);
      // Over a weight or constant (XCiT's position grid, folded in an export at a fixed
      // batch): computed from weights, without a batch axis.
      const bool of_weight = is_weight(need(n, 0));
      o.inputs = {of_weight ? operand(n, 0) : activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) o.inputs.push_back(param(n, 2, true));
      if (of_weight) weight_values.insert(o.output);
    } else if (op == "ConvTranspose") {
      o.kind = Kind::conv_transpose;
      // 3-D (ConvTranspose3d): its depth window in o.depth_* (models/onnx_conv3d.h).
      r.conv_window(n, o, false, true);
      // output_shape: the pads that give it, computed once the input's sizes are known.
      o.output_shape = r.get_ints(n, "output_shape");
      for (int64_t v : o.output_shape)
        if (v < 1 || v > kMaxWindow * kMaxWindow)
          r.fail(n, "output_shape " + std::to_string(v) + " out of range");
      std::vector<int64_t> op_pad = r.get_ints(n, "output_padding");
      if (op_pad.empty()) op_pad = {0, 0};
      if (op_pad.size() == 1) op_pad.insert(op_pad.begin(), 0);  // 1-D: a height of 1
      if (op_pad.size() == 3 && o.depth_kernel > 0) {            // 3-D: depth's, then (H, W)'s
        o.depth_output_padding = op_pad[0];
        if (op_pad[0] < 0 || op_pad[0] >= std::max(o.depth_stride, o.depth_dilation))
          r.fail(n, "output_padding along depth must be below its stride or dilation");
        op_pad.erase(op_pad.begin());
      }
      if (op_pad.size() != 2 || op_pad[0] < 0 || op_pad[1] < 0 || op_pad[0] >= o.conv.stride_h ||
          op_pad[1] >= o.conv.stride_w)
        r.fail(n, "output_padding must be two values (one in 1-D), each below its stride");
      o.output_padding_h = op_pad[0], o.output_padding_w = op_pad[1];
      o.inputs = {activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) o.inputs.push_back(param(n, 2, true));
    } else if (op == "Resize") {
      // Nearest, bilinear or bicubic to any size or by any scale (interpolate(mode="nearest",
      // "bilinear" or "bicubic"), align_corners either way).
      const std::string mode = r.get_string(n, "mode", "nearest");
      const std::string ctm = r.get_string(n, "coordinate_transformation_mode", "half_pixel");
      auto input = [&](int i) {
        return i < n.input_size() && !n.input(i).empty() ? canon(n.input(i)) : std::string();
      };
      double scales[4] = {};
      if (const std::string s = input(2); !s.empty()) {
        const Tensor* t = nullptr;
        if (auto it = float_constants.find(s); it != float_constants.end()) t = &it->second;
        if (auto it = graph->initializers.find(s); it != graph->initializers.end()) t = &it->second;
        if (t == nullptr) r.fail(n, "scales must be a float constant");
        if (t != nullptr && t->numel() > 0) {
          // (1, 1, s_h, s_w), or (1, 1, s) over (N, C, L) (nn.Upsample of a signal), read as
          // (1, 1, 1, s) over (N, C, 1, L), or (1, 1, s_d, s_h, s_w) over (N, C, D, H, W).
          if (t->numel() < 3 || t->numel() > 5)
            r.fail(n,
                   "scales must be four values (1, 1, s_h, s_w), three (1, 1, s) or five "
                   "(1, 1, s_d, s_h, s_w)");
          std::vector<double> v;
          for (int64_t k = 0; k < t->numel(); ++k) v.push_back(element_as_double(*t, k));
          if (v.size() == 3) v.insert(v.begin() + 2, 1);  // H of a signal: 1
          o.resize_scale_d = v.size() == 5 ? v[2] : 1;
          if (v.size() == 5) v.erase(v.begin() + 2);  // depth's, kept apart
          std::copy(v.begin(), v.end(), scales);
          if (!(o.resize_scale_d > 0 && o.resize_scale_d <= 4096))
            r.fail(n, "scales must be (1, 1, s_d, s_h, s_w) with each s in (0, 4096]");
        }
      }
      if (scales[2] == 0) {  // no scales: the sizes (N, C, H, W) or (N, C, L), constant or not
        if (input(3).empty()) r.fail(n, "needs constant scales or sizes (N, C, H, W)");
        o.int_inputs = {int_input(n, 3)};
      } else if (scales[0] != 1 || scales[1] != 1 || !(scales[2] > 0 && scales[2] <= 4096) ||
                 !(scales[3] > 0 && scales[3] <= 4096)) {
        r.fail(n, "scales must be (1, 1, s_h, s_w) or (1, 1, s) with each s in (0, 4096]");
      }
      // The coordinate transformation, in any mode PyTorch writes.
      static const std::map<std::string, ResizeCoordinates> transformations = {
          {"half_pixel", ResizeCoordinates::half_pixel},
          {"pytorch_half_pixel", ResizeCoordinates::pytorch_half_pixel},
          {"align_corners", ResizeCoordinates::align_corners},
          {"asymmetric", ResizeCoordinates::asymmetric}};
      const auto transformation = transformations.find(ctm);
      if (transformation == transformations.end())
        r.fail(n,
               "coordinate_transformation_mode " + ctm + " is not imported in " + mode + " mode");
      o.resize_mode = transformation->second;
      o.resize_scale_h = scales[2];
      o.resize_scale_w = scales[3];
      if (mode == "nearest") {
        // Any size or scale (models/onnx_resize.h); whole factors where the pixels picked are
        // upsample_nearest2d's (asymmetric with floor; half-pixel centres rounded) one op.
        o.kind = Kind::upsample_nearest;
        const std::string nearest = r.get_string(n, "nearest_mode", "round_prefer_floor");
        static const std::map<std::string, NearestMode> modes = {
            {"round_prefer_floor", NearestMode::round_prefer_floor},
            {"round_prefer_ceil", NearestMode::round_prefer_ceil},
            {"floor", NearestMode::floor},
            {"ceil", NearestMode::ceil}};
        const auto m = modes.find(nearest);
        if (m == modes.end()) r.fail(n, "nearest_mode " + nearest + " is not one of ONNX's");
        o.nearest = m->second;
        const bool asymmetric = ctm == "asymmetric" && nearest == "floor";
        const bool half_pixel = (ctm == "half_pixel" || ctm == "pytorch_half_pixel") &&
                                (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil");
        o.nearest_whole = asymmetric || half_pixel;
        if (o.nearest_whole && scales[2] >= 1 && scales[3] >= 1 &&
            scales[2] == std::floor(scales[2]) && scales[3] == std::floor(scales[3])) {
          o.scale_h = static_cast<int64_t>(scales[2]);
          o.scale_w = static_cast<int64_t>(scales[3]);
          if (o.resize_scale_d >= 1 && o.resize_scale_d == std::floor(o.resize_scale_d))
            o.scale_d = static_cast<int64_t>(o.resize_scale_d);
          else
            o.scale_h = o.scale_w = 0;  // a fractional depth scale: every axis by gathers
        }
      } else if (mode == "linear" || mode == "cubic") {
        o.kind = Kind::resize;
        if (mode == "cubic") {
          o.resize_method = ResizeMethod::cubic;
          o.cubic_a = r.get_float(n, "cubic_coeff_a", -0.75);
          if (!std::isfinite(o.cubic_a)) r.fail(n, "cubic_coeff_a is not a finite number");
          if (r.get_int(n, "exclude_outside", 0) != 0)
            r.fail(n, "exclude_outside 1 is not imported (PyTorch exports 0: the edge repeated)");
        }
      } else {
        r.fail(n, "mode " + mode + " is not imported (nearest, linear or cubic)");
      }
      o.inputs = {activation_input(n)};
    } else if (op == "BatchNormalization" && is_weight(need(n, 0))) {
      // Over a weight, in training mode: weight standardization (timm's StdConv2d and NFNets'
      // ScaledStdConv2d: F.batch_norm(w.reshape(1, out, -1), training=True)), each output
      // channel's weights normalized by their own mean and variance, then scaled and shifted.
      if (r.get_int(n, "training_mode", 0) == 0)
        r.fail(n, "a BatchNorm of a weight in eval mode (running statistics) is not imported");
      o.kind = Kind::weight_standardize;
      o.eps = r.get_float(n, "epsilon", 1e-5);
      if (!(o.eps > 0)) r.fail(n, "epsilon out of range");
      o.inputs = {operand(n, 0), operand(n, 1), operand(n, 2)};
      weight_values.insert(o.output);
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
      // nn.Linear's export (transB = 1: the weight is (out, in)), or a weight (in, out) as it
      // stands (transB = 0), recorded through its transpose.
      o.kind = Kind::gemm;
      if (r.get_float(n, "alpha", 1) != 1 || r.get_float(n, "beta", 1) != 1 ||
          r.get_int(n, "transA", 0) != 0)
        r.fail(n, "only alpha = beta = 1 and transA = 0 are imported");
      o.transpose_weight = r.get_int(n, "transB", 0) == 0;
      o.inputs = {activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) o.inputs.push_back(param(n, 2, true));
    } else if (op == "MatMul") {
      // x (..., K) times a weight (K, N): nn.Linear without bias on (N, T, K) inputs, x @ W; or
      // two activations (..., M, K) and (..., K, N) with the same leading axes.
      o.kind = Kind::gemm;
      o.transpose_weight = true;
      if (auto w = transposed_weight.find(n.input_size() > 1 ? n.input(1) : "");
          w != transposed_weight.end()) {  // x @ W^T: W is linear's (out, in) weight
        o.transpose_weight = false;
        graph->params[w->second] = true;
        o.inputs = {activation_input(n), w->second};
      } else if (graph->initializers.count(need(n, 1))) {
        o.inputs = {activation_input(n), param(n, 1, true)};
      } else {  // between two activations (attention): a batched product
        o.kind = Kind::matmul;
        o.inputs = {activation_input(n), activation_input_at(n, 1)};
      }
    } else if (op == "Einsum") {
      // A batched product of two activations, as attention writes it ("bhid,bhjd->bhij"): the
      // same leading axes on every side, one axis summed, each operand's other axis kept in
      // order (either operand's last two axes may be swapped: a transpose before the product),
      // is one matmul. Any other equation of one or two operands (no ellipsis, no diagonal) is
      // recorded in general (models/onnx_einsum.h), the batch axis staying first.
      std::string eq;
      for (char c : r.get_string(n, "equation", ""))
        if (c != ' ') eq += c;
      EinsumEquation e;
      try {
        e = parse_einsum(eq);
      } catch (const Error& error) {
        r.fail(n, error.what());
      }
      if (e.operands.size() != static_cast<size_t>(n.input_size()))
        r.fail(n, "equation '" + eq + "' has " + std::to_string(e.operands.size()) +
                      " operand terms for " + std::to_string(n.input_size()) + " inputs");
      o.inputs = {activation_input(n)};
      if (n.input_size() == 2)  // an activation, or a weight ('nchw,kc->nkhw')
        o.inputs.push_back(is_weight(need(n, 1)) ? param(n, 1, true) : activation_input_at(n, 1));
      for (const std::string& i : o.inputs)
        if (batch_moved.count(i))
          r.fail(n, "an Einsum of a value whose axis 0 is not the batch's is not imported");
      const std::string &a = e.operands[0], &y = e.output;
      o.kind = Kind::einsum;
      o.equation = eq;
      if (o.inputs.size() == 2) {  // the one-matmul form (OnnxKind::matmul)
        const std::string& b = e.operands[1];
        const size_t lead = y.size() >= 2 ? y.size() - 2 : 0;
        const std::string batch = y.substr(0, lead), i = y.substr(lead, 1),
                          j = y.size() >= 2 ? y.substr(lead + 1, 1) : "";
        auto fits = [&](const std::string& t, const std::string& kept, bool& swapped) {
          if (t.size() != batch.size() + 2 || t.compare(0, batch.size(), batch) != 0) return false;
          const std::string rest = t.substr(batch.size());
          swapped = rest[1] == kept[0];  // (kept, summed) unless the kept axis comes second
          const char summed = swapped ? rest[0] : rest[1];
          return (rest[0] == kept[0] || rest[1] == kept[0]) && y.find(summed) == std::string::npos;
        };
        bool swap_a = false, swap_b = false;
        if (y.size() >= 2 && fits(a, i, swap_a) && fits(b, j, swap_b) &&
            (swap_a ? a[a.size() - 2] : a.back()) == (swap_b ? b[b.size() - 2] : b.back())) {
          // The product reads a as (..., i, k) and b as (..., k, j): a's kept axis first, b's
          // last.
          o.kind = Kind::matmul;
          o.ints = {swap_a ? 1 : 0, swap_b ? 0 : 1};
        }
      }
      const bool b_activation = o.inputs.size() == 2 && !is_weight(o.inputs[1]);
      if (o.kind == Kind::einsum &&
          (y.empty() || y[0] != a[0] || (b_activation && e.operands[1][0] != a[0])))
        r.fail(n, "equation '" + eq +
                      "': the batch axis (each activation's first letter) must stay the "
                      "output's first");
    } else if (op == "MaxPool" || op == "AveragePool") {
      // 1-D, 2-D, or 3-D with an axis 1 wide (F.local_response_norm's (size, 1, 1) average).
      o.kind = op == "MaxPool" ? Kind::max_pool : Kind::avg_pool;
      const std::vector<int64_t> k = r.get_ints(n, "kernel_shape");
      if (k.empty() || k.size() > 3) r.fail(n, "kernel_shape must have 1 to 3 values");
      o.ints = {static_cast<int64_t>(k.size())};
      // A 3-D window 1 wide along no axis (MaxPool3d(2)): the 2-D pool of every depth plane,
      // then one along depth (record_pool).
      r.conv_window(n, o, true, true);
      const Conv2dParams& c = o.conv;
      // Dilated windows: MaxPool2d(dilation=...); AveragePool has dilations from opset 19 on.
      if (op == "AveragePool" && (c.dilation_h != 1 || c.dilation_w != 1 || o.depth_dilation != 1))
        r.fail(n, "an AveragePool with dilations is not imported (MaxPool's are)");
      // Pads may differ at an axis's two ends (TensorFlow's SAME: the odd one at the end), each
      // at most half the kernel, as PyTorch's pools.
      if (std::max(o.depth_pad_begin, o.depth_pad_end) * 2 > o.depth_kernel ||
          std::max(c.pad_top, c.pad_bottom) * 2 > o.kernel_h ||
          std::max(c.pad_left, c.pad_right) * 2 > o.kernel_w)
        r.fail(n, "a pad above half the kernel");
      if (n.output_size() > 1 && !n.output(1).empty())
        r.fail(n, "the Indices output is not imported");
      if (r.get_int(n, "storage_order", 0) != 0) r.fail(n, "storage_order 1 is not imported");
      o.ceil = r.get_int(n, "ceil_mode", 0) != 0;
      o.count_include_pad = r.get_int(n, "count_include_pad", 0) != 0;
      o.inputs = {activation_input(n)};
    } else if (op == "GlobalAveragePool") {
      o.kind = Kind::global_avg_pool;
      o.inputs = {activation_input(n)};
    } else if (op == "GlobalMaxPool") {
      // nn.AdaptiveMaxPool2d(1) (CBAM's channel attention): the maximum over every axis from 2
      // on, kept as axes of 1.
      o.kind = Kind::reduce;
      o.reduction = Reduction::max;
      o.global = true;
      o.inputs = {activation_input(n)};
    } else if (op == "GridSample") {
      // F.grid_sample (opset 16): x sampled at an activation's grid (N, H', W', 2), such as a
      // spatial transformer's affine grid or a flow field.
      o.kind = Kind::grid_sample;
      const std::string mode = r.get_string(n, "mode", "bilinear");
      const std::string padding = r.get_string(n, "padding_mode", "zeros");
      if (mode != "bilinear" && mode != "nearest")
        r.fail(n, "mode " + mode + " is not imported (bilinear and nearest are)");
      if (padding != "zeros" && padding != "border" && padding != "reflection")
        r.fail(n, "padding_mode " + padding + " is not one of zeros, border, reflection");
      o.grid_sample = {
          .mode = mode == "nearest" ? GridSampleMode::nearest : GridSampleMode::bilinear,
          .padding = padding == "zeros"    ? GridSamplePadding::zeros
                     : padding == "border" ? GridSamplePadding::border
                                           : GridSamplePadding::reflection,
          .align_corners = r.get_int(n, "align_corners", 0) != 0};
      if (n.input_size() != 2) r.fail(n, "expects two inputs, x and the grid");
      const std::string grid = activation_input_at(n, 1);
      if (is_weight(grid) || float_constants.count(grid))
        r.fail(n,
               "the grid is a weight or a constant; frugal imports grids computed from the "
               "input (N, H', W', 2)");
      o.inputs = {activation_input(n), grid};
    } else if (op == "LRN") {
      // nn.LocalResponseNorm (AlexNet's and GoogLeNet's as Caffe had them): x over (bias +
      // alpha/size * the sum of squares over `size` channels around each)^beta.
      o.kind = Kind::lrn;
      o.kernel = r.get_int(n, "size", 0);
      if (o.kernel < 1)
        r.fail(n, "size " + std::to_string(o.kernel) + ": a window of at least 1 channel");
      o.alpha = r.get_float(n, "alpha", 1e-4);
      o.lrn_beta = r.get_float(n, "beta", 0.75);
      o.lrn_bias = r.get_float(n, "bias", 1);
      o.inputs = {activation_input(n)};
    } else if (op == "DepthToSpace" || op == "SpaceToDepth") {
      // nn.PixelShuffle (DepthToSpace in CRD mode) and PixelUnshuffle, a blocksize b: channels
      // moved into b x b blocks of pixels and back, a reshape, a transpose and a reshape.
      o.kind = op == "DepthToSpace" ? Kind::depth_to_space : Kind::space_to_depth;
      o.kernel = r.get_int(n, "blocksize", 0);
      if (o.kernel < 1) r.fail(n, "blocksize " + std::to_string(o.kernel) + ": at least 1");
      if (op == "DepthToSpace") {
        const std::string mode = r.get_string(n, "mode", "DCR");
        if (mode != "DCR" && mode != "CRD")
          r.fail(n, "mode " + mode + " is not one of DepthToSpace's (DCR, CRD)");
        o.column_row_depth = mode == "CRD";
      }
      o.inputs = {activation_input(n)};
    } else if (op == "ReduceMean") {
      // The mean over any axes but the batch's (checked while recording, when the rank is
      // known): the spatial mean of squeeze-and-excitation, a channel mean, a LayerNorm's.
      o.kind = Kind::reduce_mean;
      o.ints = r.get_ints(n, "axes");
      if (o.ints.empty()) r.fail(n, "no axes: the mean over every axis, the batch's included");
      o.squeeze = r.get_int(n, "keepdims", 1) == 0;
      o.inputs = {activation_input(n)};
      moved_reduction(o, o.ints);
    } else if ((op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin" ||
                op == "ReduceSumSquare" || op == "ReduceL1" || op == "ReduceL2" ||
                op == "ReduceLogSumExp") &&
               !is_int(need(n, 0))) {
      // Over any axes but the batch's (checked while recording). ReduceSum takes its axes as
      // an input from opset 13, the others as an attribute up to opset 17.
      static const std::map<std::string, Reduction> kinds = {
          {"ReduceSum", Reduction::sum},
          {"ReduceMax", Reduction::max},
          {"ReduceMin", Reduction::min},
          {"ReduceSumSquare", Reduction::sum_square},
          {"ReduceL1", Reduction::l1},
          {"ReduceL2", Reduction::l2},
          {"ReduceLogSumExp", Reduction::log_sum_exp}};
      o.kind = Kind::reduce;
      o.reduction = kinds.at(op);
      o.ints = r.get_ints(n, "axes");
      const std::string axes = optional_int_input(n, 1);
      if (!axes.empty()) o.int_inputs = {axes};
      o.empty_axes_noop = r.get_int(n, "noop_with_empty_axes", 0) != 0;
      if (o.ints.empty() && axes.empty()) {
        if (!o.empty_axes_noop)
          r.fail(n, "no axes: the reduction over every axis, the batch's included");
        o.kind = Kind::identity;
      }
      o.squeeze = r.get_int(n, "keepdims", 1) == 0;
      o.inputs = {activation_input(n)};
      moved_reduction(o, axes.empty()                ? o.ints
                         : int_constants.count(axes) ? int_constants.at(axes).values
                                                     : std::vector<int64_t>{});
    } else if (op == "Cast" && !is_int(need(n, 0)) && !all_constant(n)) {
      // Of an activation to the model's own float type (EfficientViT casts to float before its
      // attention): nothing to do, the whole graph computing in one type (the file's, or the
      // one a step asks for).
      const int64_t to = r.get_int(n, "to", 0);
      const int64_t own =
          model.dtype == DType::f64 ? onnx::TensorProto::DOUBLE : onnx::TensorProto::FLOAT;
      const bool mask = masks.count(need(n, 0)) > 0;  // 0s and 1s as bools or floats
      if (mask && (to == onnx::TensorProto::BOOL || to == own))
        masks.insert(o.output);
      else if (to != own)
        r.fail(n, std::string("a Cast of an activation to other than the model's own type, ") +
                      (own == onnx::TensorProto::FLOAT ? "float" : "double"));
      o.kind = Kind::identity;
      o.inputs = {activation_input(n)};
    } else if (op == "Flatten") {
      o.kind = Kind::flatten;
      o.axis = r.get_int(n, "axis", 1);
      if (o.axis == 0) r.fail(n, "axis 0 would move the batch axis; frugal imports axes from 1 on");
      o.inputs = {activation_input(n)};
    } else if (op == "Reshape" && !is_int(need(n, 0))) {
      // A constant target is written at the export's batch size: its first entry stands for the
      // batch, whatever the batch is when recording. A computed one is exact.
      o.kind = Kind::reshape;
      const std::string x = need(n, 0);
      // Of a weight (a layer scale's gamma.view(-1, 1, 1) in a training-mode export): the
      // reshape of the parameter, its gradient flowing back; its target has no batch.
      o.of_weight = is_weight(x);
      o.inputs = {o.of_weight ? operand(n, 0) : activation_input(n)};
      o.int_inputs = {int_input(n, 1)};
      o.allow_zero = r.get_int(n, "allowzero", 0) != 0;
      if (o.of_weight) weight_values.insert(o.output);
    } else if (op == "Transpose" && graph->initializers.count(need(n, 0)) &&
               graph->initializers.at(need(n, 0)).shape().rank() == 2 &&
               (r.get_ints(n, "perm").empty() ||
                r.get_ints(n, "perm") == std::vector<int64_t>{1, 0})) {
      // A weight's transpose, as a training-mode export (no constant folding) writes
      // nn.Linear on (..., C) values: x @ W^T. The MatMul reading it records linear with W.
      transposed_weight[o.output] = need(n, 0);
      continue;
    } else if (op == "Transpose" && !is_int(need(n, 0))) {
      o.kind = Kind::transpose;
      o.ints = r.get_ints(n, "perm");
      o.inputs = {activation_input(n)};
      if (weight_values.count(o.inputs[0])) weight_values.insert(o.output);
      if (o.ints.empty() || o.ints[0] != 0) batch_moved.insert(o.output);
    } else if (op == "Softmax" || op == "LogSoftmax") {
      o.kind = op == "Softmax" ? Kind::softmax : Kind::log_softmax;
      o.legacy = opset < 13;
      o.axis = r.get_int(n, "axis", o.legacy ? 1 : -1);
      o.inputs = {activation_input(n)};
    } else if (op == "Split" && float_constants.count(need(n, 0)) &&
               !graph->initializers.count(need(n, 0))) {
      // Of a float constant (anchors a fixed-size export folded): folded into its parts.
      const Tensor& x = float_constants.at(need(n, 0));
      const int rank = x.shape().rank();
      const int64_t axis = r.get_int(n, "axis", 0);
      if (axis < -rank || axis >= rank)
        r.fail(n, "axis " + std::to_string(axis) + " is outside the constant's rank");
      const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
      std::vector<int64_t> sizes = r.get_ints(n, "split");
      if (const std::string v = optional_int_input(n, 1); !v.empty()) {
        if (!int_constants.count(v)) r.fail(n, "the sizes of a constant's split must be constant");
        sizes = int_constants.at(v).values;
      }
      const int64_t extent = x.shape()[a];
      const auto parts = static_cast<int64_t>(n.output_size());
      if (sizes.empty()) {
        if (parts < 1 || extent % parts != 0)
          r.fail(n, "a constant of " + std::to_string(extent) + " along the axis does not split " +
                        "into " + std::to_string(parts) + " equal parts");
        sizes.assign(static_cast<size_t>(parts), extent / parts);
      }
      int64_t total = 0;
      for (int64_t k : sizes) {
        if (k < 0 || k > extent) r.fail(n, "split size " + std::to_string(k) + " of a constant");
        total += k;
      }
      if (static_cast<int64_t>(sizes.size()) != parts || total != extent)
        r.fail(n, "split sizes do not add up to the constant's extent " + std::to_string(extent));
      std::vector<int64_t> shift(static_cast<size_t>(rank), 0);  // the part's start along a
      for (int64_t p = 0; p < parts; ++p) {
        std::vector<int64_t> dims = x.shape().dims();
        dims[static_cast<size_t>(a)] = sizes[static_cast<size_t>(p)];
        Tensor part = Tensor::empty(Shape(dims), x.dtype());
        cpu_backend().strided_copy(shifted_box(x.shape(), part.shape(), shift), x, part);
        shift[static_cast<size_t>(a)] += sizes[static_cast<size_t>(p)];
        if (!n.output(static_cast<int>(p)).empty())
          float_constants[n.output(static_cast<int>(p))] = std::move(part);
      }
      continue;
    } else if (op == "Split") {
      o.kind = Kind::split;
      o.axis = r.get_int(n, "axis", 0);
      for (int i = 0; i < n.output_size(); ++i) {
        if (n.output(i).empty()) r.fail(n, "output " + std::to_string(i) + " has no name");
        o.outputs.push_back(n.output(i));
      }
      o.ints = r.get_ints(n, "split");  // opsets 11 and 12
      if (const std::string sizes = optional_int_input(n, 1); !sizes.empty())
        o.int_inputs = {sizes};
      o.inputs = {activation_input(n)};
      // Along an axis 0 that is not the batch's, so are the parts' (unbind's Squeeze follows).
      o.batch_moved = batch_moved.count(o.inputs[0]) > 0;
      if (o.batch_moved) batch_moved.insert(o.outputs.begin(), o.outputs.end());
    } else if (op == "Slice" && !is_int(need(n, 0))) {
      o.kind = Kind::slice;
      // Of a weight (a training-mode export's LSTM: its gates' blocks of weight_ih cut apart
      // and joined in ONNX's order), of any axis; of an activation whose axis 0 is not the
      // batch's, of that axis too.
      const bool of_weight = is_weight(need(n, 0));
      o.inputs = {of_weight ? operand(n, 0) : activation_input(n)};
      if (of_weight) weight_values.insert(o.output);
      o.batch_moved = of_weight || batch_moved.count(o.inputs[0]) > 0;
      if (batch_moved.count(o.inputs[0])) batch_moved.insert(o.output);
      for (int i = 1; i < 5; ++i) {
        const std::string v = i < 3 ? int_input(n, i) : optional_int_input(n, i);
        if (v.empty()) break;
        o.int_inputs.push_back(v);
      }
    } else if (comparison(op) && !all_constant(n)) {
      // A comparison over activations (x > 0, torch.where's condition): a mask of 0s and 1s in
      // the model's float type, through which no gradient flows.
      o.kind = Kind::binary;
      o.binary = *comparison(op);
      o.inputs = {operand(n, 0), operand(n, 1)};
      masks.insert(o.output);
    } else if ((op == "Not" || op == "And" || op == "Or" || op == "Xor") &&
               masks.count(need(n, 0))) {
      // Of masks: Not is 1 where the mask is 0 (a comparison with a constant 0), And a product,
      // Or and Xor the logical ops.
      o.kind = Kind::binary;
      o.inputs = {need(n, 0)};
      if (op == "Not") {
        o.binary = BinaryKind::equal;
        const std::string zero = o.output + ".zero";
        graph->initializers[zero] = Tensor::zeros(Shape{1}, model.dtype);
        graph->params[zero] = false;
        o.inputs.push_back(zero);
      } else {
        const std::string other = need(n, 1);
        if (!masks.count(other))
          r.fail(n, "input 1 ('" + other + "') is not a comparison's output over activations");
        o.binary = op == "And"  ? BinaryKind::mul
                   : op == "Or" ? BinaryKind::logical_or
                                : BinaryKind::logical_xor;
        o.inputs.push_back(other);
      }
      masks.insert(o.output);
    } else if (op == "If") {
      // Its branches' nodes are in the graph already, guarded by the condition (`flat`
      // above): the output is the taken branch's, known once shapes are.
      o.kind = Kind::choose;
      const std::string c = need(n, 0);
      if (!is_int(c))
        r.fail(n, "the condition '" + c +
                      "' is computed from activations; frugal imports Ifs whose condition is "
                      "computed from shapes and constants");
      o.int_inputs = {c};
      for (const char* b : {"then_branch", "else_branch"}) {
        const std::string out = canon(branch(n, b).output(0).name());
        if (is_weight(out) || (!defined.count(out) && !is_int(out)))
          r.fail(n, std::string(b) + "'s output '" + out +
                        "' is a weight or constant; frugal imports Ifs that choose between "
                        "activations or between shape values");
        o.inputs.push_back(out);
      }
      if (is_int(o.inputs[0]) != is_int(o.inputs[1]))
        r.fail(n, "one branch gives a shape value, the other an activation");
      if (maybe_real.count(o.inputs[0]) || maybe_real.count(o.inputs[1]))
        maybe_real.insert(o.output);
    } else if (op == "Where" && !(constant_or_int(n, 1) && constant_or_int(n, 2))) {
      // Over activations (masked_fill, torch.where): a where the condition holds, b elsewhere.
      // The condition is a mask over activations, or computed from shapes and constants alone
      // (a causal mask: recorded as a constant).
      o.kind = Kind::select;
      const std::string c = need(n, 0);
      if (is_int(c))
        o.int_inputs = {int_input(n, 0)};
      else if (masks.count(c))
        o.inputs = {c};
      else
        r.fail(n, "input 0 ('" + c +
                      "') is neither a comparison's output over activations nor computed from "
                      "shapes and constants");
      o.inputs.push_back(operand(n, 1));
      o.inputs.push_back(operand(n, 2));
    } else if (op == "ScatterND" && !constant_or_int(n, 0)) {
      // Into an activation (y[:, 2::3] = y[:, 2::3].sigmoid(): YOLOv8-pose's keypoints), at
      // indices computed from shapes: each sample's positions taken from its own updates.
      if (r.get_string(n, "reduction", "none") != "none")
        r.fail(n, "only reduction 'none' is imported");
      o.kind = Kind::scatter;
      o.inputs = {activation_input(n), operand(n, 2)};
      o.int_inputs = {int_input(n, 1)};
      if (batch_moved.count(o.inputs[0]))
        r.fail(n, "a ScatterND into a value whose axis 0 is not the batch's is not imported");
    } else if (op == "Shape" || op == "ConstantOfShape" || op == "Range" ||
               ((op == "Gather" || op == "Unsqueeze" || op == "Squeeze" || op == "Cast" ||
                 op == "Concat" || op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
                 op == "Mod" || op == "Pow" || op == "Reshape" || op == "Slice" ||
                 op == "Transpose" || comparison(op) || op == "Where" || op == "Not" ||
                 op == "ScatterND" || op == "Expand" || op == "Clip" || op == "CumSum" ||
                 op == "Tile" || op == "ReduceSum" || op == "ReduceProd" || op == "ReduceMax" ||
                 op == "ReduceMin" || unary_kind(op)) &&
                // (arithmetic, comparisons and joins beside an activation are recorded over it:
                // YOLO's anchor points minus box distances, an empty placeholder feature)
                ((is_int(need(n, 0)) && !over_any_activation(op)) || all_constant(n)))) {
      // Integer shape arithmetic: evaluated while recording (models/onnx_ints.h).
      o.kind = Kind::integer;
      IntNode& k = o.int_node;
      auto all_ints = [&](int from) {
        for (int i = from; i < n.input_size(); ++i)
          if (!n.input(i).empty()) k.ints.push_back(int_input(n, i));
      };
      if (op == "Shape") {
        k.op = IntOp::shape_of;
        k.attrs = {r.get_int(n, "start", 0), r.get_int(n, "end", INT64_MAX)};
        const std::string x = need(n, 0);
        const Tensor* known = graph->initializers.count(x) ? &graph->initializers.at(x)
                              : float_constants.count(x)   ? &float_constants.at(x)
                                                           : nullptr;
        if (known) {  // of a weight or a float constant (an export at a fixed batch): folded
          try {
            int_constants[o.output] = eval_int_node(k, {}, &known->shape().dims());
          } catch (const Error& e) {
            r.fail(n, e.what());
          }
          continue;
        }
        if (is_int(x))
          k.ints = {int_input(n, 0)};
        else
          o.inputs = {activation_input(n)};
      } else if (op == "ConstantOfShape") {
        k.op = IntOp::constant_of_shape;
        k.ints = {int_input(n, 0)};
        int64_t value = 0;
        if (const onnx::AttributeProto* v = r.attr(n, "value")) {
          std::vector<int64_t> ints;
          if (v->type() != onnx::AttributeProto::TENSOR)
            r.fail(n, "'value' must be a tensor of one element");
          const Tensor t = r.tensor(v->t(), &ints);
          if ((t.defined() ? t.numel() : static_cast<int64_t>(ints.size())) != 1)
            r.fail(n, "'value' must be a tensor of one element");
          k.real = t.defined();  // x.new_zeros(H, W): a float constant
          if (k.real)
            k.real_value = element_as_double(t, 0);
          else
            value = ints[0];
        }
        k.attrs = {value};
      } else if (op == "Gather") {
        k.op = IntOp::gather;
        k.attrs = {r.get_int(n, "axis", 0)};
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op == "Unsqueeze" || op == "Squeeze") {
        k.op = op == "Unsqueeze" ? IntOp::unsqueeze : IntOp::squeeze;
        k.attrs = r.get_ints(n, "axes");
        all_ints(0);
      } else if (op == "Cast") {
        const int64_t to = r.get_int(n, "to", 0);
        k.real = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
        const bool to_bool = to == onnx::TensorProto::BOOL;
        if (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32 && !k.real && !to_bool)
          r.fail(n, "a Cast of a shape value to other than int64, int32, bool, float or double");
        k.op = IntOp::cast;
        k.attrs = {to_bool ? 1 : 0};
        k.ints = {int_input(n, 0)};
      } else if (op == "Concat") {
        k.op = IntOp::concat;
        k.attrs = {r.get_int(n, "axis", 0)};
        all_ints(0);
        if (k.ints.empty()) r.fail(n, "has no inputs");
      } else if (op == "Reshape") {
        k.op = IntOp::reshape;
        k.attrs = {r.get_int(n, "allowzero", 0)};
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op == "Slice") {
        k.op = IntOp::slice;
        k.ints = {int_input(n, 0), int_input(n, 1), int_input(n, 2)};
        all_ints(3);
      } else if (op == "Transpose") {
        k.op = IntOp::transpose;
        k.attrs = r.get_ints(n, "perm");
        k.ints = {int_input(n, 0)};
      } else if (const std::optional<BinaryKind> c = comparison(op)) {
        k.op = IntOp::compare;
        k.attrs = {static_cast<int64_t>(*c)};
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op == "Where") {
        k.op = IntOp::where;
        k.ints = {int_input(n, 0), int_input(n, 1), int_input(n, 2)};
      } else if (op == "Range" || op == "ScatterND") {
        if (op == "ScatterND" && r.get_string(n, "reduction", "none") != "none")
          r.fail(n, "only reduction 'none' is imported");
        k.op = op == "Range" ? IntOp::range : IntOp::scatter_nd;
        k.ints = {int_input(n, 0), int_input(n, 1), int_input(n, 2)};
      } else if (op == "Not") {
        k.op = IntOp::logical_not;
        k.ints = {int_input(n, 0)};
      } else if (const std::optional<UnaryKind> f = unary_kind(op)) {
        k.op = IntOp::unary;
        k.attrs = {static_cast<int64_t>(*f)};
        k.ints = {int_input(n, 0)};
      } else if (op == "Clip") {
        if (r.attr(n, "min") || r.attr(n, "max"))
          r.fail(n, "Clip of shape values with min and max attributes (opsets < 11)");
        k.op = IntOp::clip;
        k.ints = {int_input(n, 0)};
        k.attrs = {0, 0};
        for (int i = 1; i < 3; ++i)
          if (const std::string b = optional_int_input(n, i); !b.empty()) {
            k.ints.push_back(b);
            k.attrs[static_cast<size_t>(i - 1)] = 1;
          }
      } else if (op == "CumSum") {
        k.op = IntOp::cumsum;
        k.attrs = {r.get_int(n, "exclusive", 0), r.get_int(n, "reverse", 0)};
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op == "Expand" || op == "Tile") {
        k.op = op == "Expand" ? IntOp::expand : IntOp::tile;
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op == "Mod") {
        k.op = IntOp::mod;
        k.attrs = {r.get_int(n, "fmod", 0)};
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else if (op.starts_with("Reduce")) {  // torch.var's count: a ReduceProd of sizes
        k.op = IntOp::reduce;
        k.attrs = {static_cast<int64_t>(op == "ReduceSum"    ? IntReduction::sum
                                        : op == "ReduceProd" ? IntReduction::prod
                                        : op == "ReduceMax"  ? IntReduction::max
                                                             : IntReduction::min),
                   r.get_int(n, "keepdims", 1), r.get_int(n, "noop_with_empty_axes", 0)};
        for (int64_t a : r.get_ints(n, "axes")) k.attrs.push_back(a);
        k.ints = {int_input(n, 0)};
        if (const std::string axes = optional_int_input(n, 1); !axes.empty())
          k.ints.push_back(axes);
      } else if (op == "Pow") {
        k.op = IntOp::pow;
        k.ints = {int_input(n, 0), int_input(n, 1)};
      } else {
        k.op = IntOp::binary;
        k.binary = arithmetic(op);
        k.ints = {int_input(n, 0), int_input(n, 1)};
      }
      const bool from_real = std::any_of(k.ints.begin(), k.ints.end(),
                                         [&](const std::string& i) { return maybe_real.count(i); });
      const bool to_int = (op == "Cast" && !k.real) || comparison(op) || op == "Shape";
      if (k.real || (from_real && !to_int) ||
          (k.op == IntOp::unary && !unary_keeps_integers(static_cast<UnaryKind>(k.attrs[0]))))
        maybe_real.insert(o.output);
      // Every operand a constant of the file: folded now (a float result becomes a float
      // constant, as if the export had folded it: nn.Upsample's scales, a Pow of two numbers).
      const bool folds = op != "Shape" && std::all_of(k.ints.begin(), k.ints.end(), [&](auto& i) {
                           return int_constants.count(i) > 0;
                         });
      if (folds) {
        IntTensor v;
        try {
          v = eval_int_node(k, int_constants, nullptr);
        } catch (const Error& e) {
          r.fail(n, e.what());
        }
        if (!v.real) {
          int_constants[o.output] = std::move(v);
          continue;
        }
        DType dtype = DType::f32;  // f64 where a float operand is
        for (const std::string& i : k.ints)
          if (auto c = float_constants.find(i); c != float_constants.end())
            if (c->second.dtype() == DType::f64) dtype = DType::f64;
        float_constants[o.output] = host_tensor(v, dtype);
        continue;
      }
    } else if (op == "Unsqueeze" || op == "Squeeze") {
      // Of an activation: a reshape adding or dropping axes of extent 1 (the axes as in the
      // integer op, read while recording). Of a weight (GroupNorm's per-channel weight in a
      // training-mode export): the same reshape of the parameter, its gradient flowing back.
      o.kind = Kind::reshape_axes;
      o.int_node.op = op == "Unsqueeze" ? IntOp::unsqueeze : IntOp::squeeze;
      o.int_node.attrs = r.get_ints(n, "axes");
      if (const std::string axes = optional_int_input(n, 1); !axes.empty())
        o.int_node.ints = {axes};
      const std::string x = need(n, 0);
      o.of_weight = is_weight(x);
      o.inputs = {o.of_weight ? operand(n, 0) : activation_input(n)};
      if (o.of_weight) weight_values.insert(o.output);
      o.batch_moved = batch_moved.count(x) > 0;  // (its output is taken to have it first again)
      // A new axis 0 in front of the batch (torch.stack(xs, dim=0): CrossViT's heads, averaged
      // over that axis after a Concat along it).
      const std::vector<int64_t> axes =
          !o.int_node.ints.empty() && int_constants.count(o.int_node.ints[0])
              ? int_constants.at(o.int_node.ints[0]).values
              : o.int_node.attrs;
      if (op == "Unsqueeze" && !o.of_weight &&
          std::find(axes.begin(), axes.end(), 0) != axes.end()) {
        o.batch_moved = true;
        batch_moved.insert(o.output);
      }
    } else if (op == "Gather" && graph->initializers.count(need(n, 0)) && !constant_or_int(n, 1)) {
      // Of a weight at an input's values (nn.Embedding of class labels or token ids, an int64
      // input carried as whole numbers): an embedding op, whose gradient adds into the table.
      if (r.get_int(n, "axis", 0) != 0)
        r.fail(n, "a Gather of a weight at an activation's values is imported along axis 0 only");
      o.kind = Kind::embedding;
      o.inputs = {operand(n, 0), activation_input_at(n, 1)};
    } else if (op == "Gather" && graph->initializers.count(need(n, 0))) {
      // Of a weight by constant indices (Swin's relative position bias table[index]): a gather
      // op, whose gradient adds back into the table.
      o.kind = Kind::gather;
      o.of_weight = true;
      o.axis = r.get_int(n, "axis", 0);
      o.inputs = {operand(n, 0)};
      o.int_inputs = {int_input(n, 1)};
      weight_values.insert(o.output);
    } else if (op == "Gather") {
      // Over an activation by constant indices (x[:, 0], x[:, [2, 0]]): a gather op, the axis
      // dropped for a scalar index.
      o.kind = Kind::gather;
      o.axis = r.get_int(n, "axis", 0);
      o.inputs = {activation_input(n)};
      o.int_inputs = {int_input(n, 1)};
      o.batch_moved = batch_moved.count(o.inputs[0]) > 0;
    } else if (op == "Expand") {
      // To a shape (read while recording): unit axes repeated, NumPy's broadcasting. Of an
      // activation never over its batch axis; of a weight over any axis (a vision
      // transformer's class token, expanded to the batch).
      o.kind = Kind::expand;
      const std::string x = need(n, 0);
      o.of_weight = graph->initializers.count(x) > 0 || float_constants.count(x) > 0;
      o.inputs = {o.of_weight ? operand(n, 0) : activation_input(n)};
      o.int_inputs = {int_input(n, 1)};
    } else if (op == "LSTM" || op == "GRU" || op == "RNN") {
      // nn.LSTM's, nn.GRU's and nn.RNN's exports (opsets 11-17: layout 0, X (T, N, I)),
      // unrolled while recording.
      o.kind = Kind::lstm;
      o.lstm.cell = op == "GRU" ? OnnxLstm::gru : op == "RNN" ? OnnxLstm::rnn : OnnxLstm::lstm;
      const bool gru = o.lstm.cell == OnnxLstm::gru, rnn = o.lstm.cell == OnnxLstm::rnn;
      const bool states_only = gru || rnn;  // no cell state: Y and Y_h
      const std::string dir = r.get_string(n, "direction", "forward");
      if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
        r.fail(n, "direction " + dir + " is not forward, reverse or bidirectional");
      o.lstm.direction = dir == "forward"   ? OnnxLstm::forward
                         : dir == "reverse" ? OnnxLstm::reverse
                                            : OnnxLstm::both;
      o.lstm.hidden = r.get_int(n, "hidden_size", 0);
      if (o.lstm.hidden < 1 || o.lstm.hidden > (int64_t{1} << 20))
        r.fail(n, "hidden_size must be 1 to 2^20");
      if (r.get_int(n, "layout", 0) != 0) r.fail(n, "layout 1 (batch first) is not imported");
      if (r.get_int(n, "input_forget", 0) != 0) r.fail(n, "input_forget 1 is not imported");
      if (gru && r.get_int(n, "linear_before_reset", 0) == 0)
        r.fail(n, "linear_before_reset 0 is not imported (PyTorch's nn.GRU exports 1)");
      if (r.attr(n, "clip")) r.fail(n, "a cell clip is not imported");
      if (rnn) {  // one per direction (or one for both), Tanh or Relu
        const int dirs = o.lstm.direction == OnnxLstm::both ? 2 : 1;
        if (r.attr(n, "activation_alpha") || r.attr(n, "activation_beta"))
          r.fail(n, "activation_alpha and activation_beta are not imported");
        if (const onnx::AttributeProto* a = r.attr(n, "activations")) {
          if (a->strings_size() != 1 && a->strings_size() != dirs)
            r.fail(n, std::to_string(a->strings_size()) + " activations for " +
                          std::to_string(dirs) + " direction(s)");
          for (int d = 0; d < dirs; ++d) {
            const std::string& f = a->strings(a->strings_size() == 1 ? 0 : d);
            if (f != "Tanh" && f != "Relu")
              r.fail(n, "activation " + f + " is not imported (Tanh and Relu are)");
            o.lstm.relu[d] = f == "Relu";
          }
        }
      } else if (const onnx::AttributeProto* a = r.attr(n, "activations")) {
        const char* want[] = {"Sigmoid", "Tanh", "Tanh"};
        const int per = gru ? 2 : 3;  // f, g (and h)
        for (int i = 0; i < a->strings_size(); ++i)
          if (a->strings(i) != want[i % per])
            r.fail(n, std::string("activations other than ") +
                          (gru ? "Sigmoid, Tanh" : "Sigmoid, Tanh, Tanh") + " are not imported");
      }
      auto given = [&](int i) { return i < n.input_size() && !n.input(i).empty(); };
      if (given(4)) r.fail(n, "sequence_lens is not imported (every sequence full length)");
      if (given(7)) r.fail(n, "peepholes (P) are not imported");
      const std::string an = rnn ? "an RNN" : "a GRU";
      if (states_only && given(6)) r.fail(n, an + " has no input 6");
      o.inputs = {activation_input(n), param(n, 1, true), param(n, 2, true)};
      if ((o.lstm.has_bias = given(3))) o.inputs.push_back(param(n, 3, true));
      for (int i : {5, 6}) {
        if (!given(i)) continue;
        const std::string s = need(n, i);  // an activation, or zeros computed from shapes
        if (is_int(s) && !maybe_real.count(s))
          r.fail(n, "input " + std::to_string(i) + " is an integer (shape) value");
        (i == 5 ? o.lstm.has_initial_h : o.lstm.has_initial_c) = true;
        o.inputs.push_back(is_weight(s) ? operand(n, i) : s);
      }
      for (int i = 0; i < (states_only ? 2 : 3); ++i)
        o.outputs.push_back(i < n.output_size() ? n.output(i) : "");
      if (n.output_size() > static_cast<int>(o.outputs.size()))
        r.fail(n, std::to_string(n.output_size()) + " outputs; " +
                      (states_only ? an + " has Y and Y_h" : "an LSTM has Y, Y_h and Y_c"));
      // Y (T, D, N, H) and the states (D, N, H): axis 0 is not the batch's.
      for (const std::string& out : o.outputs)
        if (!out.empty()) batch_moved.insert(out);
    } else if (op == "Tile") {
      // Copies one after another along each axis, the batch's too (x.repeat(...): GCViT's
      // global queries once per window, XCiT's position features once per sample).
      o.kind = Kind::tile;
      const std::string x = need(n, 0);
      o.of_weight = is_weight(x);
      o.inputs = {o.of_weight ? operand(n, 0) : activation_input(n)};
      o.int_inputs = {int_input(n, 1)};
      if (o.of_weight) weight_values.insert(o.output);
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
      o.binary = arithmetic(op);
      arithmetic_operands(o, n);
    } else if ((op == "Max" || op == "Min") && n.input_size() == 1) {
      o.kind = Kind::identity;  // the extreme of one operand: itself
      o.inputs = {activation_input(n)};
    } else if (op == "Max" || op == "Min") {
      // torch.maximum and torch.minimum, and torch.clamp by tensors (a Max, then a Min): of two
      // operands, an activation among them, broadcast as Add's.
      if (n.input_size() != 2)
        r.fail(n,
               std::to_string(n.input_size()) + " inputs: the extreme of one or two is imported");
      for (int i = 0; i < 2; ++i)
        if (is_int(need(n, i))) r.fail(n, "of shape values: not imported");
      o.binary = op == "Max" ? BinaryKind::maximum : BinaryKind::minimum;
      arithmetic_operands(o, n);
    } else if (op == "Concat" && n.input_size() >= 1 &&
               std::all_of(n.input().begin(), n.input().end(),
                           [&](const std::string& i) { return float_constants.count(canon(i)); })) {
      // Float constants joined (nn.Upsample's scales, written as (1, 1) and (s, s)): folded.
      std::vector<double> v;
      const DType dtype = float_constants.at(canon(n.input(0))).dtype();
      for (const std::string& i : n.input()) {
        const Tensor& t = float_constants.at(canon(i));
        if (t.shape().rank() > 1 || t.dtype() != dtype)
          r.fail(n, "only 1-D float constants of one type are joined");
        for (int64_t k = 0; k < t.numel(); ++k) v.push_back(element_as_double(t, k));
      }
      Tensor joined = Tensor::empty({static_cast<int64_t>(v.size())}, dtype);
      for (size_t k = 0; k < v.size(); ++k) {
        if (dtype == DType::f64)
          joined.data<double>()[k] = v[k];
        else
          joined.data<float>()[k] = static_cast<float>(v[k]);
      }
      float_constants[o.output] = joined;
      continue;
    } else if (op == "Concat") {
      o.kind = Kind::concat;
      o.axis = r.get_int(n, "axis", 0);
      for (int i = 0; i < n.input_size(); ++i) {
        // A piece computed from shapes joins as a constant, or as nothing where it is empty
        // (segmentation_models_pytorch's placeholder feature, torch.empty(N, 0, h, w)).
        const std::string x = need(n, i);
        o.inputs.push_back(int_values.count(x) ? x : activation_input_at(n, i));
      }
      // Values stacked along an axis 0 that is not the batch's (torch.stack's Unsqueeze first),
      // or weights joined along any axis (an LSTM's gates, its directions).
      const bool weights = std::all_of(o.inputs.begin(), o.inputs.end(), is_weight);
      if (weights)
        for (int i = 0; i < n.input_size(); ++i) o.inputs[static_cast<size_t>(i)] = operand(n, i);
      o.batch_moved =
          weights || std::any_of(o.inputs.begin(), o.inputs.end(),
                                 [&](const std::string& i) { return batch_moved.count(i) > 0; });
      if (weights)
        weight_values.insert(o.output);
      else if (o.batch_moved)
        batch_moved.insert(o.output);
    } else if (op == "Erf") {
      o.kind = Kind::activation;  // or part of GELU (fuse_onnx_graph)
      o.activation = Activation::erf;
      o.inputs = {activation_input(n)};
    } else if (op == "Sqrt" || op == "Abs" || op == "Sign" || op == "Sin" || op == "Cos" ||
               op == "Atan" || op == "Floor" || op == "Ceil" || op == "Round") {
      // (Sign: nn.LPPool2d's export; Floor, Ceil, Round: quantizers', coordinates'; their
      // gradients 0, as PyTorch's)
      o.kind = Kind::activation;
      o.activation = op == "Sqrt"    ? Activation::sqrt
                     : op == "Abs"   ? Activation::abs
                     : op == "Sign"  ? Activation::sign
                     : op == "Sin"   ? Activation::sin
                     : op == "Cos"   ? Activation::cos
                     : op == "Floor" ? Activation::floor
                     : op == "Ceil"  ? Activation::ceil
                     : op == "Round" ? Activation::round
                                     : Activation::atan;
      unary_input(o, n);
    } else if (const std::optional<EluCoefficients> c = elu_coefficients(r, n)) {
      // nn.CELU, nn.ELU with an alpha other than 1, SELU with constants of its own: the ELU
      // family's op (layers/elu.h), whose backward reads y, not x.
      o.kind = Kind::elu;
      o.elu = *c;
      o.inputs = {activation_input(n)};
    } else if (op == "Elu" || op == "Selu" || op == "Softplus" || op == "Softsign" || op == "Exp" ||
               op == "Log" || op == "Neg" || op == "Reciprocal") {
      // nn.ELU, nn.SELU, nn.Softplus, nn.Softsign, and nn.Mish as its export's Softplus, Tanh
      // and Mul; torch.exp, log, neg and reciprocal.
      o.kind = Kind::activation;
      o.activation = op == "Elu"        ? Activation::elu
                     : op == "Selu"     ? Activation::selu
                     : op == "Softplus" ? Activation::softplus
                     : op == "Softsign" ? Activation::softsign
                     : op == "Exp"      ? Activation::exp
                     : op == "Log"      ? Activation::log
                     : op == "Neg"      ? Activation::neg
                                        : Activation::reciprocal;
      unary_input(o, n);
    } else if (op == "Pow" && !float_constants.count(need(n, 1))) {
      // By a weight (GeM pooling's learned exponent p, an initializer: trainable, as every
      // weight an op reads), or by a value computed from weights or activations (torch.pow of
      // two tensors): a broadcast pow, whose backward gives the exponent its gradient too.
      arithmetic_operands(o, n);
      o.binary = BinaryKind::pow;
    } else if (op == "Pow") {
      // By a constant exponent (a Constant node's): 2 (a variance's square, as PyTorch's
      // LayerNorm exports below opset 17) is x * x, 0.5 the square root, 1 x itself; any other a
      // pow op.
      const double e = scalar(n, 1, NAN);
      unary_input(o, n);
      if (e == 2) {
        o.kind = Kind::binary;
        o.binary = BinaryKind::mul;
        o.inputs.push_back(o.inputs[0]);
      } else if (e == 0.5) {
        o.kind = Kind::activation;
        o.activation = Activation::sqrt;
      } else if (e == 1) {
        o.kind = Kind::identity;
      } else if (std::isfinite(e)) {
        o.kind = Kind::pow;
        o.alpha = e;
      } else {
        r.fail(n, "the exponent must be a finite constant scalar");
      }
    } else if (op == "LayerNormalization") {
      // Opset 17's LayerNorm (torch.nn.LayerNorm): the axes from `axis` on, normalized
      // together; the Mean and InvStdDev outputs are not imported (no node may read them).
      o.kind = Kind::layer_norm;
      o.axis = r.get_int(n, "axis", -1);
      o.eps = r.get_float(n, "epsilon", 1e-5);
      if (!(o.eps > 0)) r.fail(n, "epsilon must be positive");
      o.inputs = {activation_input(n), param(n, 1, true)};
      if (n.input_size() > 2 && !n.input(2).empty()) {
        o.inputs.push_back(param(n, 2, true));
      } else {  // no bias: a fixed zero one
        const Tensor& scale = graph->initializers.at(o.inputs[1]);
        const std::string zero = o.output + ".zero_bias";
        graph->initializers[zero] = Tensor::zeros(scale.shape(), scale.dtype());
        graph->params[zero] = false;
        o.inputs.push_back(zero);
      }
    } else if (op == "InstanceNormalization") {
      // torch.nn.InstanceNorm1d/2d/3d (affine or not), and GroupNorm, which PyTorch exports as
      // a Reshape to (N, groups, -1), this with a fixed scale of ones and bias of zeros, a
      // Reshape back and the per-channel weight and bias as Mul and Add.
      o.kind = Kind::instance_norm;
      o.eps = r.get_float(n, "epsilon", 1e-5);
      if (!(o.eps > 0)) r.fail(n, "epsilon must be positive");
      o.inputs = {activation_input(n)};
      for (int i = 1; i <= 2; ++i) {
        const std::string name = need(n, i);
        const double fixed = i == 1 ? 1.0 : 0.0;  // a scale of ones, a bias of zeros
        bool skip = false;
        if (auto c = float_constants.find(name); c != float_constants.end()) {
          skip = c->second.shape().rank() == 1;
          for (int64_t k = 0; skip && k < c->second.numel(); ++k)
            skip = element_as_double(c->second, k) == fixed;
        }
        o.ints.push_back(skip ? 0 : 1);
        if (!skip) o.inputs.push_back(operand(n, i));
      }
    } else if (op == "Relu") {
      o.kind = Kind::relu;
      o.inputs = {activation_input(n)};
    } else if (op == "PRelu") {
      // nn.PReLU: its slope a weight (C, 1, ..., 1) per channel or a single one, or an Unsqueeze
      // of the weight in a training-mode export (checked against x's shape when recorded).
      o.kind = Kind::prelu;
      o.inputs = {activation_input(n), operand(n, 1)};
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
      unary_input(o, n);
    } else if (op == "Clip") {
      const double lo = scalar(n, 1, -INFINITY), hi = scalar(n, 2, INFINITY);
      if (lo == 0 && hi == 6) {
        o.kind = Kind::activation;
        o.activation = Activation::relu6;
      } else if (lo == 0 && std::isinf(hi) && hi > 0) {
        o.kind = Kind::relu;
      } else {
        if (std::isnan(lo) || std::isnan(hi) || lo > hi)
          r.fail(n, "bounds [" + std::to_string(lo) + ", " + std::to_string(hi) +
                        "]: expected numbers with min <= max");
        o.kind = Kind::clamp;
        o.clip_lo = lo, o.clip_hi = hi;
      }
      o.inputs = {activation_input(n)};
    } else if (op == "Dropout" || op == "Identity") {
      const std::string x = need(n, 0);
      if (op == "Identity" && graph->initializers.count(x) &&
          !graph->initializers.count(o.output)) {
        // torch.onnx.export (eval mode) keeps one of several parameters that hold equal values
        // (a fresh model's BatchNorm weights and running variances, all ones) and names the
        // others with an Identity of it; tied weights are one name read twice, never an
        // Identity. So the Identity's output is a parameter of its own, starting from those
        // values: read as one, a BatchNorm's running statistics would be written into its
        // weight while training, and the layers' weights would train as one.
        graph->initializers[o.output] = graph->initializers.at(x);
        defined.insert(o.output);
        continue;
      }
      if (graph->initializers.count(x) || int_constants.count(x) || float_constants.count(x) ||
          int_values.count(x)) {
        alias[o.output] = x;  // another name for a weight or constant
        continue;
      }
      o.kind = Kind::identity;
      o.inputs = {activation_input(n)};
      // In a training-mode export, Dropout(ratio, training_mode = true) is frugal's dropout
      // (its mask output must go unread); in eval mode, or opset 11's attribute form, it folds,
      // and so does a ratio of 0 (a ViT's, whose masks would keep everything).
      if (op == "Dropout" && n.input_size() > 2 && !n.input(2).empty()) {
        const auto mode = int_constants.find(need(n, 2));
        if (mode == int_constants.end() || mode->second.values.size() != 1)
          r.fail(n, "training_mode must be a constant boolean");
        if (mode->second.values[0] != 0) {
          o.alpha = scalar(n, 1, 0.5);
          if (!(o.alpha >= 0 && o.alpha < 1)) r.fail(n, "ratio must be in [0, 1)");
          if (o.alpha > 0) o.kind = Kind::dropout;
        }
      }
    } else if (op == "Pad") {
      const std::string mode = r.get_string(n, "mode", "constant");
      if (mode == "reflect")
        o.pad_mode = PadMode::reflect;
      else if (mode == "edge")
        o.pad_mode = PadMode::edge;
      else if (mode != "constant")
        r.fail(n, "mode " + mode + " is not imported (constant, reflect and edge are)");
      o.kind = Kind::pad;
      o.pad_value = scalar(n, 2, 0.0);
      if (n.input_size() > 3 && !n.input(3).empty()) r.fail(n, "the axes input is not imported");
      o.int_inputs = {int_input(n, 1)};
      o.inputs = {activation_input(n)};
    } else {
      r.fail(
          n,
          "op not imported yet; frugal imports Conv, ConvTranspose, BatchNormalization, Gemm, "
          "MatMul, "
          "MaxPool, AveragePool, GlobalAveragePool, ReduceMean, ReduceSum, ReduceMax, "
          "ReduceMin, ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSumExp, Flatten, Reshape, "
          "Transpose, "
          "Split, Slice, Pad, Concat, Softmax, LogSoftmax, Resize, Add, Sub, Mul, Div, Relu, "
          "LeakyRelu, PRelu, GlobalMaxPool, DepthToSpace, SpaceToDepth, LRN, Max, Min, "
          "Sigmoid, Tanh, HardSigmoid, HardSwish, Clip, Elu, Celu, Selu, Softplus, Softsign, Exp, "
          "Log, "
          "Neg, Reciprocal, Sign, Sin, Cos, Atan, Dropout, Identity, Constant, Erf, Sqrt, If (a "
          "condition computed "
          "from shapes), "
          "Abs, Einsum (batched products), "
          "Pow, LayerNormalization, InstanceNormalization, Expand, Tile, LSTM, GRU, RNN, Greater, "
          "Less, GreaterOrEqual, LessOrEqual, Equal, Where, ScatterND, and Not, And, Or and Xor "
          "of comparisons, and "
          "Unsqueeze, Squeeze, and Shape, Gather, Cast, Where, Not, Mod, Range, "
          "ScatterND, ReduceProd (torch.var's count) over shape values (and the float constants "
          "computed from them)");
    }
    const bool integer = o.kind == Kind::integer || (o.kind == Kind::choose && is_int(o.inputs[0]));
    if (o.outputs.empty()) o.outputs = {o.output};
    for (const std::string& out : o.outputs) (integer ? int_values : defined).insert(out);
    graph->nodes.push_back(std::move(o));
  }
  // Every output a node computes: not a graph input, not a weight.
  auto check_output = [&](std::string& out) {
    out = canon(out);
    FRUGAL_CHECK(out != graph->input &&
                     std::find(graph->extra_inputs.begin(), graph->extra_inputs.end(), out) ==
                         graph->extra_inputs.end(),
                 path, ": the output '", out, "' is an input of the graph");
    FRUGAL_CHECK(!graph->initializers.count(out), path, ": the output '", out,
                 "' is a weight; frugal imports outputs that nodes compute");
    FRUGAL_CHECK(defined.count(out), path, ": the output '", out, "' is produced by no node");
  };
  check_output(graph->output);
  for (std::string& out : graph->extra_outputs) check_output(out);
  try {
    fuse_onnx_graph(*graph);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  for (const auto& [name, t] : graph->initializers) graph->metas[name] = t.meta();
  if (!keep_weights) {
    for (const auto& [name, trainable] : graph->params) graph->initializers.erase(name);
    graph->weights_dropped = true;
  }
  model.graph = graph;
  // A batch-1 recording on a shapes-only store: shape errors now, and the class count.
  ParamStore shapes = ParamStore::shapes_only();
  Tape tape(shapes, model.dtype);
  Value x = tape.input("images", batched(1, model.input), model.dtype);
  const Value y = record_onnx_outputs(model, x)[0];  // checks the outputs' shapes agree
  FRUGAL_CHECK(y.shape().rank() >= 2 && y.shape().rank() <= 5, path, ": the output '",
               graph->output, "' is ", y.shape(),
               "; frugal imports classifiers whose output is (N, classes) and models that label "
               "each position, (N, classes, L), (N, classes, H, W) or (N, classes, D, H, W)");
  FRUGAL_CHECK(y.shape()[0] == 1, path, ": the output '", graph->output, "' is ", y.shape(),
               " for a batch of 1: its first axis must be the batch's (reshapes and transposes "
               "may move the batch axis on the way, but it must come back first)");
  model.classes = y.shape()[1];
  // A label per position: (L), (H, W) or (D, H, W), as PyTorch's CrossEntropyLoss takes them.
  if (y.shape().rank() > 2)
    model.label_shape =
        Shape(std::vector<int64_t>(y.shape().dims().begin() + 2, y.shape().dims().end()));
  return model;
}

}  // namespace frugal
