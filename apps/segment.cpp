// `frugal segment`: trains an ONNX segmentation model (output (N, classes, H, W), such as the
// U-Net scripts/onnx_fixtures.py --segmentation writes) on the synthetic shapes task
// (data/shapes.h) with the per-pixel cross-entropy, then reports the test set's mean IoU after
// every epoch. Training runs on the planned (or baseline) executor like `frugal train`.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/options.h"
#include "core/backend.h"
#include "core/error.h"
#include "core/rng.h"
#include "data/safetensors.h"
#include "data/shapes.h"
#include "models/onnx.h"
#include "models/step.h"
#include "run/executor.h"
#include "train/trainer.h"
#include "train/weights.h"

namespace frugal {
namespace {

struct SegmentOptions {
  std::string onnx;
  TrainOptions train;  // epochs, batch, optimizer and schedule, seed, threads, memory
  int64_t train_size = 4000, test_size = 500;
  std::string log;
  std::string save;  // the trained weights (safetensors), written after the last epoch
};

// Copies samples order[at .. at + rows) of `set` into the step's inputs.
void copy_batch(const SegmentationSet& set, const std::vector<int64_t>& order, int64_t at,
                int64_t rows, Tensor& images, Tensor& labels) {
  const size_t img = set.images.bytes() / static_cast<size_t>(set.images.shape()[0]);
  const size_t lab = set.labels.bytes() / static_cast<size_t>(set.labels.shape()[0]);
  for (int64_t i = 0; i < rows; ++i) {
    const auto n = static_cast<size_t>(order[static_cast<size_t>(at + i)]);
    std::memcpy(static_cast<char*>(images.raw()) + static_cast<size_t>(i) * img,
                static_cast<const char*>(set.images.raw()) + n * img, img);
    std::memcpy(static_cast<char*>(labels.raw()) + static_cast<size_t>(i) * lab,
                static_cast<const char*>(set.labels.raw()) + n * lab, lab);
  }
}

void run_segment(const SegmentOptions& o) {
  const TrainOptions& t = o.train;
  check_train_options(t);
  const std::string name = kOnnxModelPrefix + o.onnx;  // a named string: GCC 13 warns of a
  const ModelSpec& spec = find_model(name);            // dangling reference otherwise
  const OnnxModel& model = onnx_model(o.onnx);
  FRUGAL_CHECK(spec.label_shape.rank() == 2, o.onnx, ": output (N, ", spec.classes,
               "); `frugal segment` trains segmentation models, whose output is (N, classes, H, "
               "W)");
  FRUGAL_CHECK(spec.classes >= kShapeClasses, o.onnx, ": ", spec.classes,
               " output channels; the shapes task has ", kShapeClasses,
               " classes (background, rectangle, disc, triangle)");
  const Shape& in = spec.input;
  FRUGAL_CHECK(in[1] == in[2] && spec.label_shape == Shape({in[1], in[2]}), o.onnx, ": input ", in,
               " and output (", spec.label_shape,
               "): the task needs square images and an output of the input's size");
  FRUGAL_CHECK(t.batch <= o.train_size, "segment: batch ", t.batch, " exceeds the ", o.train_size,
               " training images");
  if (!o.save.empty()) check_writable(o.save);  // before the run a failed save would lose
  set_cpu_threads(t.threads);
  const SegmentationSet train = shapes_dataset(o.train_size, in[0], in[1], t.seed);
  const SegmentationSet test = shapes_dataset(o.test_size, in[0], in[1], t.seed + 1000003);

  Backend& be = backend_named(t.device);
  ParamStore params(t.seed, be);
  Tape tape(params);
  check_images_only(spec, "segment");
  const ModelStep step = record_model_step(tape, spec, t.batch, Mode::training);
  load_onnx_weights(params, model);
  Executor ex(tape, be,
              {.mode = Mode::training,
               .memory = t.memory,
               .seed = t.seed,
               .keep = {step.loss},
               .optimizer = optimizer_config(t, t.lr, 1),
               .recompute = t.recompute});
  const int64_t eval_batch = std::min(t.eval_batch, o.test_size);
  Tape eval_tape(params);
  const ModelStep eval = record_model_step(eval_tape, spec, eval_batch, Mode::inference);
  Executor ev(eval_tape, be, {.mode = Mode::inference, .memory = t.memory, .keep = {eval.logits}});

  const int64_t steps = t.steps > 0 ? t.steps : o.train_size / t.batch;
  FRUGAL_CHECK(steps * t.batch <= o.train_size, "segment: ", steps, " steps of ", t.batch,
               " images exceed the ", o.train_size, " training images (--steps, --train-size)");
  FRUGAL_CHECK(o.test_size % eval_batch == 0, "segment: --test-size ", o.test_size,
               " is not a multiple of --eval-batch ", eval_batch,
               " (every test image is scored, in full batches)");
  const int64_t total = steps * t.epochs;
  std::printf(
      "%s: %lld train / %lld test images %s, %lld classes; batch %lld, %lld steps per "
      "epoch; the training step holds %.1f MiB (%s, parameters aside)\n",
      o.onnx.c_str(), static_cast<long long>(o.train_size), static_cast<long long>(o.test_size),
      in.str().c_str(), static_cast<long long>(kShapeClasses), static_cast<long long>(t.batch),
      static_cast<long long>(steps), to_mib(ex.memory_bytes()), memory_mode_name(t.memory));
  std::vector<int64_t> order(static_cast<size_t>(o.train_size));
  Tensor images = Tensor::empty(step.images.shape(), DType::f32);
  Tensor labels = Tensor::empty(step.labels.shape(), DType::i32);
  Tensor eval_images = Tensor::empty(eval.images.shape(), DType::f32);
  Tensor eval_labels = Tensor::empty({eval_batch, in[1], in[2]}, DType::i32);
  std::vector<int64_t> identity(static_cast<size_t>(o.test_size));
  std::iota(identity.begin(), identity.end(), 0);
  int64_t global = 0;
  for (int epoch = 1; epoch <= t.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    Rng rng(t.seed, 7000 + static_cast<uint64_t>(epoch));
    for (size_t i = order.size() - 1; i > 0; --i) std::swap(order[i], order[rng.below(i + 1)]);
    double loss_sum = 0;
    for (int64_t s = 0; s < steps; ++s, ++global) {
      copy_batch(train, order, s * t.batch, t.batch, images, labels);
      ex.set_input(step.images, images);
      ex.set_input(step.labels, labels);
      ex.set_optimizer(optimizer_config(t, learning_rate(t, global, total), global + 1));
      ex.forward();
      loss_sum += element_as_double(to_host(be, ex.value(step.loss)), 0);
      ex.backward(step.loss);
    }
    IouMeter iou(kShapeClasses);
    for (int64_t at = 0; at < o.test_size; at += eval_batch) {
      copy_batch(test, identity, at, eval_batch, eval_images, eval_labels);
      ev.set_input(eval.images, eval_images);
      ev.forward();
      iou.add(to_host(be, ev.value(eval.logits)), eval_labels, eval_batch);
    }
    const std::vector<double> per = iou.per_class();
    std::printf(
        "epoch %d/%d  loss %.4f  test pixel acc %.2f%%  mean IoU %.4f  (background %.3f, "
        "rectangle %.3f, disc %.3f, triangle %.3f)\n",
        epoch, t.epochs, loss_sum / double(steps), 100 * iou.pixel_accuracy(), iou.mean(), per[0],
        per[1], per[2], per[3]);
    std::fflush(stdout);
    if (!o.log.empty()) {
      std::ofstream log(o.log, std::ios::app);
      FRUGAL_CHECK(log.good(), "segment: cannot append to ", o.log);
      log << "{\"epoch\":" << epoch << ",\"train_loss\":" << loss_sum / double(steps)
          << ",\"pixel_acc\":" << iou.pixel_accuracy() << ",\"mean_iou\":" << iou.mean() << "}\n";
    }
  }
  if (!o.save.empty()) {
    save_safetensors(o.save, weights_tensors(params, false, {{"model", spec.name}}));
    std::printf("saved %s\n", o.save.c_str());
  }
}

}  // namespace

Action add_segment_command(CLI::App& app) {
  auto o = std::make_shared<SegmentOptions>();
  o->train.epochs = 10;
  o->train.batch = 32;
  o->train.optimizer = OptimizerKind::adamw;
  o->train.lr = 2e-3;
  o->train.weight_decay = 1e-4;
  o->train.warmup = 50;
  CLI::App* c = app.add_subcommand(
      "segment",
      "Train an ONNX segmentation model (output (N, classes, H, W)) on the synthetic shapes "
      "task, per-pixel cross-entropy, and report the test set's mean IoU after every epoch");
  c->add_option("--onnx", o->onnx, "The model (torch.onnx.export, opsets 11-17)")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--epochs", o->train.epochs, "Passes over the training set")
      ->check(whole_number(1, 100000))
      ->capture_default_str();
  c->add_option("--batch", o->train.batch, "Training batch size")
      ->check(whole_number(1, 1 << 20))
      ->capture_default_str();
  auto optimizer = std::make_shared<std::string>("adamw");
  c->add_option("--optimizer", *optimizer, "sgd or adamw")
      ->check(CLI::IsMember({"sgd", "adamw"}))
      ->capture_default_str();
  c->add_option("--lr", o->train.lr, "Peak learning rate (cosine schedule after --warmup)")
      ->capture_default_str();
  c->add_option("--weight-decay", o->train.weight_decay, "Weight decay")->capture_default_str();
  c->add_option("--warmup", o->train.warmup, "Steps of linear warm-up")
      ->check(whole_number(0))
      ->capture_default_str();
  c->add_option("--train-size", o->train_size, "Synthetic training images")
      ->check(whole_number(1, 1 << 24))
      ->capture_default_str();
  c->add_option("--test-size", o->test_size, "Synthetic test images")
      ->check(whole_number(1, 1 << 24))
      ->capture_default_str();
  c->add_option("--eval-batch", o->train.eval_batch, "Test batch size")
      ->check(whole_number(1, 1 << 20))
      ->capture_default_str();
  c->add_option("--steps", o->train.steps, "Training steps per epoch (0: the whole set)")
      ->check(whole_number(0))
      ->capture_default_str();
  c->add_option("--seed", o->train.seed, "Seed for the data, shuffling and dropout")
      ->capture_default_str();
  auto memory = std::make_shared<std::string>("planned");
  c->add_option("--memory", *memory, "Memory layout: planned (one arena) or baseline")
      ->check(CLI::IsMember({"planned", "baseline"}))
      ->capture_default_str();
  c->add_option("--threads", o->train.threads, "CPU threads (0: all cores)")
      ->check(whole_number(0, 4096))
      ->capture_default_str();
  c->add_option("--log", o->log, "Append one JSON line per epoch to this file");
  c->add_option("--save", o->save,
                "Write the trained weights (safetensors, every parameter and BatchNorm statistic "
                "under the file's names) after the last epoch; its folder is checked first");
  return [c, o, optimizer, memory] {
    if (!c->parsed()) return;
    o->train.optimizer = *optimizer == "adamw" ? OptimizerKind::adamw : OptimizerKind::sgd;
    o->train.memory = *memory == "planned" ? MemoryMode::planned : MemoryMode::baseline;
    run_segment(*o);
  };
}

}  // namespace frugal
