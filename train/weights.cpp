// Checkpoints over the safetensors reader and writer: names, shapes and dtypes are checked
// against the model (and every value for NaN and inf) before any byte is copied, so a bad file
// leaves the store untouched. Bytes
// move between the file's host tensors and the store's device through the store's backend.
#include "train/weights.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

#include "core/backend.h"
#include "core/error.h"

namespace frugal {
namespace {
// Optimizer state saved beside the weights: "<prefix><parameter name>".
struct StateSlot {
  const char* prefix;
  Tensor Parameter::*member;
};
constexpr StateSlot kState[] = {{"momentum/", &Parameter::momentum},
                                {"second_moment/", &Parameter::second_moment}};

// The parameter name a state tensor's name carries, or `name` for a weight.
std::string base_name(const std::string& name) {
  for (const StateSlot& s : kState)
    if (name.starts_with(s.prefix)) return name.substr(std::strlen(s.prefix));
  return name;
}
}  // namespace

Safetensors weights_tensors(ParamStore& params, bool with_momentum,
                            std::map<std::string, std::string> metadata) {
  Safetensors file;
  file.metadata = std::move(metadata);
  Backend& be = params.backend();
  for (Parameter* p : params.all()) file.tensors.emplace_back(p->name, to_host(be, p->value));
  if (with_momentum)
    for (const StateSlot& s : kState)
      for (Parameter* p : params.all())
        if ((p->*s.member).defined())
          file.tensors.emplace_back(s.prefix + p->name, to_host(be, p->*s.member));
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
    for (const StateSlot& s : kState)
      if (const Tensor* m = file.find(s.prefix + p->name); m != nullptr)
        check(s.prefix + p->name, *m, p->meta);
  }
  for (const auto& [name, t] : file.tensors)
    FRUGAL_CHECK(known.count(base_name(name)) != 0, path, ": tensor '", name, "' ", t.shape(),
                 " is not in model ", model, " (a file for another model?)");
  Backend& be = params.backend();
  for (Parameter* p : params.all()) {
    be.copy_to_device(*file.find(p->name), p->value);
    if (!with_momentum) continue;
    for (const StateSlot& s : kState) {
      Tensor& state = p->*s.member;
      const Tensor* m = file.find(s.prefix + p->name);
      if (m == nullptr) {
        state = Tensor();
        continue;
      }
      if (!state.defined())
        state = Tensor::empty(p->meta.shape, p->meta.dtype, Role::optimizer_state, be.allocator());
      be.copy_to_device(*m, state);
    }
  }
}

int64_t saved_image_size(const Safetensors& file, const std::string& path) {
  auto it = file.metadata.find("image_size");
  if (it == file.metadata.end()) return 0;
  const std::string& text = it->second;
  int64_t size = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  FRUGAL_CHECK(ec == std::errc() && end == text.data() + text.size() && size >= 1 && size <= 4096,
               path, ": metadata image_size '", text.substr(0, 40), "' is not a side in 1..4096");
  return size;
}

bool saved_resize(const Safetensors& file, const std::string& path) {
  auto it = file.metadata.find("resize");
  if (it == file.metadata.end()) return false;
  FRUGAL_CHECK(it->second == "true" || it->second == "false", path, ": metadata resize '",
               it->second.substr(0, 40), "' is neither true nor false");
  return it->second == "true";
}

}  // namespace frugal
