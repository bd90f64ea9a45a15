// safetensors files and weights: a round trip of every dtype, a file written by hand as the
// format's reference writes it, the header layout, and each corruption (truncated, bad JSON,
// unknown dtype, offsets out of range, gaps, wrong shapes, missing or foreign tensors).
#include <doctest/doctest.h>

#include <csignal>
#include <cstring>
#include <filesystem>

#include "data/safetensors.h"
#include "tests/alloc_cap.h"
#include "tests/temp_dir.h"
#include "train/weights.h"

using namespace frugal;
using namespace frugal::testing;

namespace {

using Bytes = std::vector<unsigned char>;

// 8-byte little-endian length, the header text, then the data.
Bytes safetensors_bytes(const std::string& header, const Bytes& data) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes floats(std::initializer_list<float> v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

Tensor tensor_f32(Shape s, std::initializer_list<float> v) {
  Tensor t = Tensor::empty(std::move(s), DType::f32);
  std::memcpy(t.raw(), std::data(v), v.size() * 4);
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.meta() == b.meta() && std::memcmp(a.raw(), b.raw(), a.meta().bytes()) == 0;
}

}  // namespace

TEST_CASE("safetensors: round trip of every dtype, metadata and header layout") {
  TempDir dir("frugal-st");
  Safetensors f;
  Tensor d = Tensor::empty({3}, DType::f64);
  for (int i = 0; i < 3; ++i) d.data<double>()[i] = 0.1 * i;
  Tensor n = Tensor::empty({2, 2}, DType::i32);
  for (int i = 0; i < 4; ++i) n.data<int32_t>()[i] = -i;
  Tensor u = Tensor::empty({5}, DType::u8);
  for (int i = 0; i < 5; ++i) u.data<uint8_t>()[i] = static_cast<uint8_t>(250 + i);
  f.tensors = {{"block1/conv.weight", tensor_f32({1, 2, 1, 1}, {1.5f, -2.0f})},
               {"d", d},
               {"n", n},
               {"u", u},
               {"empty", Tensor::empty({0, 3}, DType::f32)}};
  f.metadata = {{"model", "small-cnn"}, {"global_step", "42"}};
  save_safetensors(dir / "a.safetensors", f);

  const Bytes bytes = read_bytes(dir / "a.safetensors");
  uint64_t n_header = 0;
  for (int i = 7; i >= 0; --i) n_header = n_header << 8 | bytes[size_t(i)];
  CHECK(n_header % 8 == 0);
  CHECK(bytes.size() == 8 + n_header + 8 + 24 + 16 + 5);
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + int64_t(n_header));
  CHECK(header.starts_with("{\"__metadata__\":{\"global_step\":\"42\",\"model\":\"small-cnn\"}"));
  CHECK(header.find("\"block1/conv.weight\":{\"dtype\":\"F32\",\"shape\":[1,2,1,1],"
                    "\"data_offsets\":[0,8]}") != std::string::npos);
  CHECK(header.find("\"d\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[8,32]}") !=
        std::string::npos);

  const Safetensors g = load_safetensors(dir / "a.safetensors");
  CHECK(g.metadata == f.metadata);
  REQUIRE(g.tensors.size() == f.tensors.size());
  for (const auto& [name, t] : f.tensors) {
    REQUIRE(g.find(name) != nullptr);
    CHECK(same_bytes(*g.find(name), t));
  }
  CHECK(g.find("missing") == nullptr);
}

TEST_CASE("safetensors: reads a file laid out as the reference writer does") {
  // The bytes safetensors.numpy.save_file({"b": [3., 4.], "a": [[1.], [2.]]},
  // metadata={"x": "y"}) writes (safetensors 0.8): keys sorted, offsets in key order, the
  // header padded with a space to a multiple of 8 bytes.
  TempDir dir("frugal-st");
  const std::string header =
      R"({"__metadata__":{"x":"y"},"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}} )";
  REQUIRE(header.size() % 8 == 0);
  write_bytes(dir / "ref.safetensors", safetensors_bytes(header, floats({1, 2, 3, 4})));
  const Safetensors f = load_safetensors(dir / "ref.safetensors");
  REQUIRE(f.find("a") != nullptr);
  CHECK(f.find("a")->shape() == Shape{2, 1});
  CHECK(f.find("a")->data<float>()[1] == 2.0f);
  CHECK(f.find("b")->data<float>()[0] == 3.0f);
  CHECK(f.metadata == std::map<std::string, std::string>{{"x", "y"}});
}

TEST_CASE("safetensors: corrupt files give errors naming the file and the tensor") {
  TempDir dir("frugal-st");
  const std::string p = dir / "bad.safetensors";
  auto error_for = [&](const Bytes& b) {
    write_bytes(p, b);
    return error_message([&] { load_safetensors(p); });
  };
  const std::string good = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(error_message([&] { load_safetensors(dir / "none"); }) == dir / "none" + ": no such file");
  CHECK(error_for({1, 2, 3}) == p + ": truncated: 3 bytes, a safetensors file starts with an "
                                    "8-byte header length");
  Bytes b = safetensors_bytes(good, floats({1, 2}));
  b.resize(30);  // cut inside the header
  CHECK(error_for(b).find(p + ": header length 54 exceeds the file's 22 bytes") == 0);
  CHECK(error_for(safetensors_bytes("{\"w\": [1, 2", {})) ==
        p + ": the header is not a JSON object (bad JSON or not a safetensors file)");
  b = safetensors_bytes(good, floats({1, 2}));
  b.resize(b.size() - 3);  // truncated data
  CHECK(error_for(b) ==
        p + ": tensor 'w': data_offsets [0, 8] outside the 5 bytes of data (truncated file?)");
  CHECK(error_for(safetensors_bytes(R"({"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})",
                                    Bytes(4))) ==
        p + ": tensor 'w': dtype \"BF16\" is not one frugal reads (F32, F64, I32, U8)");
  CHECK(error_for(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                    floats({1, 2}))) ==
        p + ": tensor 'w': shape [3] F32 needs 12 bytes, data_offsets span 8");
  CHECK(error_for(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2]}})", floats({1, 2})))
            .find(p + ": tensor 'w': expected an object with dtype, shape and data_offsets") == 0);
  CHECK(error_for(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
                                    floats({1, 2})))
            .find("has a bad extent") != std::string::npos);
  CHECK(error_for(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                    floats({1, 2, 3}))) ==
        p + ": tensor 'b' starts at byte 8 of the data, expected 4 (gap)");
  CHECK(error_for(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    floats({1, 2}))) ==
        p + ": tensor 'b' starts at byte 4 of the data, expected 8 (overlap)");
  CHECK(error_for(safetensors_bytes(good, floats({1, 2, 3}))) ==
        p + ": the tensors cover 8 bytes of data, the file has 12 (trailing bytes)");
  CHECK(error_for(safetensors_bytes(R"({"__metadata__":{"step":3}})", {})) ==
        p + ": __metadata__ entry 'step' is not a string");
}

// Issue 15's headers: a shape whose element count wraps, JSON nested 100,000 deep, an entry
// too big to quote; each an error naming the file and the field, within little memory.
TEST_CASE("safetensors: hostile headers are bounded errors") {
  TempDir dir("frugal-st");
  const std::string p = dir / "bad.safetensors";
  auto capped = [&](const Bytes& b) {
    write_bytes(p, b);
    return run_capped([&] { load_safetensors(p); });
  };
  CHECK(capped(safetensors_bytes(
            R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", {})) ==
        "error: " + p +
            ": tensor 'w': shape [4294967296,4294967296]: the element count overflows 64 bits "
            "(corrupt header?)");
  CHECK(capped(safetensors_bytes(
            R"({"w":{"dtype":"F64","shape":[1099511627775,1099511627775],"data_offsets":[0,0]}})",
            {})) == "error: " + p +
                        ": tensor 'w': shape [1099511627775,1099511627775]: the element count "
                        "overflows 64 bits (corrupt header?)");
  const std::string deep = "{\"w\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK(capped(safetensors_bytes(deep, {})) ==
        "error: " + p + ": header: JSON nested deeper than 16 levels (not a safetensors header)");
  std::string wide = R"({"w":{"dtype":"F32","shape":[)";
  for (int i = 0; i < 100000; ++i) wide += "1,";
  wide += R"(1],"data_offsets":"x"}})";
  CHECK(capped(safetensors_bytes(wide, {})) ==
        "error: " + p + ": tensor 'w': data_offsets \"x\" is not [begin, end]");
  std::string shape = R"({"w":{"dtype":"F32","shape":[)";
  for (int i = 0; i < 100000; ++i) shape += "-1,";
  shape += R"(1],"data_offsets":[0,4]}})";
  CHECK(capped(safetensors_bytes(shape, {})) ==
        "error: " + p + ": tensor 'w': shape an array of 100001 entries has a bad extent");
}

TEST_CASE("safetensors: check_writable refuses what a save could not write, leaving nothing") {
  TempDir dir("frugal-st");
  CHECK(error_message([&] { check_writable(dir.path.string()); }) ==
        dir.path.string() + ": is a directory; give a file name, e.g. " +
            dir / "checkpoint.safetensors");
  CHECK(error_message([&] { check_writable(dir / "missing/ckpt.safetensors"); }) ==
        dir / "missing/ckpt.safetensors" + ": folder " + dir / "missing" + " does not exist");
  write_bytes(dir / "file", {1});
  CHECK(error_message([&] { check_writable(dir / "file/ckpt.safetensors"); }) ==
        dir / "file/ckpt.safetensors" + ": folder " + dir / "file" + " does not exist");
  CHECK(error_message([&] {
          check_writable("/proc/frugal-ckpt.safetensors");
        }).starts_with("/proc/frugal-ckpt.safetensors: cannot write in folder /proc: "));
  check_writable(dir / "ok.safetensors");  // writable: passes, and leaves nothing
  CHECK(!std::filesystem::exists(dir / "ok.safetensors"));
  CHECK(!std::filesystem::exists(dir / "ok.safetensors.tmp"));
}

TEST_CASE("safetensors: a save killed part way leaves the previous file loadable") {
  TempDir dir("frugal-st");
  const std::string p = dir / "ckpt.safetensors";
  Safetensors small;
  small.tensors.emplace_back("w", Tensor::zeros({2}, DType::f32));
  save_safetensors(p, small);
  Safetensors big;  // 64 MiB: long enough to be killed while writing
  big.tensors.emplace_back("w", Tensor::zeros({int64_t{16} << 20}, DType::f32));
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (;;) save_safetensors(p, big);
  }
  while (!std::filesystem::exists(p + ".tmp")) usleep(100);
  usleep(2000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const Safetensors back = load_safetensors(p);  // the old file or a whole new one
  REQUIRE(back.find("w") != nullptr);
  CHECK((back.find("w")->numel() == 2 || back.find("w")->numel() == int64_t{16} << 20));
}

TEST_CASE("weights: load checks names, shapes and model before copying") {
  TempDir dir("frugal-st");
  ParamStore store(1);
  Parameter& w = store.get_or_create("fc.weight", {{2, 3}, DType::f32}, Init::normal(1), true);
  store.get_or_create("bn.running_mean", {{2}, DType::f32}, Init::zeros(), false);
  w.momentum = Tensor::zeros({2, 3}, DType::f32);
  w.momentum.data<float>()[4] = 0.5f;
  save_safetensors(dir / "w.safetensors", weights_tensors(store, true, {{"model", "m"}}));

  ParamStore other(2);
  Parameter& w2 = other.get_or_create("fc.weight", {{2, 3}, DType::f32}, Init::normal(1), true);
  other.get_or_create("bn.running_mean", {{2}, DType::f32}, Init::ones(), false);
  const Safetensors f = load_safetensors(dir / "w.safetensors");
  load_weights(other, f, "w.safetensors", "m", false);
  CHECK(same_bytes(w2.value, w.value));
  CHECK(!w2.momentum.defined());  // eval: momentum ignored
  load_weights(other, f, "w.safetensors", "m", true);
  CHECK(same_bytes(w2.momentum, w.momentum));
  CHECK(other.find("bn.running_mean")->value.data<float>()[1] == 0.0f);

  CHECK(error_message([&] { load_weights(other, f, "w.st", "resnet20", false); }) ==
        "w.st: weights of model 'm', not of resnet20");
  ParamStore wider(3);
  wider.get_or_create("fc.weight", {{4, 3}, DType::f32}, Init::zeros(), true);
  wider.get_or_create("bn.running_mean", {{2}, DType::f32}, Init::zeros(), false);
  CHECK(error_message([&] { load_weights(wider, f, "w.st", "m", false); }) ==
        "w.st: tensor 'fc.weight' is [2,3] f32, model m expects [4,3] f32");
  ParamStore more(4);
  more.get_or_create("fc.weight", {{2, 3}, DType::f32}, Init::zeros(), true);
  more.get_or_create("bn.running_mean", {{2}, DType::f32}, Init::zeros(), false);
  more.get_or_create("fc.bias", {{2}, DType::f32}, Init::zeros(), true);
  CHECK(error_message([&] { load_weights(more, f, "w.st", "m", false); }) ==
        "w.st: missing tensor 'fc.bias' [2] f32 of model m");
  ParamStore fewer(5);
  fewer.get_or_create("fc.weight", {{2, 3}, DType::f32}, Init::zeros(), true);
  CHECK(error_message([&] { load_weights(fewer, f, "w.st", "m", false); }) ==
        "w.st: tensor 'bn.running_mean' [2] is not in model m (a file for another model?)");
  CHECK(fewer.find("fc.weight")->value.data<float>()[0] == 0.0f);  // untouched on error
}
