// Parameter store: creation by name, deterministic initialization.
#include "autograd/params.h"

#include "core/error.h"
#include "core/rng.h"

namespace frugal {

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void initialize(Tensor& t, Init init, uint64_t seed, uint64_t stream) {
  const int64_t n = t.numel();
  auto value = [&](int64_t i) -> double {
    switch (init.kind) {
      case Init::Kind::zeros:
        return 0.0;
      case Init::Kind::ones:
        return 1.0;
      case Init::Kind::normal:
        return init.scale * random_normal(seed, stream, i);
      case Init::Kind::uniform:
        return init.scale * (2.0 * random_uniform(seed, stream, i) - 1.0);
      case Init::Kind::constant:
        return init.scale;
    }
    return 0.0;
  };
  // Each element is a pure function of (seed, stream, i): same bits for any thread count.
  if (t.dtype() == DType::f32) {
    float* p = t.data<float>();
#pragma omp parallel for schedule(static) if (n > 4096)
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(value(i));
  } else {
    double* p = t.data<double>();
#pragma omp parallel for schedule(static) if (n > 4096)
    for (int64_t i = 0; i < n; ++i) p[i] = value(i);
  }
}

Parameter& ParamStore::get_or_create(const std::string& name, const TensorMeta& meta, Init init,
                                     bool trainable) {
  if (Parameter* p = find(name)) {
    FRUGAL_CHECK(p->meta == meta, "parameter '", name, "' exists as ", p->meta.shape, " ",
                 dtype_name(p->meta.dtype), ", requested as ", meta.shape, " ",
                 dtype_name(meta.dtype));
    return *p;
  }
  FRUGAL_CHECK(meta.dtype == DType::f32 || meta.dtype == DType::f64, "parameter '", name,
               "' must be f32 or f64, got ", dtype_name(meta.dtype));
  auto p = std::make_unique<Parameter>();
  p->name = name;
  p->meta = meta;
  p->trainable = trainable;
  if (materialize_) {
    p->value = Tensor::empty(meta.shape, meta.dtype, Role::param, backend_->allocator());
    if (p->value.device().is_host()) {
      initialize(p->value, init, seed_, hash_name(name));
    } else {
      Tensor host = Tensor::empty(meta.shape, meta.dtype, Role::param);
      initialize(host, init, seed_, hash_name(name));
      backend_->copy_to_device(host, p->value);
    }
  }
  by_name_[name] = p.get();
  params_.push_back(std::move(p));
  return *params_.back();
}

Parameter* ParamStore::find(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Parameter*> ParamStore::all() {
  std::vector<Parameter*> v;
  for (auto& p : params_) v.push_back(p.get());
  return v;
}

size_t ParamStore::count_elements(bool trainable_only) const {
  size_t n = 0;
  for (auto& p : params_)
    if (!trainable_only || p->trainable) n += static_cast<size_t>(p->meta.shape.numel());
  return n;
}

}  // namespace frugal
