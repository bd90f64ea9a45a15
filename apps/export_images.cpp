// `frugal export-images`: writes Fashion-MNIST (IDX) or CIFAR-10 (binary) as an image folder,
// ROOT/train/<class>/<index>.jpg|png and ROOT/val/<class>/..., the layout `frugal train --data`
// and torchvision's ImageFolder read. The folder is written under a temporary name beside ROOT
// and renamed when complete, so a failed export leaves nothing behind.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/options.h"
#include "core/error.h"
#include "data/cifar.h"
#include "data/idx.h"
#include "data/image.h"
#include "data/resample.h"

namespace fs = std::filesystem;

namespace frugal {
namespace {

struct ExportOptions {
  std::string data = kFashionMnistDir;
  std::string to;
  std::string format = "jpeg";  // jpeg, png, or mixed (even indices JPEG, odd PNG)
  int quality = 95;
  int64_t limit = 0;  // images per split (0: all)
  int64_t size = 0;   // resize each image to size x size (bilinear) before encoding (0: as is)
};

const std::vector<std::string> kFashionClasses = {"t-shirt_top", "trouser",   "pullover", "dress",
                                                  "coat",        "sandal",    "shirt",    "sneaker",
                                                  "bag",         "ankle_boot"};
const std::vector<std::string> kCifarClasses = {"airplane", "automobile", "bird",  "cat",  "deer",
                                                "dog",      "frog",       "horse", "ship", "truck"};

// Sample n of a byte data set as an RGB image (grey replicated).
RgbImage sample_image(const Dataset& d, int64_t n) {
  const Shape s = d.sample_shape();
  const int64_t C = s[0], H = s[1], W = s[2];
  RgbImage img{H, W, std::vector<uint8_t>(static_cast<size_t>(H * W * 3))};
  const uint8_t* x = d.pixels.data<uint8_t>() + n * C * H * W;
  for (int64_t p = 0; p < H * W; ++p)
    for (int64_t c = 0; c < 3; ++c)
      img.rgb[static_cast<size_t>(p * 3 + c)] = x[(C == 1 ? 0 : c) * H * W + p];
  return img;
}

// img resized to side x side by the bilinear resampling training uses, back to bytes.
RgbImage resized(const RgbImage& img, int64_t side) {
  std::vector<float> planes(static_cast<size_t>(3 * side * side));
  const Normalize unit{{0, 0, 0}, {1.0 / 255, 1.0 / 255, 1.0 / 255}};  // x = v: bytes back
  resample(img, {0, 0, static_cast<double>(img.height), static_cast<double>(img.width)}, side, side,
           false, unit, planes.data());
  RgbImage out{side, side, std::vector<uint8_t>(static_cast<size_t>(3 * side * side))};
  for (int64_t p = 0; p < side * side; ++p)
    for (int64_t c = 0; c < 3; ++c)
      out.rgb[static_cast<size_t>(p * 3 + c)] = static_cast<uint8_t>(
          std::lround(std::clamp(planes[static_cast<size_t>(c * side * side + p)], 0.0f, 255.0f)));
  return out;
}

int64_t write_split(const Dataset& d, const std::vector<std::string>& classes, const fs::path& dir,
                    const ExportOptions& o) {
  for (const std::string& c : classes) fs::create_directories(dir / c);
  const bool grey = d.sample_shape()[0] == 1;
  const int64_t n = o.limit > 0 ? std::min(o.limit, d.size()) : d.size();
  for (int64_t i = 0; i < n; ++i) {
    RgbImage img = sample_image(d, i);
    if (o.size > 0) img = resized(img, o.size);
    const bool png = o.format == "png" || (o.format == "mixed" && i % 2 == 1);
    const std::vector<uint8_t> bytes =
        png ? encode_png(img, grey) : encode_jpeg(img, o.quality, grey);
    char name[32];
    std::snprintf(name, sizeof name, "%06lld.%s", static_cast<long long>(i), png ? "png" : "jpg");
    const fs::path path = dir / classes.at(static_cast<size_t>(d.labels.data<int32_t>()[i])) / name;
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    FRUGAL_CHECK(out.good(), path.string(), ": cannot write");
  }
  return n;
}

void run_export(const ExportOptions& o) {
  FRUGAL_CHECK(!o.to.empty(), "export-images: --to is required");
  const fs::path root = fs::absolute(o.to);
  FRUGAL_CHECK(!fs::exists(root), root.string(), ": exists; give a new folder");
  FRUGAL_CHECK(fs::is_directory(root.parent_path()), root.parent_path().string(),
               ": folder does not exist");
  const bool cifar = is_cifar10_dir(o.data);
  const Dataset train = cifar ? load_cifar10(o.data, true) : load_fashion_mnist(o.data, true);
  const Dataset val = cifar ? load_cifar10(o.data, false) : load_fashion_mnist(o.data, false);
  const std::vector<std::string>& classes = cifar ? kCifarClasses : kFashionClasses;
  const fs::path tmp = root.string() + ".tmp-" + std::to_string(getpid());
  try {
    const int64_t a = write_split(train, classes, tmp / "train", o);
    const int64_t b = write_split(val, classes, tmp / "val", o);
    fs::rename(tmp, root);
    std::printf("wrote %s: %lld training and %lld validation images of %s, %zu classes, %s\n",
                root.string().c_str(), static_cast<long long>(a), static_cast<long long>(b),
                cifar ? "CIFAR-10" : "Fashion-MNIST", classes.size(), o.format.c_str());
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace

Action add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* c = app.add_subcommand(
      "export-images",
      "Write Fashion-MNIST or CIFAR-10 as an image folder (train/<class>/, val/<class>/)");
  c->add_option("--data", o->data, "Fashion-MNIST IDX directory or CIFAR-10 binary directory")
      ->capture_default_str();
  c->add_option("--to", o->to, "The folder to create (must not exist)")->required();
  c->add_option("--format", o->format, "jpeg, png, or mixed (alternating)")
      ->check(CLI::IsMember({"jpeg", "png", "mixed"}))
      ->capture_default_str();
  c->add_option("--quality", o->quality, "JPEG quality")
      ->check(whole_number(1, 100))
      ->capture_default_str();
  c->add_option("--size", o->size,
                "Resize every image to this side (bilinear) before encoding, e.g. 375 for "
                "ImageNet-sized files (0: as stored)")
      ->check(whole_number(0, 4096))
      ->capture_default_str();
  c->add_option("--limit", o->limit, "Images per split (0: all)")
      ->check(whole_number(0))
      ->capture_default_str();
  return [o] { run_export(*o); };
}

}  // namespace frugal
