// Rewrites of a checked ONNX graph into frugal's fewer, larger ops (models/onnx_graph.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "models/onnx_graph.h"

namespace frugal {

// x * sigmoid(x), as PyTorch exports SiLU (and EfficientNet's Swish), is one SiLU op: its
// backward reads x alone, where the pair would keep x, sigmoid(x) and their product. Only where
// nothing else reads the sigmoid. GELU likewise, from its five nodes (nine in its tanh form);
// LayerNorm from its nine nodes below opset 17; a channel
// Concat read by BatchNormalization alone, one concat_batch_norm. ReLU then MaxPool become
// MaxPool then ReLU.
void fuse_onnx_graph(OnnxGraph& g) {
  std::map<std::string, int> uses{{g.output, 1}};
  for (const std::string& out : g.extra_outputs) ++uses[out];
  std::map<std::string, const OnnxNode*> producer;
  for (const OnnxNode& n : g.nodes) {
    for (const std::string& in : n.inputs) ++uses[in];
    // No pattern takes in a node of an If's branch (recorded only where its branch is taken).
    if (n.guards.empty()) producer[n.output] = &n;
  }
  std::set<std::string> dead;
  for (OnnxNode& n : g.nodes) {
    if (n.kind != OnnxKind::binary || n.binary != BinaryKind::mul || n.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string &s = n.inputs[static_cast<size_t>(side)],
                        &x = n.inputs[static_cast<size_t>(1 - side)];
      auto p = producer.find(s);
      if (p == producer.end() || p->second->kind != OnnxKind::activation ||
          p->second->activation != Activation::sigmoid || p->second->inputs[0] != x || uses[s] != 1)
        continue;
      dead.insert(s);
      n.kind = OnnxKind::activation;
      n.activation = Activation::silu;
      n.inputs = {x};
      break;
    }
  }
  // GELU as torch.onnx.export writes it: d = x / sqrt(2); e = erf(d); a = e + 1; m = x * a;
  // y = m * 0.5 (the operands of Add and Mul in either order), each step read once.
  auto constant = [&](const std::string& name, double value) {
    auto t = g.initializers.find(name);
    auto p = g.params.find(name);
    return t != g.initializers.end() && p != g.params.end() && !p->second &&
           t->second.numel() == 1 && std::abs(element_as_double(t->second, 0) - value) <= 1e-6;
  };
  // The node that made `name`, where one node alone reads `name` and the maker is of `kind`
  // (and, for a binary node, of `b`).
  auto made_by = [&](const std::string& name, OnnxKind kind,
                     BinaryKind b = BinaryKind::add) -> const OnnxNode* {
    auto p = producer.find(name);
    if (p == producer.end() || p->second->kind != kind || uses[name] != 1) return nullptr;
    if (kind == OnnxKind::binary && p->second->binary != b) return nullptr;
    return p->second;
  };
  // Of a binary node's two inputs, the one that is not the constant `value` ("" if neither).
  auto other = [&](const OnnxNode& n, double value) -> std::string {
    if (n.inputs.size() != 2) return "";
    if (constant(n.inputs[1], value)) return n.inputs[0];
    if (constant(n.inputs[0], value)) return n.inputs[1];
    return "";
  };
  for (OnnxNode& y : g.nodes) {
    if (y.kind != OnnxKind::binary || y.binary != BinaryKind::mul) continue;
    const OnnxNode* m = made_by(other(y, 0.5), OnnxKind::binary, BinaryKind::mul);
    if (m == nullptr || m->inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& x = m->inputs[static_cast<size_t>(side)];
      const OnnxNode* a =
          made_by(m->inputs[static_cast<size_t>(1 - side)], OnnxKind::binary, BinaryKind::add);
      const OnnxNode* e = a ? made_by(other(*a, 1.0), OnnxKind::activation) : nullptr;
      if (e == nullptr || e->activation != Activation::erf) continue;
      const OnnxNode* d = made_by(e->inputs[0], OnnxKind::binary, BinaryKind::div);
      if (d == nullptr || d->inputs.size() != 2 || d->inputs[0] != x ||
          !constant(d->inputs[1], std::sqrt(2.0)))
        continue;
      for (const OnnxNode* n : {m, a, e, d}) dead.insert(n->output);
      y.kind = OnnxKind::activation;
      y.activation = Activation::gelu;
      y.inputs = {x};
      break;
    }
  }
  // GELU's tanh form as torch.onnx.export writes gelu(x, approximate="tanh"): c = x * (x * x);
  // i = 0.7978845608 * (x + 0.044715 * c); h = 1 + tanh(i); y = 0.5 * (x * h), each step read
  // once, the operands of Add and Mul in either order.
  auto with = [&](const OnnxNode* n, const std::string& known) -> std::string {
    if (n == nullptr || n->inputs.size() != 2) return "";
    if (n->inputs[0] == known) return n->inputs[1];
    if (n->inputs[1] == known) return n->inputs[0];
    return "";
  };
  auto mul = [&](const std::string& name) {
    return made_by(name, OnnxKind::binary, BinaryKind::mul);
  };
  auto add = [&](const std::string& name) {
    return made_by(name, OnnxKind::binary, BinaryKind::add);
  };
  for (OnnxNode& y : g.nodes) {
    if (y.kind != OnnxKind::binary || y.binary != BinaryKind::mul) continue;
    const OnnxNode* m = mul(other(y, 0.5));
    if (m == nullptr || m->inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& x = m->inputs[static_cast<size_t>(side)];
      const OnnxNode* h = add(m->inputs[static_cast<size_t>(1 - side)]);
      const OnnxNode* t = h ? made_by(other(*h, 1.0), OnnxKind::activation) : nullptr;
      if (t == nullptr || t->activation != Activation::tanh) continue;
      const OnnxNode* i = mul(t->inputs[0]);
      const OnnxNode* s = i ? add(other(*i, 0.79788456080286535588)) : nullptr;
      const OnnxNode* k = mul(with(s, x));
      const OnnxNode* c = k ? mul(other(*k, 0.044715)) : nullptr;
      const OnnxNode* q = mul(with(c, x));
      if (q == nullptr || q->inputs[0] != x || q->inputs[1] != x) continue;
      for (const OnnxNode* n : {m, h, t, i, s, k, c, q}) dead.insert(n->output);
      y.kind = OnnxKind::activation;
      y.activation = Activation::gelu_tanh;
      y.inputs = {x};
      break;
    }
  }
  // LayerNorm as torch.onnx.export writes it below opset 17: m = mean(x); d = x - m;
  // v = mean(d * d); q = d / sqrt(v + eps); y = q * gamma + beta, both means over the same
  // trailing axes {-k, ..., -1} with keepdims, gamma and beta weights of rank k, each step read
  // once (d by the square and the division alone). One layer_norm op: backward keeps x and two
  // numbers per row where the nine nodes kept d, q and more.
  auto weight_of_rank = [&](const std::string& name, size_t k) {
    auto t = g.initializers.find(name);
    return t != g.initializers.end() && g.params.count(name) &&
           static_cast<size_t>(t->second.shape().rank()) == k;
  };
  auto trailing = [](const OnnxNode* n) {
    if (n == nullptr || n->squeeze || n->ints.empty()) return false;
    std::vector<int64_t> a = n->ints;
    std::sort(a.begin(), a.end());
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != static_cast<int64_t>(i) - static_cast<int64_t>(a.size())) return false;
    return true;
  };
  for (OnnxNode& y : g.nodes) {
    if (y.kind != OnnxKind::binary || y.binary != BinaryKind::add || y.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const std::string& beta = y.inputs[static_cast<size_t>(1 - side)];
      const OnnxNode* scaled = mul(y.inputs[static_cast<size_t>(side)]);
      if (scaled == nullptr || scaled->inputs.size() != 2) continue;
      const bool gamma_second = g.initializers.count(scaled->inputs[1]) > 0;
      const std::string& gamma = scaled->inputs[gamma_second ? 1 : 0];
      const OnnxNode* q =
          made_by(scaled->inputs[gamma_second ? 0 : 1], OnnxKind::binary, BinaryKind::div);
      if (q == nullptr || q->inputs.size() != 2) continue;
      const std::string& d_name = q->inputs[0];
      const OnnxNode* root = made_by(q->inputs[1], OnnxKind::activation);
      if (root == nullptr || root->activation != Activation::sqrt) continue;
      const OnnxNode* a = add(root->inputs[0]);
      if (a == nullptr || a->inputs.size() != 2) continue;
      const bool eps_second = g.initializers.count(a->inputs[1]) > 0;
      const std::string& eps_name = a->inputs[eps_second ? 1 : 0];
      const OnnxNode* v = made_by(a->inputs[eps_second ? 0 : 1], OnnxKind::reduce_mean);
      const OnnxNode* sq = v ? mul(v->inputs[0]) : nullptr;
      auto dp = producer.find(d_name);
      if (!trailing(v) || sq == nullptr || sq->inputs.size() != 2 || sq->inputs[0] != d_name ||
          sq->inputs[1] != d_name || dp == producer.end() || uses[d_name] != 3)
        continue;
      const OnnxNode* d = dp->second;
      if (d->kind != OnnxKind::binary || d->binary != BinaryKind::sub || d->inputs.size() != 2)
        continue;
      const std::string& x = d->inputs[0];
      const OnnxNode* m = made_by(d->inputs[1], OnnxKind::reduce_mean);
      auto e = g.initializers.find(eps_name);
      auto ep = g.params.find(eps_name);
      if (!trailing(m) || m->inputs[0] != x || m->ints != v->ints || e == g.initializers.end() ||
          ep == g.params.end() || ep->second || e->second.numel() != 1 ||
          !(element_as_double(e->second, 0) > 0) || !weight_of_rank(gamma, v->ints.size()) ||
          !weight_of_rank(beta, v->ints.size()))
        continue;
      y.eps = element_as_double(e->second, 0);
      for (const OnnxNode* n : {scaled, q, root, a, v, sq, d, m}) dead.insert(n->output);
      y.kind = OnnxKind::layer_norm;
      y.axis = -static_cast<int64_t>(v->ints.size());
      y.inputs = {x, gamma, beta};
      break;
    }
  }
  // GroupNorm as torch.onnx.export writes nn.GroupNorm: r = Reshape(x, (N, G, -1)); i =
  // InstanceNormalization(r) with a fixed scale of ones and bias of zeros; b = Reshape(i, x's
  // shape); m = b * weight; y = m + bias (either operand order), each step read once. The Add
  // names the four nodes before it, which wait for it (record_onnx checks the shapes: a
  // grouping of x's channels, per-channel weight and bias). One group_norm op: backward keeps x
  // and two numbers per group where the five nodes kept the normalized map for the weight's
  // gradient too.
  std::set<std::string> waiting;
  for (OnnxNode& y : g.nodes) {
    if (y.kind != OnnxKind::binary || y.binary != BinaryKind::add || y.inputs.size() != 2) continue;
    for (int side = 0; side < 2 && y.group_norm_chain.empty(); ++side) {
      const OnnxNode* m = mul(y.inputs[static_cast<size_t>(side)]);
      if (m == nullptr || m->inputs.size() != 2) continue;
      for (int mside = 0; mside < 2; ++mside) {
        const OnnxNode* back = made_by(m->inputs[static_cast<size_t>(mside)], OnnxKind::reshape);
        const OnnxNode* norm = back ? made_by(back->inputs[0], OnnxKind::instance_norm) : nullptr;
        const OnnxNode* r = norm ? made_by(norm->inputs[0], OnnxKind::reshape) : nullptr;
        if (r == nullptr || norm->ints != std::vector<int64_t>{0, 0} || norm->inputs.size() != 1)
          continue;
        y.group_norm_chain = {r->output, norm->output, back->output, m->output};
        waiting.insert(y.group_norm_chain.begin(), y.group_norm_chain.end());
        break;
      }
    }
  }
  for (OnnxNode& n : g.nodes) n.deferred = waiting.count(n.output) > 0;
  // Concat along channels read by BatchNormalization alone (every DenseNet layer): one op, so
  // backward reads the pieces instead of a kept concatenation (layers/concat_batch_norm.h).
  for (OnnxNode& n : g.nodes) {
    if (n.kind != OnnxKind::batch_norm || n.concat_pieces > 0) continue;
    const OnnxNode* c = made_by(n.inputs[0], OnnxKind::concat);
    if (c == nullptr || c->axis != 1 || c->inputs.size() < 2) continue;
    dead.insert(c->output);
    std::vector<std::string> in = c->inputs;
    in.insert(in.end(), n.inputs.begin() + 1, n.inputs.end());
    n.concat_pieces = static_cast<int>(c->inputs.size());
    n.inputs = std::move(in);
  }
  // ReLU read by MaxPool alone (every ImageNet stem) runs after the pool instead: max and ReLU
  // commute exactly (ReLU is monotone; NaN stays where it was; both zeros become +0), the pool
  // keeps its argmax as before, and ReLU's backward reads the pooled output, which the next
  // layer keeps anyway, instead of a mask of the full-size input. Gradients too are the same
  // bits: a window whose maximum is not positive passes nothing on either way.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    OnnxNode& m = g.nodes[i];
    if (m.kind != OnnxKind::max_pool || m.inputs.size() != 1) continue;
    auto p = producer.find(m.inputs[0]);
    if (p == producer.end() || p->second->kind != OnnxKind::relu || uses[m.inputs[0]] != 1 ||
        p->second->guards != m.guards)
      continue;
    const auto r = static_cast<size_t>(p->second - g.nodes.data());
    OnnxNode& relu = g.nodes[r];
    const std::string x = relu.inputs[0], between = relu.output, y = m.output;
    m.inputs = {x};
    m.output = between;
    relu.inputs = {between};
    relu.output = y;
    std::swap(g.nodes[r], g.nodes[i]);  // the pool where the ReLU was, the ReLU after it
    producer[between] = &g.nodes[r];
    producer[y] = &g.nodes[i];
  }
  std::erase_if(g.nodes, [&](const OnnxNode& n) { return dead.count(n.output) > 0; });
  // An Expand read only by broadcasting arithmetic (F.normalize's norm expanded to x's shape,
  // then x / norm): the arithmetic broadcasts the unexpanded value itself, keeping no expanded
  // copy for its backward (PyTorch's expand is a view).
  std::map<std::string, bool> binary_readers;
  for (const OnnxNode& n : g.nodes)
    for (const std::string& in : n.inputs) {
      auto [it, fresh] = binary_readers.try_emplace(in, true);
      it->second = it->second && n.kind == OnnxKind::binary;
    }
  for (OnnxNode& n : g.nodes)
    if (n.kind == OnnxKind::expand && n.output != g.output &&
        std::find(g.extra_outputs.begin(), g.extra_outputs.end(), n.output) ==
            g.extra_outputs.end()) {
      auto it = binary_readers.find(n.output);
      n.broadcast_only = it != binary_readers.end() && it->second;
    }
  // Constants that only the fused patterns read are no weights of the model.
  std::set<std::string> read{g.output};
  read.insert(g.extra_outputs.begin(), g.extra_outputs.end());
  for (const OnnxNode& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  std::erase_if(g.params, [&](const auto& p) { return !p.second && !read.count(p.first); });
}

}  // namespace frugal
