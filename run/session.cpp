// Session: per-shape recording and planning, cached; shared step counter.
#include "run/session.h"

#include "core/error.h"

namespace frugal {

Session::Session(ParamStore& params, Backend& backend, std::vector<std::string> input_names,
                 Build build, SessionOptions options)
    : params_(params),
      backend_(backend),
      names_(std::move(input_names)),
      build_(std::move(build)),
      options_(options) {}

Session::Bound& Session::bind(std::span<const TensorMeta> inputs) {
  FRUGAL_CHECK(inputs.size() == names_.size(), "session: expects ", names_.size(), " inputs, got ",
               inputs.size());
  std::string key = memory_mode_name(options_.memory);
  for (const TensorMeta& m : inputs)
    key.append("|").append(m.shape.str()).append(dtype_name(m.dtype));
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  Bound b;
  b.tape = std::make_unique<Tape>(params_, options_.dtype);
  for (size_t i = 0; i < inputs.size(); ++i)
    b.inputs.push_back(b.tape->input(names_[i], inputs[i].shape, inputs[i].dtype));
  b.out = build_(*b.tape, b.inputs);
  FRUGAL_CHECK(options_.mode == Mode::inference || b.out.shape().numel() == 1,
               "session: training needs a one-element loss, the model returned ", b.out.shape());
  b.executor =
      std::make_unique<Executor>(*b.tape, backend_,
                                 ExecutorOptions{.mode = options_.mode,
                                                 .memory = options_.memory,
                                                 .seed = options_.seed,
                                                 .keep = {b.out},
                                                 .optimizer = options_.optimizer,
                                                 .workspace_limit = options_.workspace_limit,
                                                 .workspace_growth = options_.workspace_growth});
  return cache_.emplace(key, std::move(b)).first->second;
}

Executor& Session::executor(std::span<const TensorMeta> inputs) {
  return *bind(inputs).executor;
}

Tensor& Session::input(std::span<const TensorMeta> inputs, size_t i) {
  Bound& b = bind(inputs);
  FRUGAL_CHECK(i < b.inputs.size(), "session: input ", i, " of ", b.inputs.size());
  return b.executor->input(b.inputs[i]);
}

const Tensor& Session::step(std::span<const Tensor> inputs) {
  std::vector<TensorMeta> metas;
  for (const Tensor& t : inputs) metas.push_back(t.meta());
  Bound& b = bind(metas);
  for (size_t i = 0; i < inputs.size(); ++i) b.executor->set_input(b.inputs[i], inputs[i]);
  return run(b);
}

const Tensor& Session::run(std::span<const TensorMeta> inputs) {
  return run(bind(inputs));
}

const Tensor& Session::run(Bound& b) {
  Executor& ex = *b.executor;
  ex.set_step(step_);
  ex.forward();
  if (options_.mode == Mode::training) ex.backward(b.out);
  step_ = ex.step();
  return ex.value(b.out);
}

size_t Session::memory_bytes() const {
  size_t bytes = 0;
  for (const auto& [key, b] : cache_) bytes += b.executor->memory_bytes();
  return bytes;
}

void Session::set_memory(MemoryMode memory) {
  if (memory == options_.memory) return;
  options_.memory = memory;
  cache_.clear();  // frees the other mode's memory; the next step replans
}

}  // namespace frugal
