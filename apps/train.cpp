// `frugal train`: one training executor over a recorded tape, inference executors over the
// same ParamStore for the test set, and a plain per-epoch report. Batches are copied from the
// data set straight into the executors' input tensors.
#include "apps/train.h"

#include "apps/commands.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "core/backend.h"
#include "data/batcher.h"
#include "models/registry.h"

namespace frugal {
namespace {

constexpr int64_t kClasses = 10;  // Fashion-MNIST

// Border that turns 28x28 Fashion-MNIST images into the model's input, or -1 when the model
// does not take one grey channel of a size 28 + 2 * pad.
int64_t fashion_mnist_pad(const ModelSpec& spec) {
  const Shape& in = spec.input;
  const bool fits = in[0] == 1 && in[1] == in[2] && in[1] >= 28 && (in[1] - 28) % 2 == 0;
  return fits ? (in[1] - 28) / 2 : -1;
}

// One recording of the model for a batch size and mode, and the executor that runs it.
// In inference there is no loss; labels stay on the host for the accuracy count.
struct Net {
  Tape tape;
  Value images, labels, logits, loss;
  Tensor host_labels;
  std::unique_ptr<Executor> ex;

  Net(ParamStore& params, const ModelSpec& model, const Shape& sample, int64_t B, Mode mode,
      const TrainOptions& o)
      : tape(params) {
    images = tape.input("images", {B, sample[1], sample[2], sample[3]}, DType::f32);
    logits = model.build(images, ModelConfig{.classes = kClasses});
    ExecutorOptions eo;
    eo.mode = mode;
    eo.memory = o.memory;
    eo.seed = o.seed;
    eo.keep = {logits};
    if (mode == Mode::training) {
      labels = tape.input("labels", {B}, DType::i32);
      loss = model_loss(model, logits, labels);
      eo.keep.insert(eo.keep.end(), {loss, labels});
      eo.sgd = SgdConfig{.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay};
    } else {
      host_labels = Tensor::empty({B}, DType::i32);
    }
    ex = std::make_unique<Executor>(tape, cpu_backend(), std::move(eo));
  }
  int64_t batch() const { return images.shape()[0]; }
  Tensor& label_tensor() { return labels.valid() ? ex->input(labels) : host_labels; }
};

// Rows of logits (B,>=K) whose largest entry among the first K (first on ties) is the label;
// log-probabilities work alike, and extra columns (GoogLeNet's auxiliary head) are ignored.
int64_t count_correct(const Tensor& logits, const Tensor& labels, int64_t K = kClasses) {
  const int64_t B = logits.shape()[0], stride = logits.shape()[1];
  const float* x = logits.data<float>();
  const int32_t* y = labels.data<int32_t>();
  int64_t correct = 0;
  for (int64_t n = 0; n < B; ++n) {
    int64_t best = 0;
    for (int64_t k = 1; k < K; ++k)
      if (x[n * stride + k] > x[n * stride + best]) best = k;
    correct += best == y[n];
  }
  return correct;
}

// Test accuracy over every sample: full batches, then the remainder on its own net.
double evaluate(Net& full, Net* rest, Batcher& test) {
  int64_t correct = 0, first = 0;
  auto run = [&](Net& net) {
    test.copy(first, net.ex->input(net.images), net.host_labels);
    net.ex->forward();
    correct += count_correct(net.ex->value(net.logits), net.host_labels);
    first += net.batch();
  };
  while (first + full.batch() <= test.size()) run(full);
  if (rest != nullptr) run(*rest);
  return double(correct) / double(test.size());
}

std::string mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelSpec& m : model_specs())
    if (fashion_mnist_pad(m) >= 0) names.push_back(m.name);
  return names;
}

void run_train(const TrainOptions& o) {
  const ModelSpec& model = find_model(o.model);
  const int64_t pad = fashion_mnist_pad(model);
  FRUGAL_CHECK(pad >= 0, "train: ", model.name, " takes images ", model.input,
               ", which Fashion-MNIST's 1x28x28 cannot fill");
  FRUGAL_CHECK(o.epochs >= 1 && o.batch >= 1 && o.eval_batch >= 1 && o.steps >= 0,
               "train: epochs, batch and eval batch must be positive, steps non-negative");
  set_cpu_threads(o.threads);
  const Dataset train = load_fashion_mnist(o.data, true, static_cast<int>(pad));
  const Dataset test = load_fashion_mnist(o.data, false, static_cast<int>(pad));
  FRUGAL_CHECK(o.batch <= train.size(), "train: batch ", o.batch, " exceeds the ", train.size(),
               " training images");

  ParamStore params(o.seed);
  const Shape& sample = train.images.shape();
  Net net(params, model, sample, o.batch, Mode::training, o);
  const int64_t E = std::min(o.eval_batch, test.size()), R = test.size() % E;
  Net eval(params, model, sample, E, Mode::inference, o);
  std::unique_ptr<Net> eval_rest;
  if (R > 0) eval_rest = std::make_unique<Net>(params, model, sample, R, Mode::inference, o);

  int64_t steps = train.size() / o.batch;  // the last partial batch is dropped
  if (o.steps > 0) steps = std::min(steps, o.steps);
  std::printf(
      "frugal train: %s, %zu parameters, %lld train / %lld test images, batch %lld, "
      "%lld steps/epoch, memory %s, threads %d\n",
      model.name.c_str(), params.count_elements(true), (long long)train.size(),
      (long long)test.size(), (long long)o.batch, (long long)steps, memory_mode_name(o.memory),
      cpu_backend().threads());
  std::fflush(stdout);

  const bool tty = isatty(fileno(stdout)) != 0;
  Batcher train_batches(train, true, o.seed), test_batches(test, false, o.seed);
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    train_batches.start_epoch(epoch);
    double loss_sum = 0;
    int64_t correct = 0;
    for (int64_t s = 0; s < steps; ++s) {
      train_batches.copy(s * o.batch, net.ex->input(net.images), net.label_tensor());
      net.ex->forward();
      loss_sum += net.ex->value(net.loss).data<float>()[0];
      correct += count_correct(net.ex->value(net.logits), net.label_tensor());
      net.ex->backward(net.loss);
      if (tty && (s % 10 == 9 || s + 1 == steps)) {
        std::printf("\r  epoch %d  step %lld/%lld  loss %.4f  acc %.2f%%  %.0f img/s ", epoch + 1,
                    (long long)s + 1, (long long)steps, loss_sum / double(s + 1),
                    100.0 * double(correct) / double((s + 1) * o.batch),
                    double((s + 1) * o.batch) / seconds_since(start));
        std::fflush(stdout);
      }
    }
    const double train_s = seconds_since(start);
    if (tty)
      std::printf("\r\033[K  epoch %d  evaluating %lld test images", epoch + 1,
                  (long long)test.size());
    std::fflush(stdout);
    const double accuracy = evaluate(eval, eval_rest.get(), test_batches);
    const double total_s = seconds_since(start);
    if (tty) std::printf("\r\033[K");
    std::printf(
        "epoch %d/%d  loss %.4f  train acc %.2f%%  test acc %.2f%%  time %.1f s "
        "(eval %.1f s)  %.0f img/s  memory %s (arena %s), eval %s\n",
        epoch + 1, o.epochs, loss_sum / double(steps),
        100.0 * double(correct) / double(steps * o.batch), 100.0 * accuracy, total_s,
        total_s - train_s, double(steps * o.batch) / train_s, mib(net.ex->memory_bytes()).c_str(),
        mib(net.ex->arena_bytes()).c_str(), mib(eval.ex->memory_bytes()).c_str());
    std::fflush(stdout);
  }
}

Action add_train_command(CLI::App& app) {
  auto t = std::make_shared<TrainOptions>();
  auto memory = std::make_shared<std::string>("planned");
  CLI::App* train = app.add_subcommand(
      "train", "Train a bundled model on Fashion-MNIST, then measure test accuracy");
  train->add_option("--model", t->model, "Model to train")
      ->check(CLI::IsMember(model_names()))
      ->capture_default_str();
  train->add_option("--epochs", t->epochs, "Passes over the training set")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--batch", t->batch, "Training batch size (the last partial batch is dropped)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--lr", t->lr, "SGD learning rate")->capture_default_str();
  train->add_option("--momentum", t->momentum, "SGD momentum")->capture_default_str();
  train->add_option("--weight-decay", t->weight_decay, "L2 weight decay")->capture_default_str();
  train->add_option("--seed", t->seed, "Seed for parameters, shuffling and dropout")
      ->capture_default_str();
  train->add_option("--threads", t->threads, "CPU threads (0: all cores)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  train->add_option("--memory", *memory, "Memory layout: planned (one arena) or baseline")
      ->check(CLI::IsMember({"planned", "baseline"}))
      ->capture_default_str();
  train->add_option("--data", t->data, "Directory with the Fashion-MNIST IDX files (.gz or not)")
      ->capture_default_str();
  train->add_option("--steps", t->steps, "Training steps per epoch (0: the whole training set)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  train->add_option("--eval-batch", t->eval_batch, "Test batch size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  return [t, memory] {
    t->memory = *memory == "baseline" ? MemoryMode::baseline : MemoryMode::planned;
    run_train(*t);
  };
}

}  // namespace frugal
