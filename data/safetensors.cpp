// safetensors reader and writer over nlohmann::json: the header is plain JSON, the data one
// contiguous block that each tensor indexes by [begin, end) byte offsets. The header is parsed
// with a depth limit and quoted in errors only in short excerpts; sizes go through
// data/checked.h; a save is written, fsynced and renamed into place.
#include "data/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/checked.h"

namespace frugal {
namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kMaxHeader = 100u << 20;  // what the reference implementation accepts
// A header is an object of tensor objects holding arrays of numbers: depth 3. Anything much
// deeper is not a safetensors file, and parsing it must not run away.
constexpr int kMaxJsonDepth = 16;

// A short description of a JSON value for messages: scalars as written (strings cut at 40
// characters), small flat arrays element by element, anything else by its size. Never the
// whole value, which may be a 100 MiB header or nested 100,000 levels deep.
std::string excerpt(const Json& j) {
  auto dump = [](const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); };
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    return s.size() <= 40 ? dump(j) : dump(Json(s.substr(0, 40))) + "...";
  }
  if (!j.is_structured()) return dump(j);
  const bool flat = j.is_array() && j.size() <= 8 &&
                    std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_primitive(); });
  if (!flat)
    return std::string(j.is_array() ? "an array" : "an object") + " of " +
           std::to_string(j.size()) + " entries";
  std::string r = "[";
  for (const Json& e : j) r += (r.size() > 1 ? ", " : "") + excerpt(e);
  return r + "]";
}

// A tensor name for messages, cut at 80 characters.
std::string short_name(const std::string& name) {
  return name.size() <= 80 ? name : name.substr(0, 80) + "...";
}

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

// Writes all of `bytes` to `fd`; false (errno set) on an error.
bool write_all(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(bytes, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

// The folder a file path names its entry in ("." for a bare name).
std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
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
  const std::string where = path + ": tensor '" + short_name(name) + "'";
  FRUGAL_CHECK(
      j.is_object() && j.contains("dtype") && j.contains("shape") && j.contains("data_offsets"),
      where, ": expected an object with dtype, shape and data_offsets, got ", excerpt(j));
  Entry e{name, {}, 0, 0};
  FRUGAL_CHECK(j["dtype"].is_string() && parse_safetensors_dtype(j["dtype"], e.meta.dtype), where,
               ": dtype ", excerpt(j["dtype"]), " is not one frugal reads (F32, F64, I32, U8)");
  const Json& shape = j["shape"];
  FRUGAL_CHECK(shape.is_array(), where, ": shape ", excerpt(shape), " is not an array");
  std::vector<int64_t> dims;
  for (const Json& d : shape) {
    FRUGAL_CHECK(d.is_number_unsigned() && d.get<uint64_t>() < (uint64_t(1) << 40), where,
                 ": shape ", excerpt(shape), " has a bad extent");
    dims.push_back(d.get<int64_t>());
  }
  // Each extent fits; their product, and its bytes, must too (then e.meta.bytes() is safe).
  const int64_t count = checked_count(where, "shape", dims);
  const int64_t bytes = checked_mul(where, "shape bytes", count, int64_t(dtype_size(e.meta.dtype)));
  e.meta.shape = Shape(dims);
  const Json& off = j["data_offsets"];
  FRUGAL_CHECK(off.is_array() && off.size() == 2 && off[0].is_number_unsigned() &&
                   off[1].is_number_unsigned(),
               where, ": data_offsets ", excerpt(off), " is not [begin, end]");
  e.begin = off[0].get<uint64_t>();
  e.end = off[1].get<uint64_t>();
  FRUGAL_CHECK(e.begin <= e.end && e.end <= data_bytes, where, ": data_offsets [", e.begin, ", ",
               e.end, "] outside the ", data_bytes, " bytes of data (truncated file?)");
  FRUGAL_CHECK(e.end - e.begin == uint64_t(bytes), where, ": shape ", e.meta.shape, " ",
               j["dtype"].get<std::string>(), " needs ", bytes, " bytes, data_offsets span ",
               e.end - e.begin);
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

  // Written beside `path`, flushed to disk, then renamed over it: a reader (or a crash) sees
  // the old file or the new one, never part of one.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FRUGAL_CHECK(fd >= 0, tmp, ": cannot open for writing: ", std::strerror(errno));
  try {
    bool ok = write_all(fd, length, 8) && write_all(fd, text.data(), text.size());
    for (const auto& [name, t] : file.tensors) ok = ok && write_all(fd, t.raw(), t.meta().bytes());
    FRUGAL_CHECK(ok, tmp, ": write failed: ", std::strerror(errno), " (disk full?)");
    FRUGAL_CHECK(::fsync(fd) == 0, tmp, ": fsync failed: ", std::strerror(errno));
    const int closed = ::close(fd);
    fd = -1;
    FRUGAL_CHECK(closed == 0, tmp, ": close failed: ", std::strerror(errno));
    FRUGAL_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, path, ": cannot rename ", tmp,
                 " into place: ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());  // no partial file left behind
    throw;
  }
  // The rename is durable once the folder's entry is on disk; a failure here loses nothing.
  const std::string dir = folder_of(path);
  if (const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
}

void check_writable(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  FRUGAL_CHECK(!path.empty(), "save path: empty file name");
  FRUGAL_CHECK(!fs::is_directory(path, ec), path, ": is a directory; give a file name, e.g. ",
               (fs::path(path) / "checkpoint.safetensors").string());
  const std::string dir = folder_of(path);
  FRUGAL_CHECK(fs::is_directory(dir, ec), path, ": folder ", dir, " does not exist");
  FRUGAL_CHECK(!fs::exists(path, ec) || ::access(path.c_str(), W_OK) == 0, path,
               ": not writable: ", std::strerror(errno));
  // Create the temporary file the save will write, and remove it again.
  const std::string tmp = path + ".tmp";
  const bool existed = fs::exists(tmp, ec);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  FRUGAL_CHECK(fd >= 0, path, ": cannot write in folder ", dir, ": ", std::strerror(errno));
  ::close(fd);
  if (!existed) ::unlink(tmp.c_str());
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
  // The parser itself is not recursive; the limit keeps what it builds (and any code walking
  // it) shallow.
  auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, Json&) {
    FRUGAL_CHECK(depth <= kMaxJsonDepth, path, ": header: JSON nested deeper than ", kMaxJsonDepth,
                 " levels (not a safetensors header)");
    return true;
  };
  Json header = Json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n),
                            limit_depth, /*allow_exceptions=*/false);
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
        FRUGAL_CHECK(v.is_string(), path, ": __metadata__ entry '", short_name(k),
                     "' is not a string");
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
    FRUGAL_CHECK(e.begin == at, path, ": tensor '", short_name(e.name), "' starts at byte ",
                 e.begin, " of the data, expected ", at, " (", e.begin < at ? "overlap" : "gap",
                 ")");
    at = e.end;
  }
  FRUGAL_CHECK(at == data_bytes, path, ": the tensors cover ", at, " bytes of data, the file has ",
               data_bytes, " (trailing bytes)");
  for (const Entry& e : entries) {
    Tensor t =
        reader_tensor(path, "tensor '" + short_name(e.name) + "'", e.meta.shape, e.meta.dtype);
    if (e.end > e.begin) std::memcpy(t.raw(), data + e.begin, e.end - e.begin);
    file.tensors.emplace_back(e.name, std::move(t));
  }
  return file;
}

}  // namespace frugal
