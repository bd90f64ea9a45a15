// The executor, the trainer and checkpoints on the CUDA device, as the simulated-device suite
// (tests/test_sim_device.cpp) proves them on the CPU: planned and baseline steps bitwise equal
// on the device for the bundled networks, no allocation during a step (frugal's allocator and
// the driver's free memory both unchanged), the arena the plan asks for is what the device
// gives, and checkpoints move between the GPU and the CPU bit for bit.
#include <doctest/doctest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda_entry.h"
#include "data/synthetic.h"
#include "layers/binary.h"
#include "layers/constant.h"
#include "layers/conv2d.h"
#include "layers/embedding.h"
#include "layers/flatten.h"
#include "layers/gather.h"
#include "layers/linear.h"
#include "layers/reshape.h"
#include "layers/select.h"
#include "tests/device/harness.h"
#include "tests/temp_dir.h"
#include "train/trainer.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Backend& gpu() {
  return cuda_backend();
}

struct Case {
  const char* model;
  Shape shape;  // (N, C, H, W)
};

// A gather along the width with repeated and unused columns (its backward sums in index order),
// then a choice by a comparison (torch.where): the kernels an imported Swin or YOLO head adds.
Value gather_where_net(Value x) {
  Value h = conv2d(x, {.out = 3, .kernel = 3, .pad = 1});
  h = gather(h, 3, {5, 0, 0, 3, 2, 5, 1}, {7});
  Value g = conv2d(h, {.out = 3, .kernel = 1});
  h = select(compare(BinaryKind::greater, h, g), h, g);
  return linear(flatten(h), {.out = 5});
}

// A class embedding added per sample and channel (nn.Embedding of labels the step is given,
// here a constant of the tape): its indices read back from the device each step, its table's
// gradient summed by the gather kernels.
Value embedding_net(Value x) {
  Value h = conv2d(x, {.out = 3, .kernel = 3, .pad = 1});
  Tensor labels = Tensor::empty({2}, DType::f32);
  labels.data<float>()[0] = 3, labels.data<float>()[1] = -1;  // -1: the last row
  Value table = x.tape().param("classes", {5, 3}, Init::normal(0.5));
  Value e = reshape(embedding(table, constant(x.tape(), labels)), Shape{2, 3, 1, 1});
  return linear(flatten(binary(BinaryKind::add, h, e)), {.out = 5});
}

}  // namespace

TEST_CASE("cuda device: planned steps equal baseline steps bitwise, and repeat exactly") {
  const std::vector<Case> cases = {{"small-cnn", {8, 1, 28, 28}},  {"resnet20", {4, 3, 32, 32}},
                                   {"revnet38", {2, 3, 32, 32}},   {"googlenet", {2, 3, 224, 224}},
                                   {"alexnet", {2, 3, 224, 224}},  {"vgg-a", {2, 3, 224, 224}},
                                   {"resnet18", {2, 3, 224, 224}}, {"resnet50", {2, 3, 224, 224}},
                                   {"densenet40", {4, 3, 32, 32}}};
  for (const Case& c : cases) {
    CAPTURE(std::string(c.model));
    const int64_t classes = find_model(c.model).classes;
    const std::vector<Tensor> baseline =
        train_on(gpu(), bundled(c.model), c.shape, classes, MemoryMode::baseline, 2);
    const std::vector<Tensor> planned =
        train_on(gpu(), bundled(c.model), c.shape, classes, MemoryMode::planned, 2);
    check_all_bitwise(baseline, planned);
    check_all_bitwise(planned,
                      train_on(gpu(), bundled(c.model), c.shape, classes, MemoryMode::planned, 2));
  }
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(gpu(), coupling_net, {2, 4, 6, 6}, 5, MemoryMode::baseline, 2),
                      train_on(gpu(), coupling_net, {2, 4, 6, 6}, 5, memory, 2));
  }
  // gather and select: planned == baseline on the device (their kernels against the CPU's are
  // in test_cuda.cpp).
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(gpu(), gather_where_net, {2, 4, 6, 6}, 5, MemoryMode::baseline, 2),
                      train_on(gpu(), gather_where_net, {2, 4, 6, 6}, 5, memory, 2));
  }
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(gpu(), embedding_net, {2, 4, 6, 6}, 5, MemoryMode::baseline, 2),
                      train_on(gpu(), embedding_net, {2, 4, 6, 6}, 5, memory, 2));
  }
  // concat_batch_norm: the bits of concat then batch_norm on the device too.
  for (MemoryMode memory : {MemoryMode::baseline, MemoryMode::planned}) {
    CAPTURE(memory_mode_name(memory));
    check_all_bitwise(train_on(gpu(), dense_net(false), {2, 3, 6, 6}, 5, memory, 2),
                      train_on(gpu(), dense_net(true), {2, 3, 6, 6}, 5, memory, 2));
  }
  // conv3d and conv_transpose3d: planned == baseline on the device, and the same bits again.
  const std::vector<Tensor> volume =
      train_on(gpu(), volume_net, {5, 2, 4, 6, 6}, 5, MemoryMode::baseline, 2);
  check_all_bitwise(volume,
                    train_on(gpu(), volume_net, {5, 2, 4, 6, 6}, 5, MemoryMode::planned, 2));
  check_all_bitwise(volume,
                    train_on(gpu(), volume_net, {5, 2, 4, 6, 6}, 5, MemoryMode::baseline, 2));
  // AdamW: planned == baseline on the device, and the same bits again.
  const Shape shape{2, 3, 32, 32};
  const std::vector<Tensor> adamw =
      train_on(gpu(), bundled("resnet20"), shape, 10, MemoryMode::planned, 3, OptimizerKind::adamw);
  check_all_bitwise(train_on(gpu(), bundled("resnet20"), shape, 10, MemoryMode::baseline, 3,
                             OptimizerKind::adamw),
                    adamw);
  check_all_bitwise(
      train_on(gpu(), bundled("resnet20"), shape, 10, MemoryMode::planned, 3, OptimizerKind::adamw),
      adamw);
}

TEST_CASE(
    "cuda device: the trainer allocates nothing in a step, the device holds what is planned") {
  const Dataset train = synthetic_dataset({3, 32, 32}, 32 * 4, 10, 5);
  const Dataset test = synthetic_dataset({3, 32, 32}, 50, 10, 6);
  TrainOptions o{.model = "resnet20", .batch = 32, .warmup = 2, .eval_batch = 25};
  o.device = "cuda";
  const size_t held_before = cuda_allocator().current_bytes();
  Trainer t(o, train, test);
  const size_t held = cuda_allocator().current_bytes() - held_before;
  const Executor& ex = t.executor();
  // Parameters, running statistics and momentum are outside the executor.
  CHECK(ex.memory_bytes() <= held);
  t.step();  // the first step makes the momentum buffers; cuDNN and cuBLAS set up here
  gpu().synchronize();
  const size_t count = cuda_allocator().allocation_count();
  const size_t bytes = cuda_allocator().current_bytes();
  const CudaMemoryInfo driver = cuda_memory_info();
  cuda_allocator().reset_peaks();
  for (int i = 0; i < 3; ++i) t.step();
  gpu().synchronize();
  CHECK(cuda_allocator().allocation_count() == count);
  CHECK(cuda_allocator().current_bytes() == bytes);
  CHECK(cuda_allocator().peak_bytes() == bytes);
  CHECK(cuda_memory_info().free == driver.free);
  CHECK(cuda_allocator().stats(Role::arena).current == ex.arena_bytes());
  const double accuracy = t.evaluate();
  CHECK(accuracy >= 0.0);
  CHECK(accuracy <= 1.0);
}

TEST_CASE("cuda device: the arena the plan asks for is what the driver gives") {
  // One planned executor of ResNet-20 b64: the driver's used memory grows by the executor's
  // bytes, rounded up to the driver's allocation granularity (2 MiB) per allocation.
  ParamStore store(3, gpu());
  Tape tape(store, DType::f32);
  Value x = tape.input("images", {64, 3, 32, 32}, DType::f32, true);
  Value labels = tape.input("labels", {64}, DType::i32);
  Value loss = model_loss(find_model("resnet20"), bundled("resnet20")(x), labels);
  gpu().synchronize();
  const CudaMemoryInfo before = cuda_memory_info();
  const size_t count = cuda_allocator().allocation_count();
  Executor ex(tape, gpu(),
              {.memory = MemoryMode::planned,
               .keep = {loss},
               .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9}});
  gpu().synchronize();
  const size_t allocations = cuda_allocator().allocation_count() - count;
  const size_t driver = before.free - cuda_memory_info().free;
  const size_t granule = size_t{2} << 20;
  MESSAGE("executor ", ex.memory_bytes(), " bytes (arena ", ex.arena_bytes(), ") in ", allocations,
          " allocations; the driver's free memory fell by ", driver);
  CHECK(driver >= ex.memory_bytes());
  CHECK(ex.arena_bytes() > 0);
  CHECK(driver <= ex.memory_bytes() + allocations * granule);
}

TEST_CASE("cuda device: a checkpoint saved on the GPU loads on the CPU and back, bit for bit") {
  TempDir dir("frugal-cuda");
  const Dataset train = synthetic_dataset({3, 32, 32}, 16, 10, 1);
  const Dataset test = synthetic_dataset({3, 32, 32}, 8, 10, 2);
  TrainOptions o{.model = "resnet20",
                 .epochs = 2,
                 .batch = 4,
                 .warmup = 2,
                 .augment = true,
                 .seed = 4,
                 .steps = 3,
                 .eval_batch = 4};
  o.device = "cuda";
  Trainer on_gpu(o, train, test);
  loss_bits(on_gpu, 3);
  on_gpu.save(dir / "gpu.safetensors");

  o.device = "cpu";
  Trainer on_cpu(o, train, test);
  on_cpu.resume(dir / "gpu.safetensors");
  CHECK(on_cpu.global_step() == 3);
  check_all_bitwise(state_of(on_gpu.params()), state_of(on_cpu.params()));
  on_cpu.save(dir / "cpu.safetensors");
  CHECK(read_bytes(dir / "cpu.safetensors") == read_bytes(dir / "gpu.safetensors"));

  o.device = "cuda";
  Trainer back(o, train, test);
  back.resume(dir / "cpu.safetensors");
  check_all_bitwise(state_of(on_gpu.params()), state_of(back.params()));
  CHECK(loss_bits(back, 2) == loss_bits(on_gpu, 2));
  check_all_bitwise(state_of(on_gpu.params()), state_of(back.params()));
  CHECK(back.evaluate() == on_gpu.evaluate());
}

TEST_CASE("cuda device: cuDNN's workspaces are chosen within the arena and the limit") {
  size_t least = 0;  // the largest least workspace of any pass: the smallest limit that works
  for (int round = 0; round < 2; ++round) {
    const size_t limit = round == 0 ? std::numeric_limits<size_t>::max() : least;
    CAPTURE(limit);
    ParamStore store(3, gpu());
    Tape tape(store, DType::f32);
    Value x = tape.input("images", {64, 3, 32, 32}, DType::f32, true);
    Value labels = tape.input("labels", {64}, DType::i32);
    Value loss = model_loss(find_model("resnet20"), bundled("resnet20")(x), labels);
    Executor ex(tape, gpu(),
                {.memory = MemoryMode::planned,
                 .keep = {loss},
                 .optimizer = OptimizerConfig{.lr = 0.1, .momentum = 0.9},
                 .workspace_limit = limit});
    const WorkspacePlan& w = ex.layout().workspace;
    REQUIRE(!w.picks.empty());  // every convolution pass, forward and backward
    CHECK(w.arena == w.arena_least);
    CHECK(w.arena == ex.arena_bytes());
    CHECK(w.seconds_chosen <= w.seconds_least);
    CHECK(w.seconds_fastest <= w.seconds_chosen);
    for (const ScratchPick& p : w.picks) {
      least = std::max(least, p.least.bytes);
      CHECK(p.chosen.bytes <= limit);
      CHECK(p.fastest.bytes <= limit);
    }
    MESSAGE("limit ", limit, ": ", w.picks.size(), " passes, ", w.seconds_chosen * 1e3,
            " ms chosen, ", w.seconds_fastest * 1e3, " ms fastest, ", w.seconds_least * 1e3,
            " ms least; arena ", w.arena);
  }
  // One byte less cannot work: the error names the op and both sizes.
  ParamStore store(3, gpu());
  Tape tape(store, DType::f32);
  Value x = tape.input("images", {64, 3, 32, 32}, DType::f32, true);
  Value labels = tape.input("labels", {64}, DType::i32);
  Value loss = model_loss(find_model("resnet20"), bundled("resnet20")(x), labels);
  CHECK_THROWS_WITH_AS(Executor(tape, gpu(),
                                {.memory = MemoryMode::planned,
                                 .keep = {loss},
                                 .optimizer = OptimizerConfig{.lr = 0.1},
                                 .workspace_limit = least - 1}),
                       doctest::Contains("above the workspace limit of"), Error);
  // Room to grow: the arena grows by at most that much, the plan stays valid, no pass slower.
  const Executor tight(
      tape, gpu(),
      {.memory = MemoryMode::planned, .keep = {loss}, .optimizer = OptimizerConfig{.lr = 0.1}});
  const size_t growth = size_t{64} << 20;
  const Executor grown(tape, gpu(),
                       {.memory = MemoryMode::planned,
                        .keep = {loss},
                        .optimizer = OptimizerConfig{.lr = 0.1},
                        .workspace_growth = growth});
  const WorkspacePlan& a = tight.layout().workspace;
  const WorkspacePlan& g = grown.layout().workspace;
  CHECK(g.arena_least == a.arena_least);
  CHECK(g.arena <= g.arena_least + growth);
  CHECK(g.seconds_chosen <= a.seconds_chosen);
  std::string why;
  CHECK_MESSAGE(plan_is_valid(grown.layout().requests, grown.layout().plan, &why), why);
  MESSAGE("growth 64 MiB: ", g.seconds_chosen * 1e3, " ms chosen against ", a.seconds_chosen * 1e3,
          " ms; arena ", g.arena, " against ", a.arena);
}
