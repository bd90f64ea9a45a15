// Editing ONNX models in the tests (tests/test_onnx*.cpp): a tiny model of one Conv and a Gemm
// head to edit into error cases, the loader's message for a model, an attribute of a node to
// set, an empty model to build others from, a chain of nodes over x, and nodes and int64
// constants added to a graph. Header-only: built only where ONNX is.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "check/gradcheck.h"
#include "models/onnx.h"
#include "tests/temp_dir.h"

namespace frugal::testing {

// A model of no nodes yet at `opset`, its input x float (N, dims...), N dynamic.
inline onnx::ModelProto empty_model(int opset, const std::vector<int64_t>& dims) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* version = m.add_opset_import();
  version->set_domain("");
  version->set_version(opset);
  auto* in = m.mutable_graph()->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  return m;
}

inline onnx::ModelProto tiny() {
  onnx::ModelProto m = empty_model(13, {4, 5, 5});
  onnx::GraphProto* g = m.mutable_graph();
  auto weight = [&](const std::string& name, std::vector<int64_t> dims) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.01f * static_cast<float>(i % 7));
  };
  weight("w", {2, 4, 3, 3});
  weight("fc.w", {3, 18});
  onnx::NodeProto* conv = g->add_node();
  conv->set_name("conv");
  conv->set_op_type("Conv");
  conv->add_input("x");
  conv->add_input("w");
  conv->add_output("c");
  auto* k = conv->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(3);
  k->add_ints(3);
  onnx::NodeProto* flat = g->add_node();
  flat->set_name("flat");
  flat->set_op_type("Flatten");
  flat->add_input("c");
  flat->add_output("f");
  onnx::NodeProto* fc = g->add_node();
  fc->set_name("fc");
  fc->set_op_type("Gemm");
  fc->add_input("f");
  fc->add_input("fc.w");
  fc->add_output("y");
  auto* tb = fc->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  g->add_output()->set_name("y");
  return m;
}

inline std::string error_for(const onnx::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  return error_message([&] { load_onnx_bytes("m.onnx", bytes.data(), bytes.size()); });
}

inline onnx::AttributeProto* attribute(onnx::NodeProto* n, const std::string& name) {
  for (auto& a : *n->mutable_attribute())
    if (a.name() == name) return &a;
  auto* a = n->add_attribute();
  a->set_name(name);
  return a;
}

using Attrs = std::function<void(onnx::NodeProto*)>;
inline const Attrs kNone = [](onnx::NodeProto*) {};

// x (N, dims...) through a chain of nodes (op types and their attributes), named node0, node1,
// ..., the last one's output y.
inline onnx::ModelProto chain(const std::vector<int64_t>& dims,
                              const std::vector<std::pair<std::string, Attrs>>& ops,
                              int opset = 13) {
  onnx::ModelProto m = empty_model(opset, dims);
  onnx::GraphProto* g = m.mutable_graph();
  std::string from = "x";
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string name = "node" + std::to_string(i);
    onnx::NodeProto* n = g->add_node();
    n->set_name(name);
    n->set_op_type(ops[i].first);
    *n->add_input() = from;
    from = i + 1 == ops.size() ? std::string("y") : name;
    *n->add_output() = from;
    ops[i].second(n);
  }
  g->add_output()->set_name(from);
  return m;
}

// One node of `op` over x, then Flatten: its output as (N, features).
inline onnx::ModelProto one_node(const std::string& op, const std::vector<int64_t>& dims,
                                 const Attrs& attrs) {
  return chain(dims, {{op, attrs}, {"Flatten", kNone}});
}

inline OnnxModel load_model(const onnx::ModelProto& m) {
  const std::string bytes = m.SerializeAsString();
  return load_onnx_bytes("m.onnx", bytes.data(), bytes.size());
}

// A node `op` named `name` reading `in`, writing `out`.
inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 const std::string& name, const std::vector<std::string>& in,
                                 const std::string& out) {
  onnx::NodeProto* n = g->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const std::string& i : in) *n->add_input() = i;
  *n->add_output() = out;
  return n;
}

// A Constant node of int64 values (a scalar where `scalar`).
inline void add_ints(onnx::GraphProto* g, const std::string& out,
                     const std::vector<int64_t>& values, bool scalar = false) {
  onnx::NodeProto* n = add_node(g, "Constant", out, {}, out);
  auto* a = attribute(n, "value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

// Two samples of distinct values.
inline std::vector<float> ramp(int64_t count) {
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 7.0f;
  return x;
}

}  // namespace frugal::testing
