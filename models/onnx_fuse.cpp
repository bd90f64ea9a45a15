// Rewrites of a checked ONNX graph into frugal's fewer, larger ops (models/onnx_graph.h).
#include <map>
#include <set>

#include "models/onnx_graph.h"

namespace frugal {

// x * sigmoid(x), as PyTorch exports SiLU (and EfficientNet's Swish), is one SiLU op: its
// backward reads x alone, where the pair would keep x, sigmoid(x) and their product. Only where
// nothing else reads the sigmoid.
void fuse_onnx_graph(OnnxGraph& g) {
  std::map<std::string, int> uses{{g.output, 1}};
  std::map<std::string, const OnnxNode*> producer;
  for (const OnnxNode& n : g.nodes) {
    for (const std::string& in : n.inputs) ++uses[in];
    producer[n.output] = &n;
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
  std::erase_if(g.nodes, [&](const OnnxNode& n) { return dead.count(n.output) > 0; });
}

}  // namespace frugal
