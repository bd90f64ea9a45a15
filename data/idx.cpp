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

// Reads the data the header promises, and checks nothing follows it. A plain file's size is
// compared with the promise before anything is allocated; a compressed one is read in growing
// chunks, so a header promising more than the stream holds costs at most about twice what is
// there.
std::vector<unsigned char> read_data(IdxFile& f) {
  const int64_t promised = f.count();
  const auto need = static_cast<size_t>(promised);
  const int64_t header = 4 + 4 * static_cast<int64_t>(f.dims.size());
  if (gzdirect(f.file.get()) == 1)
    FRUGAL_CHECK(promised <= f.file_bytes - header, f.path, ": truncated: header ", Shape(f.dims),
                 " promises ", promised, " bytes of data, file has ", f.file_bytes - header);
  FRUGAL_CHECK(promised <= kMaxReadTensorBytes, f.path, ": header ", Shape(f.dims), " promises ",
               readable_bytes(promised), " of data, over the limit of ",
               readable_bytes(kMaxReadTensorBytes));
  std::vector<unsigned char> data;
  size_t got = 0;
  while (got < need) {
    data.resize(std::min(need, std::max<size_t>(2 * got, size_t{1} << 20)));
    const size_t n = read_bytes(f, data.data() + got, data.size() - got);
    got += n;
    if (got < data.size()) break;  // end of the stream
  }
  FRUGAL_CHECK(got == need, f.path, ": truncated: header ", Shape(f.dims), " promises ", need,
               " bytes of data, file has ", got);
  unsigned char extra = 0;
  FRUGAL_CHECK(read_bytes(f, &extra, 1) == 0, f.path, ": trailing bytes after the ", need,
               " bytes of data that header ", Shape(f.dims), " promises");
  return data;
}

}  // namespace

Tensor read_idx_images(const std::string& path, const ImageOptions& o) {
  IdxFile f = open_idx(path, 3, "images (N,H,W)");
  const int64_t N = f.dims[0], H = f.dims[1], W = f.dims[2];
  FRUGAL_CHECK((o.height == 0 || H == o.height) && (o.width == 0 || W == o.width), path,
               ": images are ", H, "x", W, ", expected ", o.height, "x", o.width);
  FRUGAL_CHECK(H > 0 && W > 0, path, ": header extents ", Shape(f.dims),
               ": images of height or width 0");
  FRUGAL_CHECK(o.pad >= 0 && o.std > 0, path, ": bad image options (pad ", o.pad, ", std ", o.std,
               ")");
  const std::vector<unsigned char> pixels = read_data(f);

  std::array<float, 256> table{};
  for (int v = 0; v < 256; ++v) table[v] = static_cast<float>((v / 255.0 - o.mean) / o.std);
  const int64_t P = o.pad;
  const int64_t Hp = checked_add(path, "padded height", H, 2 * P);
  const int64_t Wp = checked_add(path, "padded width", W, 2 * P);
  Tensor images = reader_tensor(path, "images", {N, 1, Hp, Wp}, DType::f32);
  float* y = images.data<float>();
  for (int64_t i = 0; i < N * Hp * Wp; ++i) y[i] = table[0];  // border: background pixel
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        y[(n * Hp + h + P) * Wp + w + P] = table[pixels[static_cast<size_t>((n * H + h) * W + w)]];
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
  d.images = read_idx_images(images_path, options);
  d.labels = read_idx_labels(labels_path, classes);
  d.classes = classes;
  FRUGAL_CHECK(d.images.shape()[0] == d.labels.shape()[0], images_path, " has ",
               d.images.shape()[0], " images but ", labels_path, " has ", d.labels.shape()[0],
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
  d.background = {static_cast<float>((0.0 - o.mean) / o.std)};
  d.name = "fashion-mnist";
  return d;
}

}  // namespace frugal
