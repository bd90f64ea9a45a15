// The bundled RevNets: parameter counts as reference/networks.md, output shapes and layout,
// the stored-activation twin (same parameters, more memory), and one RevNet-38 training
// step, planned bitwise equal to baseline.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "models/registry.h"
#include "models/revnet.h"
#include "report/report.h"
#include "run/executor.h"
#include "tests/recorded_model.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// RevNet-depth at batch 2 on a shape-only store: nothing is allocated or run.
Recorded record(int depth, bool reversible = true) {
  return record_model("revnet" + std::to_string(depth), {.reversible = reversible}, true);
}

}  // namespace

TEST_CASE("models revnet38 revnet110 revnet164") {
  const std::pair<int, size_t> nets[] = {{38, 573994}, {110, 1854890}, {164, 1983786}};
  for (auto [depth, params] : nets) {
    CAPTURE(depth);
    Recorded r = record(depth);
    CHECK(r.params == params);
    CHECK(r.output == Shape{2, 10});
    CHECK(find_model("revnet" + std::to_string(depth)).input == Shape{3, 32, 32});
  }
  Recorded r38 = record(38);
  CHECK(r38.count("reversible") == 3 + 2 + 2);
  // The stem is a checkpoint segment; F, G on tapes of their own.
  CHECK(r38.count("checkpoint") == 1);
  CHECK(r38.count("conv2d") == 2 * 3);  // two downsampling units
  CHECK(r38.has_param("stage1/reversible0/F/conv1.weight"));
  CHECK(!r38.has_param("stage1/reversible0/F/bn1.weight"));  // the stem's BN-ReLU serves
  CHECK(r38.has_param("stage1/reversible1/G/bn1.weight"));
  CHECK(r38.has_param("stage3/down/shortcut/bn.bias"));
  CHECK(r38.has_param("head/linear.weight"));
  Recorded r164 = record(164);
  CHECK(r164.count("reversible") == 3 * 8);
  CHECK(r164.has_param("stage1/down/conv3.weight"));
  CHECK(!r164.has_param("stage1/down/bn1.weight"));
  CHECK(r164.has_param("stage3/reversible7/G/conv3.weight"));
}

TEST_CASE("revnet rejects other depths") {
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store);
  Value x = tape.input("images", {1, 3, 32, 32}, DType::f32);
  CHECK_THROWS_WITH_AS(revnet(x, 56), doctest::Contains("revnet: depth 56 is not one of 38, 110"),
                       Error);
}

TEST_CASE("revnet stored twin has the same parameters and stores more") {
  Recorded rev = record(110), twin = record(110, false);
  CHECK(twin.names == rev.names);
  CHECK(twin.params == rev.params);
  CHECK(twin.count("reversible") == 0);
  CHECK(twin.count("conv2d") == 1 + 4 * 25 + 2 * 3);
  // Planned training step at batch 8: the reversible units store one output per stage.
  auto planned = [](bool reversible, bool checkpoint_downsampling = false) {
    ParamStore store = ParamStore::shapes_only();
    Tape tape(store, DType::f32);
    Value y = revnet(tape.input("images", {8, 3, 32, 32}, DType::f32), 110,
                     {.checkpoint_downsampling = checkpoint_downsampling}, reversible);
    return memory_report(tape, Mode::training, cpu_backend(), {.keep = {y.id()}}).planned;
  };
  const ModeMemory reversible = planned(true), stored = planned(false);
  CHECK(8 * reversible.bytes.outputs < stored.bytes.outputs);
  CHECK(3 * reversible.arena < stored.arena);  // F and G take turns in the coupling's scratch
  // Checkpointed downsampling units store less still.
  CHECK(2 * planned(true, true).bytes.outputs < reversible.bytes.outputs);
}

TEST_CASE("revnet38 planned training step is bitwise equal to baseline") {
  std::vector<Tensor> base = train_model("revnet38", MemoryMode::baseline, 1);
  std::vector<Tensor> planned = train_model("revnet38", MemoryMode::planned, 1);
  REQUIRE(base.size() == planned.size());
  CHECK(base[0].data<float>()[0] > 0);
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(base[i], planned[i]));
  }
}

TEST_CASE("revnet38 reversible training is bitwise equal to its stored twin") {
  // Fixed-point coupling (the default): rebuilding activations changes no bit of the losses,
  // logits, updated weights or BatchNorm statistics over two SGD steps.
  std::vector<Tensor> stored =
      train_model("revnet38", MemoryMode::baseline, 2, {.reversible = false});
  std::vector<Tensor> rebuilt = train_model("revnet38", MemoryMode::planned, 2);
  REQUIRE(stored.size() == rebuilt.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(stored[i], rebuilt[i]));
  }
  // memcnn's floating-point coupling: the same network up to rounding, not bit for bit.
  std::vector<Tensor> floating =
      train_model("revnet38", MemoryMode::planned, 2, {.fixed_point_range = 0});
  CHECK(!bitwise_equal(floating[0], rebuilt[0]));
}

TEST_CASE(
    "revnet38 with rebuilds inside its reversible units is bitwise equal to its stored twin") {
  // --recompute cheap reaches F's and G's backward plans (and the checkpointed downsampling
  // units'): their BatchNorm and ReLU outputs are rebuilt, with the same bits.
  std::vector<Tensor> stored =
      train_model("revnet38", MemoryMode::baseline, 2, {.reversible = false});
  for (Recompute r : {Recompute::cheap, Recompute::all}) {
    CAPTURE(recompute_name(r));
    std::vector<Tensor> rebuilt =
        train_model("revnet38", MemoryMode::planned, 2, {.checkpoint_rebuilds = r});
    REQUIRE(stored.size() == rebuilt.size());
    for (size_t i = 0; i < stored.size(); ++i) {
      CAPTURE(i);
      CHECK(bitwise_equal(stored[i], rebuilt[i]));
    }
  }
}
