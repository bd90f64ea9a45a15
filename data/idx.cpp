// IDX reader over zlib's gz* functions, which read plain and gzip files alike. The header is
// magic (0, 0, type, rank) then `rank` big-endian u32 extents; the data is their product in
// unsigned bytes. Pixels are normalized through a 256-entry table (same bits every run). Sizes
// from the header are checked (data/checked.h) and compared with the file before allocating.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/error.h"
#include "data/checked.h"
#include "data/image_folder.h"

namespace frugal {
namespace {

constexpr int kUnsignedByte = 0x08;

struct GzClose {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzClose>;

// An open IDX file whose header has been read and checked for type and rank.
struct IdxFile {
  std::string path;
  GzFile file;
  std::vector<int64_t> dims;
  int64_t file_bytes = 0;  // on disk: the data there, or the compressed stream

  // The number of data bytes the header promises, checked for overflow.
  int64_t count() const { return checked_count(path, "header extents", dims); }
};

// Reads up to `bytes` into `dst`; returns how many were read (fewer at end of file).
size_t read_bytes(IdxFile& f, void* dst, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes - done, 1u << 30));
    const int n = gzread(f.file.get(), static_cast<char*>(dst) + done, chunk);
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(f.file.get(), &code);
      FRUGAL_CHECK(false, f.path, ": read error: ", message);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

IdxFile open_idx(const std::string& path, int rank, const char* what) {
  FRUGAL_CHECK(std::filesystem::is_regular_file(path), path, ": no such file");
  std::error_code ec;
  const auto file_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  FRUGAL_CHECK(!ec, path, ": cannot read its size: ", ec.message());
  IdxFile f{path, GzFile(gzopen(path.c_str(), "rb")), {}, file_bytes};
  FRUGAL_CHECK(f.file != nullptr, path, ": cannot open: ", std::strerror(errno));
  std::array<unsigned char, 4> magic{};
  FRUGAL_CHECK(read_bytes(f, magic.data(), 4) == 4, path, ": truncated header (under 4 bytes)");
  FRUGAL_CHECK(magic[0] == 0 && magic[1] == 0, path, ": not an IDX file (magic starts 0x", std::hex,
               int(magic[0]), " 0x", int(magic[1]), ", expected 0x0 0x0)");
  FRUGAL_CHECK(magic[2] == kUnsignedByte, path, ": IDX data type 0x", std::hex, int(magic[2]),
               ", expected 0x8 (unsigned byte)");
  FRUGAL_CHECK(magic[3] == rank, path, ": IDX rank ", int(magic[3]), ", expected ", rank, " for ",
               what);
  for (int i = 0; i < rank; ++i) {
    std::array<unsigned char, 4> b{};
    FRUGAL_CHECK(read_bytes(f, b.data(), 4) == 4, path, ": truncated header (extent ", i, " of ",
                 rank, " missing)");
    f.dims.push_back(int64_t(b[0]) << 24 | int64_t(b[1]) << 16 | int64_t(b[2]) << 8 | b[3]);
  }
  return f;
}

// Reads the data the header promises into `dst` (allocate(bytes) gives it, once the file is
// known to hold that much), and checks nothing follows it. A plain file's size is compared with
// the promise before anything is allocated; a compressed stream is first decompressed into a
// small buffer to count what it holds, then read again straight into `dst`, so a header that
// promises more than the stream holds allocates nothing, and the data is held once.
template <typename Allocate>
void read_data(IdxFile& f, Allocate allocate) {
  const int64_t promised = f.count();
  const auto need = static_cast<size_t>(promised);
  const int64_t header = 4 + 4 * static_cast<int64_t>(f.dims.size());
  const bool plain = gzdirect(f.file.get()) == 1;
  if (plain)
    FRUGAL_CHECK(promised <= f.file_bytes - header, f.path, ": truncated: header ", Shape(f.dims),
                 " promises ", promised, " bytes of data, file has ", f.file_bytes - header);
  FRUGAL_CHECK(promised <= kMaxReadTensorBytes, f.path, ": header ", Shape(f.dims), " promises ",
               readable_bytes(promised), " of data, over the limit of ",
               readable_bytes(kMaxReadTensorBytes));
  if (!plain) {
    std::vector<unsigned char> chunk(size_t{1} << 20);
    size_t held = 0;
    while (held <= need) {
      const size_t n = read_bytes(f, chunk.data(), chunk.size());
      if (n == 0) break;
      held += n;
    }
    FRUGAL_CHECK(held >= need, f.path, ": truncated: header ", Shape(f.dims), " promises ", need,
                 " bytes of data, file has ", held);
    FRUGAL_CHECK(held == need, f.path, ": trailing bytes after the ", need,
                 " bytes of data that header ", Shape(f.dims), " promises");
    FRUGAL_CHECK(gzrewind(f.file.get()) == 0, f.path, ": cannot read it again");
    std::vector<unsigned char> skip(static_cast<size_t>(header));
    FRUGAL_CHECK(read_bytes(f, skip.data(), skip.size()) == skip.size(), f.path,
                 ": changed while read");
  }
  unsigned char* dst = allocate(need);
  const size_t got = read_bytes(f, dst, need);
  FRUGAL_CHECK(got == need, f.path, ": truncated: header ", Shape(f.dims), " promises ", need,
               " bytes of data, file has ", got);
  unsigned char extra = 0;
  FRUGAL_CHECK(read_bytes(f, &extra, 1) == 0, f.path, ": trailing bytes after the ", need,
               " bytes of data that header ", Shape(f.dims), " promises");
}

std::vector<unsigned char> read_data(IdxFile& f) {
  std::vector<unsigned char> data;
  read_data(f, [&data](size_t bytes) {
    data.resize(bytes);
    return data.data();
  });
  return data;
}

}  // namespace

PixelTable pixel_table(double mean, double std) {
  PixelTable table{};
  for (int v = 0; v < 256; ++v) table[v] = static_cast<float>((v / 255.0 - mean) / std);
  return table;
}

Tensor read_idx_pixels(const std::string& path, const ImageOptions& o) {
  IdxFile f = open_idx(path, 3, "images (N,H,W)");
  const int64_t N = f.dims[0], H = f.dims[1], W = f.dims[2];
  FRUGAL_CHECK((o.height == 0 || H == o.height) && (o.width == 0 || W == o.width), path,
               ": images are ", H, "x", W, ", expected ", o.height, "x", o.width);
  FRUGAL_CHECK(H > 0 && W > 0, path, ": header extents ", Shape(f.dims),
               ": images of height or width 0");
  FRUGAL_CHECK(o.pad >= 0 && o.std > 0, path, ": bad image options (pad ", o.pad, ", std ", o.std,
               ")");
  const int64_t P = o.pad;
  const int64_t Hp = checked_add(path, "padded height", H, 2 * P);
  const int64_t Wp = checked_add(path, "padded width", W, 2 * P);
  Tensor images;
  if (P == 0) {  // straight from the file into the tensor: the data is held once
    read_data(f, [&](size_t) {
      images = reader_tensor(path, "images", {N, 1, H, W}, DType::u8);
      return images.data<uint8_t>();
    });
    return images;
  }
  const std::vector<unsigned char> pixels = read_data(f);
  images = reader_tensor(path, "images", {N, 1, Hp, Wp}, DType::u8);
  uint8_t* y = images.data<uint8_t>();
  std::memset(y, 0, static_cast<size_t>(N * Hp * Wp));  // border: a black pixel
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(y + (n * Hp + h + P) * Wp + P, pixels.data() + (n * H + h) * W,
                  static_cast<size_t>(W));
  return images;
}

Tensor read_idx_images(const std::string& path, const ImageOptions& o) {
  const Tensor pixels = read_idx_pixels(path, o);
  const PixelTable table = pixel_table(o.mean, o.std);
  Tensor images = reader_tensor(path, "images", pixels.shape(), DType::f32);
  const uint8_t* x = pixels.data<uint8_t>();
  float* y = images.data<float>();
  for (int64_t i = 0; i < pixels.numel(); ++i) y[i] = table[x[i]];
  return images;
}

Tensor read_idx_labels(const std::string& path, int classes) {
  IdxFile f = open_idx(path, 1, "labels (N)");
  const std::vector<unsigned char> bytes = read_data(f);
  Tensor labels = reader_tensor(path, "labels", {f.dims[0]}, DType::i32);
  int32_t* y = labels.data<int32_t>();
  for (size_t i = 0; i < bytes.size(); ++i) {
    FRUGAL_CHECK(bytes[i] < classes, path, ": label ", int(bytes[i]), " at index ", i,
                 " outside 0..", classes - 1);
    y[i] = bytes[i];
  }
  return labels;
}

Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 const ImageOptions& options, int classes) {
  Dataset d;
  d.pixels = read_idx_pixels(images_path, options);
  d.tables = {pixel_table(options.mean, options.std)};
  d.background = {d.tables[0][0]};
  d.labels = read_idx_labels(labels_path, classes);
  d.classes = classes;
  FRUGAL_CHECK(d.pixels.shape()[0] == d.labels.shape()[0], images_path, " has ",
               d.pixels.shape()[0], " images but ", labels_path, " has ", d.labels.shape()[0],
               " labels");
  return d;
}

Dataset load_fashion_mnist(const std::string& dir, bool train, int pad) {
  // Each file may be plain or gzipped; prefer the plain one when both exist.
  auto find = [&](const std::string& stem) {
    const std::filesystem::path plain = std::filesystem::path(dir) / stem;
    if (std::filesystem::exists(plain)) return plain.string();
    const std::string gz = plain.string() + ".gz";
    FRUGAL_CHECK(std::filesystem::exists(gz), "fashion-mnist: neither ", plain.string(), " nor ",
                 gz, " exists (install Debian's dataset-fashion-mnist or pass --data)");
    return gz;
  };
  const std::string prefix = train ? "train" : "t10k";
  ImageOptions o{
      .mean = kFashionMnistMean, .std = kFashionMnistStd, .pad = pad, .height = 28, .width = 28};
  const std::string images = find(prefix + "-images-idx3-ubyte");
  const std::string labels = find(prefix + "-labels-idx1-ubyte");
  Dataset d = load_idx(images, labels, o);
  d.name = "fashion-mnist";
  return d;
}

Shape Dataset::sample_shape() const {
  if (source) return {3, source->transform.size, source->transform.size};
  const Tensor& t = pixels.defined() ? pixels : images;
  const Shape& s = t.shape();
  return {s[1], s[2], s[3]};
}

Tensor Dataset::float_images() const {
  FRUGAL_CHECK(!source, name, ": images decoded from files are not held in memory");
  if (!pixels.defined()) return images;
  Tensor out = Tensor::empty(pixels.shape(), DType::f32);
  const int64_t C = pixels.shape()[1], plane = pixels.shape()[2] * pixels.shape()[3];
  const uint8_t* x = pixels.data<uint8_t>();
  float* y = out.data<float>();
  for (int64_t i = 0; i < pixels.numel(); ++i)
    y[i] = tables[static_cast<size_t>(i / plane % C)][x[i]];
  return out;
}

}  // namespace frugal
