// The bundled networks: parameter counts as reference/networks.md (and torchvision where it
// gives none), output shapes of every registered model, registry errors, and one real
// ResNet-20 training step, planned bitwise equal to baseline.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "check/gradcheck.h"
#include "models/densenet.h"
#include "models/registry.h"
#include "models/resnet_cifar.h"
#include "models/resnet_imagenet.h"
#include "run/executor.h"
#include "tests/recorded_model.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Recorded record(const std::string& name, const ModelConfig& config = {}) {
  return record_model(name, config);
}

}  // namespace

TEST_CASE("registry lists the bundled networks by name") {
  std::string names;
  for (const ModelSpec& s : model_specs()) names += s.name + " ";
  CHECK(
      names ==
      "small-cnn alexnet vgg-a vgg16 vgg19 googlenet resnet20 resnet32 resnet56 resnet110 revnet38 "
      "revnet110 revnet164 "
      "resnet1001 resnet18 resnet50 densenet121 densenet40 densenet100 densenet160 ");
  CHECK(find_model("small-cnn").input == Shape{1, 28, 28});
  CHECK(find_model("resnet56").input == Shape{3, 32, 32});
  CHECK(find_model("googlenet").input == Shape{3, 224, 224});
  CHECK(find_model("resnet50").classes == 1000);
  CHECK_THROWS_WITH_AS(find_model("resnet-110"),
                       doctest::Contains("unknown model 'resnet-110'; valid names: small-cnn, "
                                         "alexnet, vgg-a"),
                       Error);
}

TEST_CASE("builders reject depths their family does not have") {
  ParamStore store;
  Tape tape(store);
  Value x = tape.input("images", {1, 3, 32, 32}, DType::f32);
  CHECK_THROWS_WITH_AS(resnet_cifar(x, 21), doctest::Contains("depth 21 is not 6n + 2"), Error);
  CHECK_THROWS_WITH_AS(preact_resnet_cifar(x, 1000), doctest::Contains("is not 9n + 2"), Error);
  CHECK_THROWS_WITH_AS(resnet_imagenet(x, 19), doctest::Contains("depth 19 is not one of"), Error);
}

TEST_CASE("model small-cnn") {
  Recorded r = record("small-cnn");
  CHECK(r.params == 50282);
  CHECK(r.output == Shape{2, 10});
}

TEST_CASE("model alexnet without dropout") {
  Recorded r = record("alexnet", {.dropout = false});
  CHECK(r.params == 60522856);
  CHECK(r.output == Shape{2, 1000});
  CHECK(r.count("dropout") == 0);
  CHECK(r.count("threshold") == 2);
  CHECK(r.count("conv2d") == 10);
  CHECK(r.has_param("features/tower1/conv2d4.weight"));
  CHECK(r.has_param("classifier/linear2.bias"));
}

TEST_CASE("model vgg-a with dropout") {
  Recorded r = record("vgg-a");
  CHECK(r.params == 132863336);
  CHECK(r.output == Shape{2, 1000});
  CHECK(r.count("dropout") == 2);
  CHECK(r.count("conv2d") == 8);
}

TEST_CASE("model vgg16") {
  Recorded r = record("vgg16");
  CHECK(r.params == 138357544);
  CHECK(r.output == Shape{2, 1000});
}

TEST_CASE("model vgg19") {
  Recorded r = record("vgg19");
  CHECK(r.params == 143667240);
  CHECK(r.output == Shape{2, 1000});
}

TEST_CASE("model googlenet") {
  Recorded r = record("googlenet");
  CHECK(r.params == 19124528);
  CHECK(r.output == Shape{2, 2000});  // main and auxiliary log-probabilities
  CHECK(r.count("log_softmax") == 2);
  CHECK(r.has_param("inception3a/double3x3/conv2d2.weight"));
  CHECK(r.has_param("main/inception5b/pool/conv2d0.bias"));
  CHECK(!r.has_param("main/inception4e/pool/conv2d0.weight"));  // proj = 0
  CHECK(r.has_param("aux/linear1.weight"));
}

TEST_CASE("models resnet20 resnet32 resnet56") {
  const std::pair<const char*, size_t> nets[] = {
      {"resnet20", 273258}, {"resnet32", 468138}, {"resnet56", 857898}};
  for (auto [name, params] : nets) {
    CAPTURE(name);
    Recorded r = record(name);
    CHECK(r.params == params);
    CHECK(r.output == Shape{2, 10});
  }
  CHECK(record("resnet20", {.classes = 7}).output == Shape{2, 7});
}

TEST_CASE("model resnet110 with and without batch norm") {
  Recorded r = record("resnet110");
  CHECK(r.params == 1734858);
  CHECK(r.output == Shape{2, 10});
  CHECK(r.count("conv2d") == 111);
  CHECK(r.count("linear") == 1);
  CHECK(r.has_param("stage3/block0/shortcut/bn.weight"));
  CHECK(r.has_param("stage1/block17/conv2.bias"));
  Recorded plain = record("resnet110", {.batch_norm = false});
  CHECK(plain.params == 1726570);
  CHECK(plain.count("batch_norm") == 0);
  CHECK(plain.output == Shape{2, 10});
}

TEST_CASE("model resnet1001") {
  Recorded r = record("resnet1001");
  CHECK(r.params == 10327706);
  CHECK(r.output == Shape{2, 10});
  CHECK(r.count("conv2d") == 1000 + 3);  // 3 x 333 + stem, and three shortcut convs
  CHECK(r.count("add") == 333);
  ParamStore store;  // the same definition at depth 164 (He et al. 2016's other net)
  Tape tape(store);
  Value y = preact_resnet_cifar(tape.input("images", {1, 3, 32, 32}, DType::f32), 164);
  CHECK(store.count_elements(true) == 1703258);
  CHECK(y.shape() == Shape{1, 10});
}

TEST_CASE("model resnet18") {
  Recorded r = record("resnet18");
  CHECK(r.params == 11689512);
  CHECK(r.output == Shape{2, 1000});
  CHECK(r.has_param("stage2/block0/shortcut/conv.weight"));
  CHECK(!r.has_param("stage2/block0/conv1.bias"));  // BN follows
}

TEST_CASE("model resnet50") {
  Recorded r = record("resnet50");
  CHECK(r.params == 25557032);
  CHECK(r.output == Shape{2, 1000});
  CHECK(r.count("conv2d") == 53);
}

TEST_CASE("model densenet121 and the CIFAR DenseNet-BCs") {
  Recorded r = record_model("densenet121", {}, /*shapes_only=*/true);
  CHECK(r.params == 7978856);  // torchvision's densenet121
  CHECK(r.output == Shape{2, 1000});
  CHECK(r.count("conv2d") == 120);
  // BatchNorm over a concatenation, in every layer but each block's first, in each transition
  // and in the head: one op, no concat kept.
  CHECK(r.count("concat_batch_norm") == 54 + 4);
  CHECK(r.count("concat") == 0);
  CHECK(r.count("batch_norm") == 1 + 58 + 4);
  CHECK(r.has_param("block2/layer3/conv1.weight"));
  CHECK(r.has_param("transition1/bn.weight"));
  CHECK(!r.has_param("block1/layer0/conv2.bias"));
  Recorded c = record_model("densenet100", {}, true);
  CHECK(c.params == 769162);  // DenseNet-BC (L=100, k=12), as the paper's 0.8M
  CHECK(c.output == Shape{2, 10});
  CHECK(record("densenet40").count("conv2d") == 1 + 3 * 6 * 2 + 2);
  ParamStore store;
  Tape tape(store);
  CHECK_THROWS_WITH_AS(densenet_cifar(tape.input("x", {1, 3, 32, 32}, DType::f32), 50, 12),
                       "densenet: DenseNet-BC depth 50 is not 6n + 4 with n >= 1 (40, 100, 160, "
                       "...)",
                       Error);
}

TEST_CASE("model_loss matches the output kind") {
  ParamStore store;
  Tape tape(store);
  Value labels = tape.input("labels", {2}, DType::i32);
  Value scores = tape.input("scores", {2, 10}, DType::f32);
  model_loss(find_model("vgg-a"), scores, labels);
  CHECK(tape.ops().back().op->name() == "nll_loss");
  model_loss(find_model("resnet20"), scores, labels);
  CHECK(tape.ops().back().op->name() == "softmax_cross_entropy");
}

TEST_CASE("resnet20 planned training step is bitwise equal to baseline") {
  std::vector<Tensor> base = train_model("resnet20", MemoryMode::baseline, 2);
  std::vector<Tensor> planned = train_model("resnet20", MemoryMode::planned, 2);
  REQUIRE(base.size() == planned.size());
  CHECK(base[0].data<float>()[0] > 0);
  for (size_t i = 0; i < base.size(); ++i) {
    CAPTURE(i);
    CHECK(bitwise_equal(base[i], planned[i]));
  }
}
