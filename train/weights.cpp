// Checkpoints over the safetensors reader and writer: names, shapes and dtypes are checked
// against the model (and every value for NaN and inf) before any byte is copied, so a bad file
// leaves the store untouched. Bytes
// move between the file's host tensors and the store's device through the store's backend.
#include "train/weights.h"

#include <cmath>
#include <set>

#include "core/backend.h"
#include "core/error.h"

namespace frugal {
namespace {
const std::string kMomentum = "momentum/";
}  // namespace

Safetensors weights_tensors(ParamStore& params, bool with_momentum,
                            std::map<std::string, std::string> metadata) {
  Safetensors file;
  file.metadata = std::move(metadata);
  Backend& be = params.backend();
  for (Parameter* p : params.all()) file.tensors.emplace_back(p->name, to_host(be, p->value));
  if (with_momentum)
    for (Parameter* p : params.all())
      if (p->momentum.defined())
        file.tensors.emplace_back(kMomentum + p->name, to_host(be, p->momentum));
  for (const auto& [name, t] : file.tensors) {
    const int64_t i = cpu_backend().first_non_finite(t);  // the file's tensors are on the host
    FRUGAL_CHECK(i < 0, "weights: '", name, "' ", t.shape(), " holds ",
                 std::isnan(element_as_double(t, i)) ? "nan" : "inf", " at element ", i,
                 "; non-finite weights are not written (the run diverged: lower the learning ",
                 "rate, or train with --check-finite to find where)");
  }
  return file;
}

void load_weights(ParamStore& params, const Safetensors& file, const std::string& path,
                  const std::string& model, bool with_momentum) {
  auto it = file.metadata.find("model");
  FRUGAL_CHECK(it == file.metadata.end() || it->second == model, path, ": weights of model '",
               it->second, "', not of ", model);
  auto check = [&](const std::string& name, const Tensor& t, const TensorMeta& want) {
    FRUGAL_CHECK(t.meta() == want, path, ": tensor '", name, "' is ", t.shape(), " ",
                 dtype_name(t.dtype()), ", model ", model, " expects ", want.shape, " ",
                 dtype_name(want.dtype));
    const int64_t i = cpu_backend().first_non_finite(t);  // the file's tensors are on the host
    FRUGAL_CHECK(i < 0, path, ": tensor '", name, "' holds ",
                 std::isnan(element_as_double(t, i)) ? "nan" : "inf", " at element ", i,
                 " (a corrupt file, or one from a diverged run)");
  };
  std::set<std::string> known;
  for (Parameter* p : params.all()) {
    known.insert(p->name);
    const Tensor* t = file.find(p->name);
    FRUGAL_CHECK(t != nullptr, path, ": missing tensor '", p->name, "' ", p->meta.shape, " ",
                 dtype_name(p->meta.dtype), " of model ", model);
    check(p->name, *t, p->meta);
    if (const Tensor* m = file.find(kMomentum + p->name); m != nullptr)
      check(kMomentum + p->name, *m, p->meta);
  }
  for (const auto& [name, t] : file.tensors) {
    const bool momentum = name.starts_with(kMomentum);
    const std::string base = momentum ? name.substr(kMomentum.size()) : name;
    FRUGAL_CHECK(known.count(base) != 0, path, ": tensor '", name, "' ", t.shape(),
                 " is not in model ", model, " (a file for another model?)");
  }
  Backend& be = params.backend();
  for (Parameter* p : params.all()) {
    be.copy_to_device(*file.find(p->name), p->value);
    if (!with_momentum) continue;
    const Tensor* m = file.find(kMomentum + p->name);
    if (m == nullptr) {
      p->momentum = Tensor();
      continue;
    }
    if (!p->momentum.defined())
      p->momentum =
          Tensor::empty(p->meta.shape, p->meta.dtype, Role::optimizer_state, be.allocator());
    be.copy_to_device(*m, p->momentum);
  }
}

}  // namespace frugal
