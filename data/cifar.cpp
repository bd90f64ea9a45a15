// CIFAR-10 binary reader: the whole file is read at once, checked for size, then each
// record's label and planes are normalized through one table per channel. The size is checked
// before the file is read, and the tensors through data/checked.h.
#include "data/cifar.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "data/checked.h"

namespace frugal {
namespace {

constexpr int64_t kSide = 32, kChannels = 3, kPlane = kSide * kSide;
constexpr int64_t kRecord = 1 + kChannels * kPlane;  // 3073 bytes

std::vector<unsigned char> read_records(const std::string& path) {
  FRUGAL_CHECK(std::filesystem::is_regular_file(path), path,
               ": no such file (CIFAR-10 binary version expected)");
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  FRUGAL_CHECK(!ec, path, ": cannot read its size: ", ec.message());
  FRUGAL_CHECK(size != 0, path, ": empty file, expected records of ", kRecord, " bytes");
  FRUGAL_CHECK(size % kRecord == 0, path, ": truncated or corrupt: ", size,
               " bytes is not a whole number of ", kRecord, "-byte records (1 label + 3x32x32)");
  // Four bytes of f32 per byte of the file: refuse before reading what could not be held.
  FRUGAL_CHECK(size <= uintmax_t(kMaxReadTensorBytes / 4), path, ": ",
               readable_bytes(int64_t(size)), " of records would make images over the limit of ",
               readable_bytes(kMaxReadTensorBytes), " for one tensor");
  std::ifstream in(path, std::ios::binary);
  FRUGAL_CHECK(in.good(), path, ": cannot open");
  std::vector<unsigned char> bytes(static_cast<size_t>(size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  FRUGAL_CHECK(in.gcount() == static_cast<std::streamsize>(size), path, ": read ", in.gcount(),
               " of its ", size, " bytes (changed while read?)");
  return bytes;
}

}  // namespace

bool is_cifar10_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  return fs::is_directory(dir) && (fs::exists(fs::path(dir) / "test_batch.bin") ||
                                   fs::exists(fs::path(dir) / "data_batch_1.bin"));
}

Dataset read_cifar10(const std::vector<std::string>& paths) {
  std::vector<std::vector<unsigned char>> files;
  int64_t N = 0;
  for (const std::string& p : paths) {
    files.push_back(read_records(p));
    N = checked_add(p, "record count", N, static_cast<int64_t>(files.back().size()) / kRecord);
  }
  std::vector<PixelTable> table(3);
  for (int c = 0; c < 3; ++c)
    for (int v = 0; v < 256; ++v) table[c][v] = (v / 255.0f - kCifarMean[c]) / kCifarStd[c];

  Dataset d;
  const std::string& where = paths.empty() ? std::string("cifar10") : paths.front();
  d.pixels = reader_tensor(where, "images", {N, kChannels, kSide, kSide}, DType::u8);
  d.labels = reader_tensor(where, "labels", {N}, DType::i32);
  d.background = {table[0][0], table[1][0], table[2][0]};
  d.tables = table;
  d.classes = 10;
  d.name = "cifar10";
  uint8_t* x = d.pixels.data<uint8_t>();
  int32_t* y = d.labels.data<int32_t>();
  int64_t n = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<unsigned char>& b = files[f];
    for (int64_t r = 0; r < static_cast<int64_t>(b.size()) / kRecord; ++r, ++n) {
      const unsigned char* rec = b.data() + r * kRecord;
      FRUGAL_CHECK(rec[0] < 10, paths[f], ": record ", r, " has label ", int(rec[0]),
                   ", expected 0..9 (corrupt file?)");
      y[n] = rec[0];
      std::memcpy(x + n * kChannels * kPlane, rec + 1, static_cast<size_t>(kChannels * kPlane));
    }
  }
  return d;
}

Dataset load_cifar10(const std::string& dir, bool train) {
  const std::filesystem::path root(dir);
  std::vector<std::string> paths;
  if (train)
    for (int i = 1; i <= 5; ++i)
      paths.push_back((root / ("data_batch_" + std::to_string(i) + ".bin")).string());
  else
    paths.push_back((root / "test_batch.bin").string());
  return read_cifar10(paths);
}

}  // namespace frugal
