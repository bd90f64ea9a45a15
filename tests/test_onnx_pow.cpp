// ONNX's Pow by a tensor: generalized-mean pooling's learned exponent (GeM: Pow by a weight, and
// by 1 / p computed from it) and torch.pow of two activations (gem_net). The exponent is a
// trainable weight with a gradient of its own, as in PyTorch: the importer once read a weight
// exponent as a fixed constant, so training left p where the file had it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "check/gradcheck.h"
#include "layers/softmax_cross_entropy.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"
#include "run/executor.h"
#include "tests/onnx_support.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

OnnxModel gem_net() {
  return load_onnx((onnx_data() / "gem_net.onnx").string());
}

}  // namespace

TEST_CASE("onnx: GeM's learned exponent is a trainable weight") {
  const OnnxModel m = gem_net();
  REQUIRE(m.graph->params.count("p") == 1);
  CHECK(m.graph->params.at("p"));
  int pows = 0, from_weights = 0;
  for (const OnnxNode& n : m.graph->nodes) {
    pows += n.kind == OnnxKind::binary && n.binary == BinaryKind::pow;
    from_weights += n.kind == OnnxKind::activation && n.activation == Activation::reciprocal;
  }
  CHECK(pows == 3);          // x^p, (mean)^(1/p), and the two activations'
  CHECK(from_weights == 1);  // 1 / p, computed from the weight

  // One SGD step moves p (from the file's 3) by lr times its gradient, as PyTorch's would.
  ParamStore store(1);
  Tape tape(store);
  const Shape shape = batched(4, m.input);
  Value x = tape.input("x", shape, DType::f32);
  Value labels = tape.input("labels", {4}, DType::i32);
  Value loss = softmax_cross_entropy(record_onnx(m, x), labels);
  load_onnx_weights(store, m);
  Executor ex(tape, cpu_backend(),
              {.keep = {loss}, .keep_param_grads = true, .optimizer = OptimizerConfig{.lr = 0.5}});
  ex.set_input(x, random_tensor(shape, 30, -1, 1, DType::f32));
  ex.set_input(labels, random_labels(4, m.classes, 31));
  ex.forward();
  ex.backward(loss);
  Parameter* p = store.find("p");
  REQUIRE(p != nullptr);
  CHECK(p->trainable);
  CHECK(std::abs(p->value.data<float>()[0] - 3.0f) > 1e-6f);
}

// In float64 against finite differences: the input's gradient and every weight's, p's included
// (p kept at the file's 3, the others drawn in [-1, 1], so the pooled powers stay moderate).
TEST_CASE("onnx: gradcheck of GeM's learned exponent and a pow of two activations") {
  const OnnxModel m = gem_net();
  check_gradients(
      [&m](std::span<const Value> in) {
        Value y = record_onnx(m, in[0]);
        load_onnx_weights(y.tape().params(), m);
        uint64_t seed = 210;
        for (const auto& [name, trainable] : m.graph->params)
          if (trainable && name != "p") randomize_param(y.tape(), name, seed++, -1, 1);
        return std::vector<Value>{y};
      },
      {random_tensor({2, 3, 6, 5}, 57, -2, 2)}, {.tolerance = 1e-6});
}
