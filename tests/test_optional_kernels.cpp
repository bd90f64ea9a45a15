// What a device without the optional kernels (packing, batch and layer norms from their
// outputs) does when a step asks for them: each is refused by name before anything runs, on
// the simulated device that offers none of them (sim_backend_without_optional_kernels, as a GPU
// without them: tests/cuda/test_cuda.cpp checks CUDA's offers), while the same steps without
// them run there with the CPU's bits.
#include <doctest/doctest.h>

#include "check/gradcheck.h"
#include "layers/batchnorm2d.h"
#include "layers/layer_norm.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "run/executor.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

Backend& lean() {
  return sim_backend_without_optional_kernels();
}

// y = linear(norm(x)) for a layer norm or a batch norm (from its output or not): the linear
// layer's weight gradient keeps the norm's output, so the norm may read it in backward.
struct NormNet {
  ParamStore store;
  Tape tape{store, DType::f32};
  Value x, y;
  NormNet(Backend& be, bool layer, bool from_output) : store(7, be) {
    x = tape.input("x", {4, 3, 2, 2}, DType::f32, true);
    Value n = layer ? layer_norm(x, 3, {.name = "ln", .from_output = from_output})
                    : batch_norm(x, {.name = "bn", .from_output = from_output});
    y = linear(n, {.out = 5, .name = "fc"});
  }
};

// The norm net's y and x's gradient after one training forward and backward on `be`.
std::vector<Tensor> norm_step(Backend& be, bool layer) {
  NormNet net(be, layer, false);
  Executor ex(net.tape, be, {.keep = {net.x, net.y}, .optimizer = std::nullopt});
  ex.set_input(net.x, random_tensor({4, 3, 2, 2}, 5, -1, 1, DType::f32));
  ex.forward();
  const std::pair<Value, Tensor> seed{net.y, random_tensor(net.y.shape(), 6, -1, 1, DType::f32)};
  ex.backward(std::span(&seed, 1));
  return {clone_to_host(be, ex.value(net.y)), clone_to_host(be, ex.grad(net.x))};
}

// Makes an executor that packs the ReLU output of linear(relu(linear(x))) on `be`.
void make_packing_executor(Backend& be) {
  ParamStore store(7, be);
  Tape tape(store);
  Value x = tape.input("x", {4, 8}, DType::f32, true);
  Value y = linear(relu(linear(x, {.out = 16})), {.out = 3});
  ExecutorOptions o{.memory = MemoryMode::planned, .keep = {y}, .optimizer = std::nullopt};
  o.pack = true;
  Executor ex(tape, be, o);
}

}  // namespace

TEST_CASE("a device without the optional kernels says so, and its kernels refuse by name") {
  CHECK_FALSE(lean().offers_packing());
  CHECK_FALSE(lean().offers_batchnorm_from_output());
  CHECK_FALSE(lean().offers_layernorm_from_output());
  CHECK(sim_backend().offers_packing());
  CHECK(sim_backend().offers_layernorm_from_output());
  const Tensor host = random_tensor({2 * kPackBlock}, 1, -1, 1, DType::f32);
  Tensor x = Tensor::empty(host.shape(), DType::f32, Role::output, lean().allocator());
  lean().copy_to_device(host, x);
  std::vector<int64_t> counts;
  CHECK_THROWS_WITH_AS(lean().pack_counts(x, counts),
                       doctest::Contains("pack: no packing kernels on sim"), Error);
  Tensor none;
  CHECK_THROWS_WITH_AS(
      lean().layernorm_backward_from_output(x, x, x, x, x, none, none, none),
      doctest::Contains("layer_norm backward from its output (--ln-from-output) does not run "
                        "on sim"),
      Error);
  CHECK_THROWS_WITH_AS(
      lean().batchnorm_backward_from_output(x, x, x, x, x, none, none, none),
      doctest::Contains("batch_norm backward from its output (--bn-from-output) does not run "
                        "on sim"),
      Error);
}

TEST_CASE("a device without the optional kernels: norms from their outputs refused in forward") {
  for (bool layer : {true, false}) {
    CAPTURE(layer);
    NormNet net(lean(), layer, true);
    Executor ex(net.tape, lean(), {.keep = {net.y}, .optimizer = std::nullopt});
    ex.set_input(net.x, random_tensor({4, 3, 2, 2}, 5, -1, 1, DType::f32));
    CHECK_THROWS_WITH_AS(
        ex.forward(),
        doctest::Contains(layer ? "layer_norm ln: from its output (--ln-from-output) does not "
                                  "run on sim"
                                : "batch_norm bn: from its output (--bn-from-output) does not "
                                  "run on sim"),
        Error);
    // The same net asked for them on the device that has them runs.
    NormNet again(sim_backend(), layer, true);
    Executor full(again.tape, sim_backend(), {.keep = {again.y}, .optimizer = std::nullopt});
    full.set_input(again.x, random_tensor({4, 3, 2, 2}, 5, -1, 1, DType::f32));
    CHECK_NOTHROW(full.forward());
  }
}

TEST_CASE("a device without the optional kernels: packing refused when the executor is made") {
  CHECK_THROWS_WITH_AS(make_packing_executor(lean()),
                       doctest::Contains("executor: pack: no packing kernels on sim; train "
                                         "without packing there"),
                       Error);
  CHECK_NOTHROW(make_packing_executor(sim_backend()));
}

TEST_CASE("a device without the optional kernels runs the rest with the CPU's bits") {
  for (bool layer : {true, false}) {
    CAPTURE(layer);
    const std::vector<Tensor> cpu = norm_step(cpu_backend(), layer);
    const std::vector<Tensor> dev = norm_step(lean(), layer);
    CHECK(bitwise_equal(cpu[0], dev[0]));
    CHECK(bitwise_equal(cpu[1], dev[1]));
  }
}
