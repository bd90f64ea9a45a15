// safetensors reader and writer over nlohmann::json: the header is plain JSON, the data one
// contiguous block that each tensor indexes by [begin, end) byte offsets.
#include "data/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace frugal {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxHeader = 100u << 20;  // what the reference implementation accepts

const char* safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32:
      return "F32";
    case DType::f64:
      return "F64";
    case DType::i32:
      return "I32";
    case DType::u8:
      return "U8";
  }
  return "?";
}

bool parse_safetensors_dtype(const std::string& s, DType& t) {
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::u8})
    if (s == safetensors_dtype(d)) {
      t = d;
      return true;
    }
  return false;
}

std::vector<char> read_file(const std::string& path) {
  FRUGAL_CHECK(std::filesystem::is_regular_file(path), path, ": no such file");
  std::ifstream in(path, std::ios::binary);
  FRUGAL_CHECK(in.good(), path, ": cannot open");
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One header entry checked against the data block of `data_bytes`; returns its tensor meta
// and offsets.
struct Entry {
  std::string name;
  TensorMeta meta;
  uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const Json& j,
                  uint64_t data_bytes) {
  const std::string where = path + ": tensor '" + name + "'";
  FRUGAL_CHECK(
      j.is_object() && j.contains("dtype") && j.contains("shape") && j.contains("data_offsets"),
      where, ": expected an object with dtype, shape and data_offsets, got ", j.dump());
  Entry e{name, {}, 0, 0};
  FRUGAL_CHECK(j["dtype"].is_string() && parse_safetensors_dtype(j["dtype"], e.meta.dtype), where,
               ": dtype ", j["dtype"].dump(), " is not one frugal reads (F32, F64, I32, U8)");
  const Json& shape = j["shape"];
  FRUGAL_CHECK(shape.is_array(), where, ": shape ", shape.dump(), " is not an array");
  std::vector<int64_t> dims;
  for (const Json& d : shape) {
    FRUGAL_CHECK(d.is_number_unsigned() && d.get<uint64_t>() < (uint64_t(1) << 40), where,
                 ": shape ", shape.dump(), " has a bad extent");
    dims.push_back(d.get<int64_t>());
  }
  e.meta.shape = Shape(dims);
  const Json& off = j["data_offsets"];
  FRUGAL_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                   off[1].is_number_unsigned(),
               where, ": data_offsets ", off.dump(), " is not [begin, end]");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  FRUGAL_CHECK(e.begin <= e.end && e.end <= data_bytes, where, ": data_offsets [", e.begin, ", ",
               e.end, "] outside the ", data_bytes, " bytes of data (truncated file?)");
  FRUGAL_CHECK(e.end - e.begin == e.meta.bytes(), where, ": shape ", e.meta.shape, " ",
               j["dtype"].get<std::string>(), " needs ", e.meta.bytes(),
               " bytes, data_offsets span ", e.end - e.begin);
  return e;
}

}  // namespace

const Tensor* Safetensors::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

void save_safetensors(const std::string& path, const Safetensors& file) {
  Json header = Json::object();
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& [name, t] : file.tensors) {
    FRUGAL_CHECK(!name.empty() && name != "__metadata__" && names.insert(name).second, path,
                 ": tensor name '", name, "' is empty, reserved or repeated");
    const uint64_t bytes = t.meta().bytes();
    header[name] = {{"dtype", safetensors_dtype(t.dtype())},
                    {"shape", t.shape().dims()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 7) / 8 * 8, ' ');
  const uint64_t n = text.size();
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));

  const std::string tmp = path + ".tmp";
  std::error_code ec;
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      FRUGAL_CHECK(out.good(), tmp, ": cannot open for writing");
      out.write(reinterpret_cast<const char*>(length), 8);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      for (const auto& [name, t] : file.tensors)
        out.write(static_cast<const char*>(t.raw()),
                  static_cast<std::streamsize>(t.meta().bytes()));
      out.flush();
      FRUGAL_CHECK(out.good(), tmp, ": write failed (disk full?)");
    }
    std::filesystem::rename(tmp, path, ec);
    FRUGAL_CHECK(!ec, path, ": cannot rename ", tmp, " into place: ", ec.message());
  } catch (...) {
    std::filesystem::remove(tmp, ec);  // no partial file left behind
    throw;
  }
}

Safetensors load_safetensors(const std::string& path) {
  const std::vector<char> bytes = read_file(path);
  FRUGAL_CHECK(bytes.size() >= 8, path, ": truncated: ", bytes.size(),
               " bytes, a safetensors file starts with an 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(bytes[size_t(i)]);
  FRUGAL_CHECK(n <= kMaxHeader && n <= bytes.size() - 8, path, ": header length ", n,
               " exceeds the file's ", bytes.size() - 8,
               " bytes after the length (truncated or "
               "not a safetensors file)");
  Json header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n), nullptr,
                            /*allow_exceptions=*/false);
  FRUGAL_CHECK(header.is_object(), path,
               ": the header is not a JSON object (bad JSON or not a safetensors file)");

  Safetensors file;
  const uint64_t data_bytes = bytes.size() - 8 - n;
  const char* data = bytes.data() + 8 + n;
  std::vector<Entry> entries;
  for (const auto& [name, j] : header.items()) {
    if (name == "__metadata__") {
      FRUGAL_CHECK(j.is_object(), path, ": __metadata__ is not an object of strings");
      for (const auto& [k, v] : j.items()) {
        FRUGAL_CHECK(v.is_string(), path, ": __metadata__ entry '", k, "' is not a string");
        file.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, name, j, data_bytes));
  }
  // The tensors must tile the data block: sorted by offset, each starts where the last ended.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  uint64_t at = 0;
  for (const Entry& e : entries) {
    FRUGAL_CHECK(e.begin == at, path, ": tensor '", e.name, "' starts at byte ", e.begin,
                 " of the data, expected ", at, " (", e.begin < at ? "overlap" : "gap", ")");
    at = e.end;
  }
  FRUGAL_CHECK(at == data_bytes, path, ": the tensors cover ", at, " bytes of data, the file has ",
               data_bytes, " (trailing bytes)");
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.meta.shape, e.meta.dtype);
    if (e.end > e.begin) std::memcpy(t.raw(), data + e.begin, e.end - e.begin);
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

}  // namespace frugal
