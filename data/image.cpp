// Decoding (TurboJPEG, libpng's simplified API), EXIF orientation and resampling of image
// files. Every length read from a file is checked against what is left of it.
#include "data/image.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/error.h"

namespace frugal {

namespace {

constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

// What a JPEG's marker segments say beyond the image: its EXIF orientation and whether an
// Adobe APP14 segment marks its CMYK as inverted.
struct JpegMarkers {
  int orientation = 1;
  bool adobe = false;
};

uint32_t read_u16(const uint8_t* p, bool little) {
  return little ? p[0] | p[1] << 8 : p[0] << 8 | p[1];
}
uint32_t read_u32(const uint8_t* p, bool little) {
  return little ? uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24
                : uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

// The Orientation tag (0x0112) of IFD0 in a TIFF block (an EXIF segment after "Exif\0\0").
int tiff_orientation(const uint8_t* t, size_t n) {
  if (n < 8) return 1;
  bool little = false;
  if (t[0] == 'I' && t[1] == 'I')
    little = true;
  else if (!(t[0] == 'M' && t[1] == 'M'))
    return 1;
  if (read_u16(t + 2, little) != 42) return 1;
  const uint32_t ifd = read_u32(t + 4, little);
  if (ifd > n - 2) return 1;
  const uint32_t entries = read_u16(t + ifd, little);
  for (uint32_t e = 0; e < entries; ++e) {
    const size_t at = size_t{ifd} + 2 + 12 * size_t{e};
    if (at + 12 > n) return 1;
    if (read_u16(t + at, little) != 0x0112) continue;
    const uint32_t type = read_u16(t + at + 2, little), count = read_u32(t + at + 4, little);
    if (type != 3 || count != 1) return 1;  // SHORT, one value
    const uint32_t v = read_u16(t + at + 8, little);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

JpegMarkers jpeg_markers(std::span<const uint8_t> b) {
  JpegMarkers m;
  const size_t n = b.size();
  size_t i = 2;  // after SOI
  while (i + 4 <= n && b[i] == 0xff) {
    const uint8_t marker = b[i + 1];
    if (marker == 0xff) {  // fill byte
      ++i;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {  // no length
      i += 2;
      continue;
    }
    if (marker == 0xda || marker == 0xd9) break;  // start of scan, end of image
    const size_t length = read_u16(b.data() + i + 2, false);
    if (length < 2 || length > n - i - 2) break;
    const uint8_t* seg = b.data() + i + 4;
    const size_t seg_bytes = length - 2;
    if (marker == 0xe1 && seg_bytes >= 6 && std::memcmp(seg, "Exif\0\0", 6) == 0 &&
        m.orientation == 1)
      m.orientation = tiff_orientation(seg + 6, seg_bytes - 6);
    if (marker == 0xee && seg_bytes >= 5 && std::memcmp(seg, "Adobe", 5) == 0) m.adobe = true;
    i += 2 + length;
  }
  return m;
}

// The image turned as EXIF orientation o (1..8) says: 2 mirror, 3 rotate 180, 4 flip,
// 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 counter-clockwise.
RgbImage orient(RgbImage in, int o) {
  if (o <= 1 || o > 8) return in;
  const int64_t H = in.height, W = in.width;
  const bool swap = o >= 5;
  RgbImage out;
  out.height = swap ? W : H;
  out.width = swap ? H : W;
  out.rgb.resize(in.rgb.size());
  for (int64_t y = 0; y < out.height; ++y)
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sy = y, sx = x;
      switch (o) {
        case 2:
          sx = W - 1 - x;
          break;
        case 3:
          sy = H - 1 - y, sx = W - 1 - x;
          break;
        case 4:
          sy = H - 1 - y;
          break;
        case 5:
          sy = x, sx = y;
          break;
        case 6:
          sy = H - 1 - x, sx = y;
          break;
        case 7:
          sy = H - 1 - x, sx = W - 1 - y;
          break;
        case 8:
          sy = x, sx = W - 1 - y;
          break;
        default:
          break;
      }
      std::memcpy(&out.rgb[static_cast<size_t>((y * out.width + x) * 3)],
                  &in.rgb[static_cast<size_t>((sy * W + sx) * 3)], 3);
    }
  return out;
}

void check_size(const std::string& path, int64_t h, int64_t w) {
  FRUGAL_CHECK(h > 0 && w > 0, path, ": image of ", w, "x", h,
               " pixels (a truncated or corrupt header?)");
  FRUGAL_CHECK(h <= kMaxImagePixels / w, path, ": image of ", w, "x", h,
               " pixels, over the limit of ", kMaxImagePixels, " pixels");
}

struct TjDestroy {
  void operator()(void* h) const { tjDestroy(h); }
};

RgbImage decode_jpeg(std::span<const uint8_t> b, const std::string& path, int64_t min_side) {
  std::unique_ptr<void, TjDestroy> tj(tjInitDecompress());
  FRUGAL_CHECK(tj != nullptr, path, ": cannot start the JPEG decoder: ", tjGetErrorStr2(nullptr));
  FRUGAL_CHECK(b.size() <= 0xffffffffu, path, ": JPEG file over 4 GiB");
  const auto size = static_cast<unsigned long>(b.size());
  int width = 0, height = 0, subsamp = 0, colorspace = 0;
  FRUGAL_CHECK(
      tjDecompressHeader3(tj.get(), b.data(), size, &width, &height, &subsamp, &colorspace) == 0,
      path, ": not a JPEG it can read: ", tjGetErrorStr2(tj.get()));
  check_size(path, height, width);
  // The smallest scale whose shorter side still reaches min_side.
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  tjscalingfactor best{1, 1};
  for (int i = 0; factors && min_side > 0 && i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;
    const int64_t side = std::min(TJSCALED(width, f), TJSCALED(height, f));
    if (side >= min_side && int64_t{f.num} * best.denom < int64_t{best.num} * f.denom) best = f;
  }
  RgbImage img;
  img.width = TJSCALED(width, best);
  img.height = TJSCALED(height, best);
  const JpegMarkers markers = jpeg_markers(b);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  std::vector<uint8_t> pixels(static_cast<size_t>(img.width * img.height * (cmyk ? 4 : 3)));
  // Any warning (a truncated or corrupt stream) is an error: the image would be partly grey.
  const int status =
      tjDecompress2(tj.get(), b.data(), size, pixels.data(), static_cast<int>(img.width), 0,
                    static_cast<int>(img.height), cmyk ? TJPF_CMYK : TJPF_RGB, 0);
  FRUGAL_CHECK(status == 0, path, ": corrupt or truncated JPEG: ", tjGetErrorStr2(tj.get()));
  if (!cmyk) {
    img.rgb = std::move(pixels);
  } else {
    // Without colour management: RGB = (1 - C)(1 - K), inverted first where Adobe wrote it so.
    img.rgb.resize(static_cast<size_t>(img.width * img.height * 3));
    for (size_t p = 0; p < static_cast<size_t>(img.width * img.height); ++p) {
      const auto ink = [&](int c) {
        const int v = pixels[4 * p + static_cast<size_t>(c)];
        return markers.adobe ? 255 - v : v;
      };
      const int k = 255 - ink(3);
      for (int c = 0; c < 3; ++c)
        img.rgb[3 * p + static_cast<size_t>(c)] = static_cast<uint8_t>((255 - ink(c)) * k / 255);
    }
  }
  return orient(std::move(img), markers.orientation);
}

RgbImage decode_png(std::span<const uint8_t> b, const std::string& path) {
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  struct Free {
    png_image* p;
    ~Free() { png_image_free(p); }
  } free{&png};
  FRUGAL_CHECK(png_image_begin_read_from_memory(&png, b.data(), b.size()) != 0, path,
               ": not a PNG it can read: ", png.message);
  check_size(path, png.height, png.width);
  // RGBA, then the alpha dropped, not composited: as PIL's convert("RGB") that torchvision's
  // ImageFolder applies.
  png.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> rgba(PNG_IMAGE_SIZE(png));
  FRUGAL_CHECK(png_image_finish_read(&png, nullptr, rgba.data(), 0, nullptr) != 0, path,
               ": corrupt or truncated PNG: ", png.message);
  RgbImage img;
  img.height = png.height;
  img.width = png.width;
  img.rgb.resize(static_cast<size_t>(img.height * img.width * 3));
  for (size_t p = 0; p < static_cast<size_t>(img.height * img.width); ++p)
    std::memcpy(&img.rgb[3 * p], &rgba[4 * p], 3);
  return img;
}

}  // namespace

ImageFormat sniff_image(std::span<const uint8_t> b) {
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return ImageFormat::jpeg;
  if (b.size() >= 8 && std::memcmp(b.data(), kPngMagic, 8) == 0) return ImageFormat::png;
  return ImageFormat::unknown;
}

std::vector<uint8_t> read_image_file(const std::string& path) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  FRUGAL_CHECK(!ec, path, ": cannot read: ", ec.message());
  FRUGAL_CHECK(bytes > 0, path, ": empty file (0 bytes), not an image");
  FRUGAL_CHECK(bytes <= static_cast<uintmax_t>(kMaxImageFileBytes), path, ": ", bytes,
               " bytes, over the limit of ", kMaxImageFileBytes, " for one image");
  std::ifstream in(path, std::ios::binary);
  FRUGAL_CHECK(in.good(), path, ": cannot open");
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes));
  FRUGAL_CHECK(in.gcount() == static_cast<std::streamsize>(bytes), path,
               ": read fewer bytes than its size (", in.gcount(), " of ", bytes, ")");
  return data;
}

int jpeg_exif_orientation(std::span<const uint8_t> bytes) {
  if (sniff_image(bytes) != ImageFormat::jpeg) return 1;
  return jpeg_markers(bytes).orientation;
}

RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& path, int64_t min_side) {
  switch (sniff_image(bytes)) {
    case ImageFormat::jpeg:
      return decode_jpeg(bytes, path, min_side);
    case ImageFormat::png:
      return decode_png(bytes, path);
    default:
      break;
  }
  throw Error(path + ": not an image (neither JPEG nor PNG by its first bytes)");
}

std::vector<uint8_t> encode_jpeg(const RgbImage& img, int quality, bool grey) {
  FRUGAL_CHECK(quality >= 1 && quality <= 100, "JPEG quality ", quality, ", expected 1..100");
  check_size("encode_jpeg", img.height, img.width);
  std::unique_ptr<void, TjDestroy> tj(tjInitCompress());
  FRUGAL_CHECK(tj != nullptr, "cannot start the JPEG encoder: ", tjGetErrorStr2(nullptr));
  std::vector<uint8_t> src;
  if (grey)
    for (size_t p = 0; p < img.rgb.size(); p += 3) src.push_back(img.rgb[p]);
  const uint8_t* pixels = grey ? src.data() : img.rgb.data();
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(tj.get(), pixels, static_cast<int>(img.width), 0,
                                 static_cast<int>(img.height), grey ? TJPF_GRAY : TJPF_RGB, &out,
                                 &size, grey ? TJSAMP_GRAY : TJSAMP_444, quality, 0);
  std::vector<uint8_t> bytes;
  if (status == 0) bytes.assign(out, out + size);
  const std::string why = status == 0 ? "" : tjGetErrorStr2(tj.get());
  tjFree(out);
  FRUGAL_CHECK(status == 0, "cannot encode a JPEG: ", why);
  return bytes;
}

std::vector<uint8_t> encode_png(const RgbImage& img, bool grey) {
  check_size("encode_png", img.height, img.width);
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(img.width);
  png.height = static_cast<png_uint_32>(img.height);
  png.format = grey ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  std::vector<uint8_t> src;
  if (grey)
    for (size_t p = 0; p < img.rgb.size(); p += 3) src.push_back(img.rgb[p]);
  const uint8_t* pixels = grey ? src.data() : img.rgb.data();
  png_alloc_size_t size = 0;
  FRUGAL_CHECK(png_image_write_to_memory(&png, nullptr, &size, 0, pixels, 0, nullptr) != 0,
               "cannot encode a PNG: ", png.message);
  std::vector<uint8_t> bytes(size);
  FRUGAL_CHECK(png_image_write_to_memory(&png, bytes.data(), &size, 0, pixels, 0, nullptr) != 0,
               "cannot encode a PNG: ", png.message);
  bytes.resize(size);
  return bytes;
}

}  // namespace frugal
