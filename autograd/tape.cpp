// Recording: shape inference at record time, gradient requirements, scopes.
#include "autograd/tape.h"

#include <algorithm>

#include "core/error.h"

namespace frugal {

const TensorMeta& Value::meta() const {
  return tape_->value(id_).meta;
}

Value Tape::input(const std::string& name, Shape shape, DType dtype, bool requires_grad) {
  ValueNode v;
  v.kind = ValueKind::input;
  v.meta = {std::move(shape), dtype};
  v.name = name;
  v.requires_grad = requires_grad;
  values_.push_back(std::move(v));
  return Value(this, static_cast<int>(values_.size()) - 1);
}

Value Tape::param(const std::string& name, Shape shape, Init init, bool trainable) {
  std::string full = scope_.empty() ? name : scope_ + "/" + name;
  return param(params_->get_or_create(full, {std::move(shape), dtype_}, init, trainable));
}

Value Tape::param(Parameter& p) {
  // One value per parameter: every use is a consumer of it, so its gradient is one buffer
  // summed over the uses in a fixed order and it gets one optimizer update per step.
  if (auto it = param_values_.find(&p); it != param_values_.end()) return Value(this, it->second);
  param_values_.emplace(&p, static_cast<int>(values_.size()));
  ValueNode v;
  v.kind = ValueKind::param;
  v.meta = p.meta;
  v.name = p.name;
  v.requires_grad = p.trainable;
  v.param = &p;
  values_.push_back(std::move(v));
  return Value(this, static_cast<int>(values_.size()) - 1);
}

std::vector<bool> Tape::input_grads(const OpNode& node) const {
  std::vector<bool> grads;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    grads.push_back(node.op->differentiable(static_cast<int>(i)) &&
                    value(node.inputs[i]).requires_grad);
  return grads;
}

namespace {

// Whether some consumer of value v other than op `except` reads v in its training backward, as
// its roles say (an input read only for gradients nobody wants is not read: input_grads).
bool read_in_backward(const Tape& tape, int v, int except, const Backend& backend) {
  for (int c : tape.value(v).consumers) {
    if (c == except) continue;
    const OpNode& reader = tape.ops()[static_cast<size_t>(c)];
    const std::vector<bool> grads = tape.input_grads(reader);
    const Roles r = reader.op->roles(Mode::training, backend);
    for (size_t slot = 0; slot < reader.inputs.size(); ++slot)
      if (reader.inputs[slot] == v && backward_reads_input(r, static_cast<int>(slot), grads))
        return true;
  }
  return false;
}

// Whether value v's producer reads it in backward with no compact alternative (a sigmoid's
// output; a ReLU keeps a mask where nothing else reads its output).
bool producer_keeps(const Tape& tape, int v, const Backend& backend) {
  const ValueNode& value = tape.value(v);
  const OpNode& producer = tape.ops()[static_cast<size_t>(value.producer)];
  const std::vector<int> reads = producer.op->roles(Mode::training, backend).backward_reads_outputs;
  return !producer.op->has_compact_encoding() &&
         std::find(reads.begin(), reads.end(), value.output_index) != reads.end();
}

}  // namespace

bool Tape::output_kept_input_dies(int k, const Backend& backend) const {
  const OpNode& node = ops_.at(static_cast<size_t>(k));
  const int x = node.inputs[0], y = node.outputs[0];
  const std::vector<bool> grads = input_grads(node);  // no gradient wanted: no backward to change
  return std::find(grads.begin(), grads.end(), true) != grads.end() &&
         value(x).kind == ValueKind::op_output && !producer_keeps(*this, x, backend) &&
         !read_in_backward(*this, x, k, backend) && read_in_backward(*this, y, k, backend);
}

std::vector<Value> Tape::record(std::unique_ptr<Op> op, std::vector<Value> inputs,
                                std::source_location where) {
  const std::string at = origin_.empty() ? source_line(where) : origin_;
  std::vector<TensorMeta> metas;
  for (const Value& v : inputs) {
    FRUGAL_CHECK(v.valid() && &v.tape() == this, at, ": ", op->name(),
                 ": an input belongs to another tape or is empty");
    metas.push_back(v.meta());
  }
  std::vector<TensorMeta> outs;
  try {
    outs = op->infer(metas);
  } catch (const Error& e) {
    throw Error(at + ": " + e.what());
  }
  const int index = static_cast<int>(ops_.size());
  // Randomness follows the op's name within its scope, not its position on the tape, so a
  // sub-graph recorded on a tape of its own (reversible halves) draws what it would inline.
  std::string key = "#";  // (not "#" + name(): GCC 12 warns falsely on that form)
  key += op->name();
  op->stream = hash_name(scope_ + "|" + unique_name(key));
  OpNode node;
  node.where = at;
  node.scope = scope_;
  bool grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].id());
    values_[static_cast<size_t>(inputs[i].id())].consumers.push_back(index);
    if (op->differentiable(static_cast<int>(i)) && values_[inputs[i].id()].requires_grad)
      grad = true;
  }
  std::vector<Value> result;
  for (size_t j = 0; j < outs.size(); ++j) {
    ValueNode v;
    v.kind = ValueKind::op_output;
    v.meta = outs[j];
    v.producer = index;
    v.output_index = static_cast<int>(j);
    v.requires_grad = grad && (outs[j].dtype == DType::f32 || outs[j].dtype == DType::f64);
    v.name = op->name();
    values_.push_back(std::move(v));
    node.outputs.push_back(static_cast<int>(values_.size()) - 1);
    result.emplace_back(this, static_cast<int>(values_.size()) - 1);
  }
  node.op = std::move(op);
  ops_.push_back(std::move(node));
  return result;
}

Tape::Scope::Scope(Tape& t, const std::string& name) : t_(t), previous_(t.scope_.size()) {
  t_.scope_ += t_.scope_.empty() ? name : "/" + name;
}
Tape::Scope::~Scope() {
  t_.scope_.resize(previous_);
}

std::string Tape::unique_name(const std::string& kind) {
  std::string key = scope_ + "|" + kind;
  for (auto& [k, n] : counters_)
    if (k == key) return kind + std::to_string(n++);
  counters_.emplace_back(key, 1);
  return kind + "0";
}

}  // namespace frugal
