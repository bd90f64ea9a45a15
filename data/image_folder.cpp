// Scanning image folders, the crops of training and evaluation, and loading one sample.
#include "data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/rng.h"

namespace fs = std::filesystem;

namespace frugal {

namespace {

constexpr uint64_t kCropStream = uint64_t(0xc7) << 32;  // apart from shuffling and augment

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The format a file name promises, unknown for other names.
ImageFormat named_format(const fs::path& p) {
  const std::string ext = lower(p.extension().string());
  if (ext == ".jpg" || ext == ".jpeg") return ImageFormat::jpeg;
  if (ext == ".png") return ImageFormat::png;
  return ImageFormat::unknown;
}

// Why `p` cannot be an image of the format its name gives, or "" if its first bytes agree.
std::string bad_file(const fs::path& p) {
  const ImageFormat named = named_format(p);
  if (named == ImageFormat::unknown)
    return p.string() + ": not an image file name (expected .jpg, .jpeg or .png)";
  std::error_code ec;
  const auto bytes = fs::file_size(p, ec);
  if (ec) return p.string() + ": cannot read: " + ec.message();
  if (bytes == 0) return p.string() + ": empty file (0 bytes), not an image";
  uint8_t head[8] = {};
  std::ifstream in(p, std::ios::binary);
  in.read(reinterpret_cast<char*>(head), sizeof head);
  const ImageFormat found = sniff_image({head, static_cast<size_t>(in.gcount())});
  if (found == ImageFormat::unknown)
    return p.string() + ": not an image (neither JPEG nor PNG by its first bytes)";
  if (found != named)
    return p.string() + ": named " + (named == ImageFormat::jpeg ? "JPEG" : "PNG") +
           " but its bytes are " + (found == ImageFormat::jpeg ? "JPEG" : "PNG");
  return "";
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (!hidden(e.path())) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The files of split/<class> for each class, labelled by the class's index.
std::vector<ImageFile> scan_split(const fs::path& split, const std::vector<std::string>& classes,
                                  bool skip_bad, std::vector<std::string>& skipped) {
  std::vector<ImageFile> files;
  for (size_t c = 0; c < classes.size(); ++c) {
    const fs::path dir = split / classes[c];
    size_t found = 0;
    for (const fs::path& p : sorted_entries(dir)) {
      if (fs::is_directory(p)) continue;
      const std::string why = bad_file(p);
      if (!why.empty()) {
        FRUGAL_CHECK(skip_bad, why, " (--skip-bad leaves such files out)");
        skipped.push_back(why);
        continue;
      }
      files.push_back({p.string(), static_cast<int32_t>(c)});
      ++found;
    }
    FRUGAL_CHECK(found > 0, dir.string(), ": class folder holds no image");
  }
  return files;
}

}  // namespace

bool is_image_folder(const std::string& dir) {
  return fs::is_directory(fs::path(dir) / "train") && fs::is_directory(fs::path(dir) / "val");
}

ImageFolder scan_image_folder(const std::string& root, bool skip_bad) {
  const fs::path train = fs::path(root) / "train", val = fs::path(root) / "val";
  FRUGAL_CHECK(fs::is_directory(train), train.string(),
               ": no such folder (an image folder holds "
               "train/<class>/ and val/<class>/)");
  FRUGAL_CHECK(fs::is_directory(val), val.string(),
               ": no such folder (an image folder holds "
               "train/<class>/ and val/<class>/)");
  ImageFolder f;
  f.root = root;
  for (const fs::path& p : sorted_entries(train))
    if (fs::is_directory(p)) f.classes.push_back(p.filename().string());
  FRUGAL_CHECK(!f.classes.empty(), train.string(), ": holds no class folder");
  FRUGAL_CHECK(f.classes.size() <= 1u << 24, train.string(), ": ", f.classes.size(),
               " class folders");
  const std::set<std::string> known(f.classes.begin(), f.classes.end());
  for (const std::string& c : f.classes)
    FRUGAL_CHECK(fs::is_directory(val / c), (val / c).string(), ": class '", c,
                 "' of train/ is missing from val/");
  for (const fs::path& p : sorted_entries(val))
    if (fs::is_directory(p))
      FRUGAL_CHECK(known.count(p.filename().string()) > 0, p.string(), ": class '",
                   p.filename().string(), "' of val/ is not in train/");
  f.train = scan_split(train, f.classes, skip_bad, f.skipped);
  f.val = scan_split(val, f.classes, skip_bad, f.skipped);
  return f;
}

CropDraw draw_crop(const ImageTransform& t, int64_t height, int64_t width, uint64_t seed, int epoch,
                   int64_t index) {
  const double H = static_cast<double>(height), W = static_cast<double>(width);
  CropDraw d;
  if (!t.train) {
    // Resize the shorter side to size / crop_fraction, take the centre size x size: in source
    // pixels a square of side shorter * crop_fraction.
    const double side = std::min(H, W) * t.crop_fraction;
    d.box = {(H - side) / 2, (W - side) / 2, side, side};
    return d;
  }
  Rng rng(
      random_bits(seed, kCropStream | static_cast<uint32_t>(epoch), static_cast<uint64_t>(index)));
  const double area = H * W;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (0.08 + (1.0 - 0.08) * rng.uniform());
    const double log_ratio =
        std::log(3.0 / 4.0) + (std::log(4.0 / 3.0) - std::log(3.0 / 4.0)) * rng.uniform();
    const double ratio = std::exp(log_ratio);
    const double w = std::round(std::sqrt(target * ratio)),
                 h = std::round(std::sqrt(target / ratio));
    if (w >= 1 && h >= 1 && w <= W && h <= H) {
      const double top = std::floor(rng.uniform() * (H - h + 1));
      const double left = std::floor(rng.uniform() * (W - w + 1));
      d.box = {std::min(top, H - h), std::min(left, W - w), h, w};
      d.flip = rng.uniform() < 0.5;
      return d;
    }
  }
  // As torchvision: the whole image, its aspect ratio clamped to [3/4, 4/3], centred.
  double w = W, h = H;
  if (W / H < 3.0 / 4.0)
    h = std::round(W / (3.0 / 4.0));
  else if (W / H > 4.0 / 3.0)
    w = std::round(H * (4.0 / 3.0));
  d.box = {(H - h) / 2, (W - w) / 2, h, w};
  d.flip = rng.uniform() < 0.5;
  return d;
}

Dataset image_dataset(std::vector<ImageFile> files, const ImageTransform& transform,
                      int64_t classes, const std::string& name,
                      std::vector<std::string> class_names) {
  FRUGAL_CHECK(!files.empty(), name, ": no image files");
  FRUGAL_CHECK(transform.size >= 1 && transform.size <= 4096, name, ": image size ", transform.size,
               ", expected 1..4096");
  Dataset d;
  d.labels = Tensor::empty({static_cast<int64_t>(files.size())}, DType::i32);
  for (size_t i = 0; i < files.size(); ++i) d.labels.data<int32_t>()[i] = files[i].label;
  for (int c = 0; c < 3; ++c)
    d.background.push_back(static_cast<float>(-transform.normalize.mean[static_cast<size_t>(c)] /
                                              transform.normalize.std[static_cast<size_t>(c)]));
  d.classes = classes;
  d.name = name;
  d.class_names = std::move(class_names);
  auto source = std::make_shared<ImageSource>();
  source->files = std::move(files);
  source->transform = transform;
  d.source = std::move(source);
  return d;
}

int32_t load_sample(const ImageSource& s, int64_t index, uint64_t seed, int epoch, float* out,
                    int64_t* skipped) {
  const int64_t n = static_cast<int64_t>(s.files.size());
  const ImageTransform& t = s.transform;
  // Decoding at a reduced scale keeps the crop at least as large as the output: a training
  // crop may take 8% of the area, so only what keeps that many pixels is dropped.
  const int64_t min_side = t.train
                               ? static_cast<int64_t>(std::ceil(t.size / std::sqrt(0.08 * 3 / 4)))
                               : static_cast<int64_t>(std::ceil(t.size / t.crop_fraction));
  for (int64_t k = 0; k < n; ++k) {
    const ImageFile& f = s.files[static_cast<size_t>((index + k) % n)];
    try {
      const RgbImage img = decode_image(read_image_file(f.path), f.path, min_side);
      const CropDraw d = draw_crop(t, img.height, img.width, seed, epoch, index);
      resample(img, d.box, t.size, t.size, d.flip, t.normalize, out);
      return f.label;
    } catch (const Error&) {
      if (!t.skip_bad) throw;
      if (skipped) ++*skipped;
    }
  }
  throw Error(s.files.front().path + ": no file of the data set could be decoded");
}

}  // namespace frugal
