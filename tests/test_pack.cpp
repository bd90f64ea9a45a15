// Packing (ExecutorOptions::pack): ReLU outputs that backward reads leave the arena after
// their last forward reader and wait for backward packed, a bit per element and the nonzero
// elements, each in as few bits as its group's exponents need. The kernels give back every
// bit (signed zeros, NaN, subnormals; block edges; any thread count) in the words an
// independent count of the format says; the planned step keeps the baseline's bits with a
// smaller arena; the packed memory is what the zeros leave, kept from step to step. Past 400
// lines: the kernels' cases share the generators and the independent word count here.
#include <doctest/doctest.h>

#include <omp.h>

#include <cstring>
#include <limits>

#include "check/modecheck.h"
#include "core/rng.h"
#include "layers/add.h"
#include "layers/batchnorm2d.h"
#include "layers/conv2d.h"
#include "layers/relu.h"
#include "memory/encodings.h"
#include "memory/rebuild.h"
#include "models/registry.h"
#include "models/step.h"
#include "recorded_model.h"
#include "run/plan.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

// n elements of type T, each zero with probability `zeros`, else a value of one of the kinds
// packing must keep whole: normal, -0.0, NaN, a subnormal, infinity.
template <typename T>
Tensor sparse_tensor(int64_t n, double zeros, uint64_t seed) {
  Tensor t = Tensor::empty({n}, std::is_same_v<T, float> ? DType::f32 : DType::f64);
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const double u = rng.uniform();
    T v = static_cast<T>(rng.normal());
    if (u < zeros)
      v = T(0);
    else if (u < zeros + 0.01)
      v = -T(0);
    else if (u < zeros + 0.02)
      v = std::numeric_limits<T>::quiet_NaN();
    else if (u < zeros + 0.03)
      v = std::numeric_limits<T>::denorm_min();
    else if (u < zeros + 0.04)
      v = std::numeric_limits<T>::infinity();
    t.data<T>()[i] = v;
  }
  return t;
}

// The words the format (Backend::pack) gives x's blocks, counted here element by element: per
// block the smaller of a mask and its nonzero elements, or all of its elements (every element
// a value where the two tie); in f32 each whole group of kPackGroup values a header word and
// 8 (23 + e + s) words, e the bits of its exponents' range, s 1 where a sign bit is set.
template <typename U>
int64_t group_words(const std::vector<U>& v) {
  int64_t words = static_cast<int64_t>(v.size());
  if constexpr (sizeof(U) == 4) {
    words %= kPackGroup;
    for (size_t g = 0; g + kPackGroup <= v.size(); g += kPackGroup) {
      uint32_t lo = 255, hi = 0, sign = 0;
      for (size_t i = g; i < g + kPackGroup; ++i) {
        lo = std::min(lo, (v[i] >> 23) & 0xffu), hi = std::max(hi, (v[i] >> 23) & 0xffu);
        sign |= v[i] >> 31;
      }
      int e = 0;
      while ((1u << e) <= hi - lo) ++e;
      words += 1 + 8 * (23 + e + static_cast<int>(sign));
    }
  }
  return words;
}

template <typename U>
int64_t expected_words(const Tensor& x, std::vector<int64_t>* per_block = nullptr) {
  const U* bits = static_cast<const U*>(x.raw());
  int64_t words = 0;
  for (int64_t b = 0; b < packed_blocks(x.numel()); ++b) {
    const int64_t m = packed_block_size(x.numel(), b);
    std::vector<U> all(bits + b * kPackBlock, bits + b * kPackBlock + m), nonzero;
    for (U v : all)
      if (v != 0) nonzero.push_back(v);
    const int64_t dense = group_words(all);
    const int64_t sparse = packed_mask_words(m, x.dtype()) + group_words(nonzero);
    words += std::min(dense, sparse);
    if (per_block) per_block->push_back(std::min(dense, sparse));
  }
  return words;
}

int64_t expected(const Tensor& x) {
  return x.dtype() == DType::f32 ? expected_words<uint32_t>(x) : expected_words<uint64_t>(x);
}

// Packs x, checks the words against the count above, unpacks into poisoned memory and
// compares every bit.
void packs_back(Backend& be, const Tensor& x) {
  std::vector<int64_t> counts;
  const int64_t words = be.pack_counts(x, counts);
  CHECK(words == expected(x));
  CHECK(static_cast<int64_t>(counts.size()) == packed_blocks(x.numel()));
  Tensor packed = Tensor::empty({packed_bytes(x.numel(), words, x.dtype())}, DType::u8);
  be.pack(x, counts, packed);
  Tensor back = Tensor::empty(x.shape(), x.dtype());
  be.fill(back, 5.0);
  be.unpack(packed, back);
  CHECK(std::memcmp(back.raw(), x.raw(), x.bytes()) == 0);
}

template <typename T>
void round_trip(Backend& be, int64_t n, double zeros) {
  CAPTURE(n);
  CAPTURE(zeros);
  packs_back(be, sparse_tensor<T>(n, zeros, static_cast<uint64_t>(n) * 7 + 1));
}

// A ReLU's output: zeros with probability `zeros`, else positive values of every kind packing
// must keep whole (normal, subnormal, +inf, NaNs with a clear sign bit).
Tensor relu_like(int64_t n, double zeros, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::f32);
  Rng rng(seed);
  uint32_t* bits = static_cast<uint32_t*>(t.raw());
  for (int64_t i = 0; i < n; ++i) {
    const double u = rng.uniform();
    float v = std::fabs(static_cast<float>(rng.normal()));
    if (u < zeros) v = 0;
    if (u >= zeros && u < zeros + 0.04) v = std::numeric_limits<float>::denorm_min();
    if (u >= zeros + 0.04 && u < zeros + 0.05) v = std::numeric_limits<float>::infinity();
    std::memcpy(&bits[i], &v, 4);
    if (u >= zeros + 0.05 && u < zeros + 0.06) bits[i] = 0x7fc00000u;  // the quiet NaN
    if (u >= zeros + 0.06 && u < zeros + 0.07) bits[i] = 0x7fffffffu;  // every payload bit
  }
  return t;
}

// n elements from a normal distribution of deviation 2 (no zeros; a BatchNorm's output), all
// positive where `positive`.
Tensor normal_tensor(int64_t n, bool positive, uint64_t seed) {
  Tensor t = Tensor::empty({n}, DType::f32);
  Rng rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const float v = 2 * static_cast<float>(rng.normal());
    t.data<float>()[i] = positive ? std::fabs(v) : v;
  }
  return t;
}

// conv -> batch_norm -> relu, then residual blocks: the ReLU outputs the convolutions read.
Value residual_net(Value x) {
  Value h = relu(batch_norm(conv2d(x, {.out = 6, .kernel = 3, .pad = 1})));
  for (int b = 0; b < 2; ++b) {
    Value y = relu(batch_norm(conv2d(h, {.out = 6, .kernel = 3, .pad = 1})));
    y = batch_norm(conv2d(y, {.out = 6, .kernel = 3, .pad = 1}));
    h = relu(add(y, h));
  }
  return h;
}

}  // namespace

TEST_CASE("pack: every bit comes back, at block edges and in f32 and f64") {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, kPackBlock - 1, kPackBlock,
                    kPackBlock + 1, 3 * kPackBlock + 13})
    for (double zeros : {0.0, 0.5, 0.96}) {
      round_trip<float>(cpu_backend(), n, zeros);
      round_trip<double>(cpu_backend(), n, zeros);
    }
  // All zeros: the header, the mask and the spare.
  Tensor z = Tensor::empty({100}, DType::f32);
  cpu_backend().fill(z, 0.0);
  std::vector<int64_t> counts;
  CHECK(cpu_backend().pack_counts(z, counts) == 4);
  CHECK(packed_bytes(100, 4, DType::f32) == 8 + 4 * (4 + kPackSpare));
  packs_back(cpu_backend(), z);
}

TEST_CASE("pack: a group's values take the bits their exponents need, every bit back") {
  for (int64_t n :
       {int64_t{255}, int64_t{256}, int64_t{257}, int64_t{511}, int64_t{512}, int64_t{777},
        kPackBlock - 1, kPackBlock, kPackBlock + 300, 3 * kPackBlock + 13})
    for (double zeros : {0.0, 0.5, 0.97}) {
      CAPTURE(n);
      CAPTURE(zeros);
      packs_back(cpu_backend(), relu_like(n, zeros, static_cast<uint64_t>(n) * 3 + 2));
      if (zeros == 0.0)
        for (bool positive : {false, true})
          packs_back(cpu_backend(), normal_tensor(n, positive, 5));
    }
  // Whole blocks whose widths are known: values in [1, 2) share one exponent (23 bits each);
  // a sign bit set widens its group alone (24 bits); a subnormal next to them needs 7 exponent
  // bits (30); a ReLU-like block with subnormals, infinities and NaNs all 8 (31 bits).
  Tensor one = Tensor::empty({kPackBlock}, DType::f32);
  for (int64_t i = 0; i < kPackBlock; ++i)
    one.data<float>()[i] = 1.0f + static_cast<float>(i) / kPackBlock;
  packs_back(cpu_backend(), one);
  CHECK(expected(one) == kPackBlock / kPackGroup * (1 + 8 * 23));
  one.data<float>()[300] = -1.5f;
  CHECK(expected(one) == kPackBlock / kPackGroup * (1 + 8 * 23) + 8);
  packs_back(cpu_backend(), one);
  one.data<float>()[300] = 1e-40f;
  CHECK(expected(one) == kPackBlock / kPackGroup * (1 + 8 * 23) + 8 * 7);
  packs_back(cpu_backend(), one);
  const Tensor full = relu_like(kPackBlock, 0.0, 11);
  CHECK(expected(full) == kPackBlock / kPackGroup * (1 + 8 * 31));
  packs_back(cpu_backend(), full);
  // A normal activation's group spans about ten binades: 28 bits a value, 27 without signs,
  // and a block of them keeps no mask (no zeros to leave out).
  for (bool positive : {false, true}) {
    const Tensor x = normal_tensor(kPackBlock, positive, 17);
    const double bits = 32.0 * static_cast<double>(expected(x)) / kPackBlock;
    MESSAGE("normal values, ", std::string(positive ? "positive" : "signed"), ": ", bits,
            " bits each");
    CHECK(bits < (positive ? 27.4 : 28.4));
  }
  // One zero in a block of normal values: the zero a value (a wider group) costs less than a
  // mask; many zeros make the mask pay.
  Tensor few = normal_tensor(kPackBlock, false, 18);
  few.data<float>()[100] = 0;
  std::vector<int64_t> counts;
  cpu_backend().pack_counts(few, counts);
  Tensor p = Tensor::empty({packed_bytes(kPackBlock, counts[0], DType::f32)}, DType::u8);
  cpu_backend().pack(few, counts, p);
  CHECK((reinterpret_cast<int64_t*>(p.data<uint8_t>())[0] & kPackMaskBit) == 0);
  packs_back(cpu_backend(), few);
  const Tensor half = relu_like(kPackBlock, 0.5, 19);
  cpu_backend().pack_counts(half, counts);
  p = Tensor::empty({packed_bytes(kPackBlock, counts[0], DType::f32)}, DType::u8);
  cpu_backend().pack(half, counts, p);
  CHECK((reinterpret_cast<int64_t*>(p.data<uint8_t>())[0] & kPackMaskBit) != 0);
}

TEST_CASE("pack: the same bytes on one thread and on two, and on the simulated device") {
  for (int kind = 0; kind < 3; ++kind) {
    CAPTURE(kind);
    const Tensor x = kind == 0   ? relu_like(5 * kPackBlock + 3, 0.5, 9)
                     : kind == 1 ? sparse_tensor<float>(5 * kPackBlock + 3, 0.5, 9)
                                 : normal_tensor(5 * kPackBlock + 3, false, 9);
    auto packed_with = [&](int threads) {
      omp_set_num_threads(threads);
      Backend& be = cpu_backend();
      std::vector<int64_t> counts;
      const int64_t words = be.pack_counts(x, counts);
      Tensor p = Tensor::empty({packed_bytes(x.numel(), words, x.dtype())}, DType::u8);
      be.pack(x, counts, p);
      return p;
    };
    const Tensor one = packed_with(1), two = packed_with(2);
    omp_set_num_threads(2);
    REQUIRE(one.meta() == two.meta());
    CHECK(std::memcmp(one.raw(), two.raw(), one.bytes()) == 0);
    // On the simulated device (the CPU's kernels over memory host code cannot touch).
    Backend& sim = sim_backend();
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), Role::output, sim.allocator());
    sim.copy_to_device(x, dx);
    std::vector<int64_t> counts;
    const int64_t words = sim.pack_counts(dx, counts);
    Tensor dp = Tensor::empty({packed_bytes(x.numel(), words, x.dtype())}, DType::u8, Role::saved,
                              sim.allocator());
    sim.pack(dx, counts, dp);
    CHECK(std::memcmp(to_host(sim, dp).raw(), one.raw(), one.bytes()) == 0);
    Tensor dback = Tensor::empty(x.shape(), x.dtype(), Role::output, sim.allocator());
    sim.unpack(dp, dback);
    CHECK(std::memcmp(to_host(sim, dback).raw(), x.raw(), x.bytes()) == 0);
  }
}

TEST_CASE("pack: wrong counts, sizes and corrupt headers are errors") {
  const Tensor x = sparse_tensor<float>(2 * kPackBlock, 0.5, 3);
  std::vector<int64_t> counts;
  const int64_t words = cpu_backend().pack_counts(x, counts);
  Tensor small = Tensor::empty({packed_bytes(x.numel(), words - 1, x.dtype())}, DType::u8);
  CHECK_THROWS_WITH(
      cpu_backend().pack(x, counts, small),
      doctest::Contains(("blocks take " + std::to_string(words) + " elements").c_str()));
  std::vector<int64_t> bad = counts;
  bad[0] = packed_block_max_words(kPackBlock, DType::f32) + 1;
  Tensor p = Tensor::empty({packed_bytes(x.numel(), words, x.dtype())}, DType::u8);
  CHECK_THROWS_WITH(cpu_backend().pack(x, bad, p), doctest::Contains("block 0 counts"));
  CHECK_THROWS_WITH(cpu_backend().pack(x, std::vector<int64_t>{1}, p),
                    doctest::Contains("1 block counts"));
  // Counts of another tensor: nothing written past the runs they give, and an error.
  const Tensor other_x = sparse_tensor<float>(2 * kPackBlock, 0.2, 4);
  CHECK_THROWS_WITH(cpu_backend().pack(other_x, counts, p),
                    doctest::Contains("elements of words, its count says"));
  const Tensor other_d = sparse_tensor<double>(2 * kPackBlock, 0.2, 4);
  Tensor pd = Tensor::empty({packed_bytes(other_d.numel(), words, DType::f64)}, DType::u8);
  CHECK_THROWS_WITH(cpu_backend().pack(other_d, counts, pd),
                    doctest::Contains("elements of words, its count says"));
  cpu_backend().pack(x, counts, p);
  Tensor other = Tensor::empty({3 * kPackBlock}, DType::f32);
  CHECK_THROWS_WITH(cpu_backend().unpack(p, other), doctest::Contains("does not hold"));
  // Corrupt forms of a packed ReLU output (block 0 masked, block 1 not, block 2 masked):
  // each an error before anything is written, and the intact form unpacks again.
  Tensor relu = relu_like(3 * kPackBlock, 0.4, 14);
  for (int64_t i = kPackBlock; i < 2 * kPackBlock; ++i)
    relu.data<float>()[i] = 1.0f + static_cast<float>(i % 100) / 100;
  std::vector<int64_t> relu_counts;
  const int64_t relu_words = cpu_backend().pack_counts(relu, relu_counts);
  Tensor rp = Tensor::empty({packed_bytes(relu.numel(), relu_words, DType::f32)}, DType::u8);
  cpu_backend().pack(relu, relu_counts, rp);
  int64_t* headers = reinterpret_cast<int64_t*>(rp.data<uint8_t>());
  REQUIRE((headers[0] & kPackMaskBit) != 0);
  REQUIRE((headers[1] & kPackMaskBit) == 0);
  uint32_t* words32 = reinterpret_cast<uint32_t*>(rp.data<uint8_t>() + 8 * 3);
  Tensor back = Tensor::empty(relu.shape(), DType::f32);
  cpu_backend().fill(back, 5.0);
  auto fails = [&](const char* what) {
    CHECK_THROWS_WITH(cpu_backend().unpack(rp, back), doctest::Contains(what));
    for (int64_t i = 0; i < back.numel(); ++i) REQUIRE(back.data<float>()[i] == 5.0f);
  };
  headers[1] += 8;  // block 1 starts a group's width later
  fails("block 0 holds");
  headers[1] -= 8;
  headers[1] |= kPackMaskBit;  // block 1 said to keep a mask
  fails("block 1 holds");
  headers[1] &= ~kPackMaskBit;
  const int64_t group = headers[1];  // block 1's first group header, then its width
  words32[group] ^= 0x10000u;
  fails("block 1 holds");
  words32[group] ^= 0x10000u;
  words32[group] += 1u << 8;
  fails("block 1 holds");
  words32[group] -= 1u << 8;
  headers[1] = -5;
  fails("block 0 holds -5");
  headers[1] = group ^ std::numeric_limits<int64_t>::min();  // its sign bit: no overflow
  fails("block 0 holds -9223372036854");
  headers[1] = std::numeric_limits<int64_t>::min();
  fails("block 0 holds -9223372036854775808");
  headers[1] = group;
  Tensor short_p = Tensor::empty({rp.numel() - 32}, DType::u8);
  std::memcpy(short_p.raw(), rp.raw(), static_cast<size_t>(short_p.numel()));
  CHECK_THROWS_WITH(cpu_backend().unpack(short_p, back), doctest::Contains("block 2 holds"));
  cpu_backend().unpack(rp, back);
  CHECK(std::memcmp(back.raw(), relu.raw(), relu.bytes()) == 0);
  Tensor i32 = Tensor::empty({4}, DType::i32);
  CHECK_THROWS_WITH(cpu_backend().pack_counts(i32, counts), doctest::Contains("f32 or f64"));
}

TEST_CASE("pack: the ReLU outputs leave the arena between forward and backward") {
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {8, 3, 16, 16}, DType::f32);
  conv2d(residual_net(x), {.out = 4, .kernel = 1});
  LayoutOptions plain{.optimizer = true}, packed{.optimizer = true};
  packed.pack = true;
  const Layout a = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), plain);
  const Layout b = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), packed);
  int relus = 0, packs = 0;
  for (size_t k = 0; k < tape.ops().size(); ++k) {
    const bool relu = tape.ops()[k].op->name() == "relu";
    relus += relu;
    CHECK(b.live.packed[k] == relu);  // every ReLU here is read by a convolution's backward
    CHECK_FALSE(a.live.packed[k]);
    if (!b.live.packed[k]) continue;
    ++packs;
    const int v = tape.ops()[k].outputs[0];
    const Buffer& dense = b.live.buffers[static_cast<size_t>(b.live.value_buffer[v])];
    const Buffer& back = b.live.buffers[static_cast<size_t>(b.live.rebuilt_buffer[v])];
    CHECK(dense.last < b.live.ops);  // dies in forward
    CHECK(back.first == b.live.op_rebuild_step[k]);
    CHECK(b.live.rebuild_scratch[k] == -1);
  }
  CHECK(relus == 5);
  CHECK(packs == relus);
  MESSAGE("residual net b8: planned arena ", a.plan.arena_bytes, " bytes, with packing ",
          b.plan.arena_bytes);
  CHECK(b.plan.arena_bytes < a.plan.arena_bytes * 0.75);
  // Baseline and inference never pack; a rebuilt ReLU is rebuilt, not packed.
  const Layout base =
      memory_layout(tape, Mode::training, MemoryMode::baseline, cpu_backend(), packed);
  for (bool p : base.live.packed) CHECK_FALSE(p);
  LayoutOptions both = packed;
  both.recompute = Recompute::all;
  const Layout c = memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), both);
  for (size_t k = 0; k < tape.ops().size(); ++k) CHECK_FALSE(c.live.packed[k]);
}

TEST_CASE("pack: planned with packing gives the baseline's bits, alone and with rebuilds") {
  check_planned_equals_baseline(residual_net, {4, 3, 8, 8});
  // Packing beside the cheap rebuilds, which rebuild some ReLUs and leave others packed.
  const std::vector<Tensor> base = train_model("resnet20", MemoryMode::baseline, 2);
  for (Recompute r : {Recompute::none, Recompute::cheap}) {
    CAPTURE(recompute_name(r));
    const std::vector<Tensor> packed =
        train_model("resnet20", MemoryMode::planned, 2, {}, r, 0, true);
    REQUIRE(base.size() == packed.size());
    for (size_t i = 0; i < base.size(); ++i) {
      CAPTURE(i);
      CHECK(bitwise_equal(base[i], packed[i]));
    }
  }
}

TEST_CASE("pack: input gradients over inputs are chosen over the packed step") {
  // Whether convolutions write their input gradients over their inputs is chosen by the
  // arena it gives; packing changes which inputs die there (a packed ReLU output's copies),
  // so the choice is scored with the packed step: ResNet-50's arena is the smaller of the two.
  ParamStore store = ParamStore::shapes_only();
  Tape tape(store, DType::f32);
  const ModelStep st = record_model_step(tape, find_model("resnet50"), 2, Mode::training, {});
  LayoutOptions options{.optimizer = true, .keep = {st.out().id()}};
  options.pack = true;
  const Layout chosen =
      memory_layout(tape, Mode::training, MemoryMode::planned, cpu_backend(), options);
  Step step = lower_step(tape, Mode::training, cpu_backend());
  choose_encodings(step, options.keep);
  LivenessOptions lo;
  lo.optimizer = true;
  lo.keep = options.keep;
  for (size_t k = 0; k < step.ops.size(); ++k)
    if (step.ops[k].roles.sparse_outputs) lo.pack.push_back(static_cast<int>(k));
  for (bool takes : {false, true}) {
    CAPTURE(takes);
    lo.grads_take_inputs = takes;
    CHECK(chosen.plan.arena_bytes <= planned_arena_bytes(step, lo, options.alignment));
  }
}

TEST_CASE("pack: ResNet-18 and DenseNet-121 give the same bits packed") {
  for (const char* name : {"resnet18", "densenet121"}) {
    CAPTURE(name);
    const std::vector<Tensor> base = train_model(name, MemoryMode::baseline, 2);
    const std::vector<Tensor> packed =
        train_model(name, MemoryMode::planned, 2, {}, Recompute::none, 0, true);
    REQUIRE(base.size() == packed.size());
    for (size_t i = 0; i < base.size(); ++i) {
      CAPTURE(i);
      CHECK(bitwise_equal(base[i], packed[i]));
    }
  }
}

TEST_CASE("pack: the packed bytes are what the zeros leave, reused by the next step") {
  ParamStore store(1);
  Tape tape(store, DType::f32);
  Value x = tape.input("x", {4, 3, 16, 16}, DType::f32);
  Value y = conv2d(residual_net(x), {.out = 4, .kernel = 1});
  Allocator& alloc = cpu_backend().allocator();
  Executor ex(tape, cpu_backend(),
              {.memory = MemoryMode::planned,
               .keep = {y},
               .optimizer = OptimizerConfig{.lr = 0.1},
               .pack = true});
  ex.set_input(x, random_tensor({4, 3, 16, 16}, 1, -1, 1, DType::f32));
  Tensor seed = Tensor::empty(y.shape(), DType::f32);
  cpu_backend().fill(seed, 1.0);
  std::pair<Value, Tensor> s{y, seed};
  const size_t before = alloc.current_bytes();
  ex.forward();
  const size_t packed = alloc.current_bytes() - before;
  // Five ReLU outputs of 4 x 6 x 16 x 16 floats, about half of them zero after BatchNorm.
  const double dense = 5.0 * 4 * 6 * 16 * 16 * 4;
  MESSAGE("packed ", packed, " bytes for ", dense, " dense");
  CHECK(packed > 0.3 * dense);
  CHECK(packed < 0.75 * dense);
  ex.backward(std::span<const std::pair<Value, Tensor>>(&s, 1));
  size_t momentum = 0;
  for (Parameter* p : store.all())
    if (p->momentum.defined()) momentum += p->momentum.bytes();
  CHECK(alloc.current_bytes() - before == packed + momentum);  // kept for the next step
  // Later steps pack into the same memory where it is large enough: the same inputs and
  // weights that SGD moves a little, so little growth.
  for (int step = 0; step < 2; ++step) {
    ex.forward();
    ex.backward(std::span<const std::pair<Value, Tensor>>(&s, 1));
  }
  CHECK(alloc.current_bytes() - before - momentum < packed * 1.2);
  // A backward whose forward did not pack (a second backward) is an error, not a stale read.
  CHECK_THROWS_WITH(ex.backward(std::span<const std::pair<Value, Tensor>>(&s, 1)),
                    doctest::Contains("backward before forward"));
  CHECK_THROWS_WITH(
      Executor(tape, cpu_backend(), {.memory = MemoryMode::baseline, .keep = {y}, .pack = true}),
      doctest::Contains("pack keeps ReLU outputs packed"));
}
