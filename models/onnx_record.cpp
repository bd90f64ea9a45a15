// ONNX import, recording: a checked graph (models/onnx_graph.h) onto a tape, the file's weights
// into the store, and the registry entry per file.
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/avgpool2d.h"
#include "layers/batchnorm2d.h"
#include "layers/binary.h"
#include "layers/concat.h"
#include "layers/conv2d.h"
#include "layers/conv_transpose2d.h"
#include "layers/dropout.h"
#include "layers/flatten.h"
#include "layers/leaky_relu.h"
#include "layers/linear.h"
#include "layers/maxpool2d.h"
#include "layers/relu.h"
#include "layers/upsample2d.h"
#include "models/onnx.h"
#include "models/onnx_graph.h"

namespace frugal {

using Kind = OnnxKind;

Value record_onnx(const OnnxModel& model, Value images) {
  const OnnxGraph& g = *model.graph;
  Tape& tape = images.tape();
  std::map<std::string, Value> env{{g.input, images}};
  auto value = [&](const std::string& name) -> Value {
    if (auto it = env.find(name); it != env.end()) return it->second;
    auto p = g.params.find(name);
    FRUGAL_CHECK(p != g.params.end(), model.path, ": '", name,
                 "' is neither a node's output nor a weight");
    Value v = tape.param(name, g.metas.at(name).shape, Init::zeros(), p->second);
    env[name] = v;
    return v;
  };
  for (const OnnxNode& n : g.nodes) {
    std::vector<Value> in;
    for (const std::string& s : n.inputs) in.push_back(value(s));
    const auto where = std::source_location::current();
    Value y;
    try {
      switch (n.kind) {
        case Kind::conv: {
          const Shape& w = in[1].shape();
          FRUGAL_CHECK(
              w.rank() != 4 || n.kernel_h == 0 || (w[2] == n.kernel_h && w[3] == n.kernel_w),
              "kernel_shape ", n.kernel_h, "x", n.kernel_w, " but the weight is ", w);
          y = tape.record(std::make_unique<Conv2dOp>(n.conv), in, where)[0];
          break;
        }
        case Kind::conv_transpose: {
          const Shape& w = in[1].shape();
          FRUGAL_CHECK(
              w.rank() != 4 || n.kernel_h == 0 || (w[2] == n.kernel_h && w[3] == n.kernel_w),
              "kernel_shape ", n.kernel_h, "x", n.kernel_w, " but the weight is ", w);
          y = tape.record(
              std::make_unique<ConvTranspose2dOp>(n.conv, n.output_padding_h, n.output_padding_w),
              in, where)[0];
          break;
        }
        case Kind::upsample_nearest: {
          int64_t sh = n.scale_h, sw = n.scale_w;
          if (sh == 0) {
            const Shape& x = in[0].shape();
            FRUGAL_CHECK(x.rank() == 4 && n.size_h % x[2] == 0 && n.size_w % x[3] == 0, "sizes ",
                         n.size_h, "x", n.size_w, " are not whole multiples of the input ", x);
            sh = n.size_h / x[2], sw = n.size_w / x[3];
          }
          y = tape.record(std::make_unique<UpsampleNearestOp>(sh, sw), in, where)[0];
          break;
        }
        case Kind::batch_norm:
          y = tape.record(
              std::make_unique<BatchNormOp>(BatchNormOptions{.eps = n.eps, .momentum = n.momentum}),
              in, where)[0];
          break;
        case Kind::gemm:
          y = tape.record(std::make_unique<LinearOp>(), in, where)[0];
          break;
        case Kind::max_pool:
          y = max_pool2d(in[0],
                         {.kernel = n.kernel, .stride = n.stride, .pad = n.pad, .ceil = n.ceil});
          break;
        case Kind::avg_pool:
          y = avg_pool2d(in[0], {.kernel = n.kernel,
                                 .stride = n.stride,
                                 .pad = n.pad,
                                 .ceil = n.ceil,
                                 .count_include_pad = n.count_include_pad});
          break;
        case Kind::global_avg_pool: {
          const Shape& s = in[0].shape();
          FRUGAL_CHECK(s.rank() == 4 && s[2] == s[3], "global average pooling of ", s,
                       " (square feature maps only)");
          y = avg_pool2d(in[0], {.kernel = s[2]});
          if (n.squeeze) y = flatten(y);
          break;
        }
        case Kind::flatten:
          y = in[0].shape().rank() == 2 ? in[0] : flatten(in[0]);
          FRUGAL_CHECK(n.flatten_features < 0 || y.shape()[1] == n.flatten_features, "reshape of ",
                       in[0].shape(), " to (N, ", n.flatten_features, ")");
          break;
        case Kind::binary:
          // Two values of one shape: the residual add, which may take either operand's bytes.
          y = n.binary == BinaryKind::add && in[0].shape() == in[1].shape()
                  ? add(in[0], in[1])
                  : binary(n.binary, in[0], in[1]);
          break;
        case Kind::concat:
          y = concat(in);
          break;
        case Kind::relu:
          y = relu(in[0]);
          break;
        case Kind::leaky_relu:
          y = leaky_relu(in[0], n.alpha);
          break;
        case Kind::activation:
          y = activation(in[0], n.activation);
          break;
        case Kind::dropout:
          y = dropout(in[0], n.alpha);
          break;
        case Kind::identity:
          y = in[0];
          break;
      }
    } catch (const Error& e) {
      throw Error(model.path + ": node '" + n.name + "' (" + n.op_type + "): " + e.what());
    }
    env[n.output] = y;
  }
  return value(g.output);
}

void load_onnx_weights(ParamStore& store, const OnnxModel& model) {
  if (!store.materialized()) return;
  if (model.graph->weights_dropped) return load_onnx_weights(store, load_onnx(model.path));
  for (const auto& [name, trainable] : model.graph->params) {
    Parameter* p = store.find(name);
    FRUGAL_CHECK(p != nullptr, model.path, ": weight '", name,
                 "' is not in the store (record the model first)");
    const Tensor& t = model.graph->initializers.at(name);
    FRUGAL_CHECK(p->value.meta() == t.meta(), model.path, ": weight '", name, "' is ", t.shape(),
                 ", the store's ", p->value.shape());
    store.backend().copy_to_device(t, p->value);
  }
}

namespace {
struct Cached {
  std::shared_ptr<const OnnxModel> model;
  ModelSpec spec;
};
// One load per file for the process: specs are handed out by reference.
Cached& cached(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Cached>> by_path;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Cached>& c = by_path[path];
  if (!c) {
    auto model = std::make_shared<const OnnxModel>(load_onnx(path, false));
    c = std::make_unique<Cached>(
        Cached{model, ModelSpec{.name = path,
                                .description = "ONNX model " + path,
                                .input = model->input,
                                .classes = model->classes,
                                .log_softmax_output = false,
                                .build = [model](Value images, const ModelConfig&) {
                                  return record_onnx(*model, images);
                                }}});
  }
  return *c;
}
}  // namespace

const ModelSpec& onnx_model_spec(const std::string& path) {
  return cached(path).spec;
}

const OnnxModel& onnx_model(const std::string& path) {
  return *cached(path).model;
}

}  // namespace frugal
