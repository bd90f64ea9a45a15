// Tape: the append-only record of a model's forward pass. Values are handles to its entries;
// ops are recorded in order, so the tape is already topologically sorted and backward is
// reverse iteration. Shapes are inferred when an op is recorded, so a shape error names the
// model line that caused it.
#pragma once

#include <map>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "autograd/op.h"
#include "autograd/params.h"

namespace frugal {

class Tape;

// A small handle to one value on a tape.
class Value {
 public:
  Value() = default;
  Value(Tape* tape, int id) : tape_(tape), id_(id) {}
  bool valid() const { return tape_ != nullptr; }
  Tape& tape() const { return *tape_; }
  int id() const { return id_; }
  const TensorMeta& meta() const;
  const Shape& shape() const { return meta().shape; }
  DType dtype() const { return meta().dtype; }

 private:
  Tape* tape_ = nullptr;
  int id_ = -1;
};

enum class ValueKind { input, param, op_output };

struct ValueNode {
  ValueKind kind = ValueKind::input;
  TensorMeta meta;
  std::string name;
  int producer = -1;     // op index for op_output
  int output_index = 0;  // which output of the producer
  bool requires_grad = false;
  Parameter* param = nullptr;  // for kind == param
  std::vector<int> consumers;  // op indices in order (an op reading twice appears twice)
};

struct OpNode {
  std::unique_ptr<Op> op;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  std::string where;         // "file:line" of the model code that recorded it
  std::string scope;
};

class Tape {
 public:
  explicit Tape(ParamStore& params, DType dtype = DType::f32) : params_(&params), dtype_(dtype) {}
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // A network input (images, labels), fed to the executor each step.
  Value input(const std::string& name, Shape shape, DType dtype, bool requires_grad = false);
  // A parameter (or running statistic) from the store, named within the current scope. A
  // parameter recorded again (the same name in the same scope: a siamese tower) is the same
  // value, not a second handle: its uses share one gradient and one update.
  Value param(const std::string& name, Shape shape, Init init, bool trainable = true);
  // A parameter already in the store (an op recording a sub-graph passes its parameters on);
  // the value it already has on this tape, if any.
  Value param(Parameter& p);
  // Records `op` over `inputs`; returns its outputs. Shape errors are rethrown with `where`.
  std::vector<Value> record(std::unique_ptr<Op> op, std::vector<Value> inputs,
                            std::source_location where);

  // Names parameters "scope/name": Scope s(tape, "layer1");
  class Scope {
   public:
    Scope(Tape& t, const std::string& name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Tape& t_;
    size_t previous_;
  };
  // Where the ops recorded while it lives come from, in place of their source lines: an
  // importer's node ("model.onnx: node 'conv3' (Conv)"), which errors and check_finite name.
  class Origin {
   public:
    Origin(Tape& t, std::string origin) : t_(t), previous_(std::move(t.origin_)) {
      t.origin_ = std::move(origin);
    }
    ~Origin() { t_.origin_ = std::move(previous_); }
    Origin(const Origin&) = delete;
    Origin& operator=(const Origin&) = delete;

   private:
    Tape& t_;
    std::string previous_;
  };
  // A fresh name for an op of kind `kind` in the current scope ("conv2d3").
  std::string unique_name(const std::string& kind);
  // Takes over another tape's scope and name counters (a sub-graph recorded apart names its
  // parameters as it would inline), or hands them back.
  void continue_naming_from(const Tape& other) {
    scope_ = other.scope_;
    counters_ = other.counters_;
  }

  DType dtype() const { return dtype_; }
  ParamStore& params() const { return *params_; }
  const std::vector<ValueNode>& values() const { return values_; }
  const std::vector<OpNode>& ops() const { return ops_; }
  std::vector<OpNode>& ops() { return ops_; }
  const ValueNode& value(int id) const { return values_.at(static_cast<size_t>(id)); }
  // Which of node's input slots get a gradient: differentiable, and the value requires one
  // (what its backward may read depends on it: backward_reads_input).
  std::vector<bool> input_grads(const OpNode& node) const;
  // Whether op `k`, reading its input 0 (x) in training backward, would free memory by reading
  // its output 0 (y) instead (a norm from its output): some input of k gets a gradient (k's
  // backward runs), y is read by some consumer's training backward anyway (as its roles on
  // `backend` say), and x would then die after forward: an op's output, no other backward
  // reads it, nor its producer (without a compact encoding).
  bool output_kept_input_dies(int k, const Backend& backend) const;
  const std::string& scope() const { return scope_; }

 private:
  ParamStore* params_;
  DType dtype_;
  std::vector<ValueNode> values_;
  std::vector<OpNode> ops_;
  std::string scope_;
  std::string origin_;  // Origin's, or empty: the recording call's source line
  std::vector<std::pair<std::string, int>> counters_;  // (scope/kind, count)
  std::map<const Parameter*, int> param_values_;       // parameter -> its value id
};

}  // namespace frugal
