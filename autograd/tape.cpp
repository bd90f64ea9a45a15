// Recording: shape inference at record time, gradient requirements, scopes.
#include "autograd/tape.h"

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
