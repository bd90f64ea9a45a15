// Parameters and other persistent state (BatchNorm running statistics), owned outside any
// tape so that re-recording a model (another batch size) finds the same tensors by name.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"

namespace frugal {

// How a new parameter is filled. Values are a function of (store seed, name), so they do
// not depend on creation order or thread count.
struct Init {
  enum class Kind { zeros, ones, normal, uniform, constant } kind = Kind::zeros;
  double scale = 0;  // std for normal, bound for uniform (-scale, scale), the value for constant
  static Init zeros() { return {Kind::zeros, 0}; }
  static Init ones() { return {Kind::ones, 0}; }
  static Init normal(double std) { return {Kind::normal, std}; }
  static Init uniform(double bound) { return {Kind::uniform, bound}; }
  static Init constant(double value) { return {Kind::constant, value}; }
};

struct Parameter {
  std::string name;
  TensorMeta meta;
  Tensor value;           // undefined in a shape-only store
  bool trainable = true;  // false for running statistics
  // Optimizer state, created by the optimizer on first use: SGD's momentum, or AdamW's first
  // moment (`momentum`) and second moment (`second_moment`).
  Tensor momentum;
  Tensor second_moment;
};

class ParamStore {
 public:
  // Parameters in the memory of `backend`'s device: initialized in host memory, then copied
  // there through the backend (the same bits on every device).
  explicit ParamStore(uint64_t seed = 0, Backend& backend = cpu_backend())
      : seed_(seed), backend_(&backend) {}
  // A store that records shapes only (no memory, no initialization): for planning and
  // memory reports of networks that are never run.
  static ParamStore shapes_only() {
    ParamStore s;
    s.materialize_ = false;
    return s;
  }
  bool materialized() const { return materialize_; }

  // Returns the parameter called `name`, creating and initializing it if new. Throws if it
  // exists with another shape or dtype.
  Parameter& get_or_create(const std::string& name, const TensorMeta& meta, Init init,
                           bool trainable);
  Parameter* find(const std::string& name);
  // In creation order.
  std::vector<Parameter*> all();
  size_t count_elements(bool trainable_only) const;
  size_t size() const { return params_.size(); }
  uint64_t seed() const { return seed_; }
  // The backend whose device holds the parameters (and, once made, their momentum).
  Backend& backend() const { return *backend_; }

 private:
  uint64_t seed_;
  Backend* backend_;
  bool materialize_ = true;
  std::vector<std::unique_ptr<Parameter>> params_;
  std::map<std::string, Parameter*> by_name_;
};

// Fills `t` (f32/f64) as `init` says, from (seed, stream).
void initialize(Tensor& t, Init init, uint64_t seed, uint64_t stream);
uint64_t hash_name(const std::string& s);

}  // namespace frugal
