// Test images: encoders over TurboJPEG and libpng (tests/images.h).
#include "tests/images.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace frugal::testing {

RgbImage test_card(int64_t width, int64_t height) {
  RgbImage img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<size_t>(width * height * 3));
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x) {
      uint8_t* p = &img.rgb[static_cast<size_t>((y * width + x) * 3)];
      p[0] = static_cast<uint8_t>(255 * x / std::max<int64_t>(1, width - 1));
      p[1] = static_cast<uint8_t>(255 * y / std::max<int64_t>(1, height - 1));
      p[2] = static_cast<uint8_t>((x + y) % 2 ? 200 : 60);
      if (x < width / 4 && y < height / 4) p[0] = p[1] = p[2] = 250;  // the top-left mark
    }
  return img;
}

std::vector<uint8_t> test_jpeg(const RgbImage& img, JpegKind kind, int quality) {
  if (kind != JpegKind::cmyk) return frugal::encode_jpeg(img, quality, kind == JpegKind::grey);
  // libjpeg-turbo's CMYK convention (inverted, as Adobe's): C = 255 r / max, K = max.
  std::vector<uint8_t> src;
  for (size_t p = 0; p < img.rgb.size(); p += 3) {
    const uint8_t* c = &img.rgb[p];
    const int k = std::max({c[0], c[1], c[2]});
    for (int i = 0; i < 3; ++i)
      src.push_back(static_cast<uint8_t>(k == 0 ? 255 : (255 * c[i] + k / 2) / k));
    src.push_back(static_cast<uint8_t>(k));
  }
  tjhandle tj = tjInitCompress();
  if (!tj) throw std::runtime_error("tjInitCompress failed");
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int status =
      tjCompress2(tj, src.data(), static_cast<int>(img.width), 0, static_cast<int>(img.height),
                  TJPF_CMYK, &out, &size, TJSAMP_444, quality, 0);
  std::vector<uint8_t> bytes;
  if (status == 0) bytes.assign(out, out + size);
  tjFree(out);
  tjDestroy(tj);
  if (status != 0) throw std::runtime_error("tjCompress2 failed");
  return bytes;
}

std::vector<uint8_t> test_png(const RgbImage& img, bool grey, bool alpha) {
  if (!alpha) return frugal::encode_png(img, grey);
  png_image png;
  std::memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(img.width);
  png.height = static_cast<png_uint_32>(img.height);
  png.format = PNG_FORMAT_RGBA;
  std::vector<uint8_t> src;
  for (size_t p = 0; p < img.rgb.size(); p += 3) {
    src.insert(src.end(), img.rgb.begin() + static_cast<long>(p),
               img.rgb.begin() + static_cast<long>(p + 3));
    src.push_back(static_cast<uint8_t>(p % 256));
  }
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, src.data(), 0, nullptr))
    throw std::runtime_error("png size failed");
  std::vector<uint8_t> bytes(size);
  if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, src.data(), 0, nullptr))
    throw std::runtime_error(std::string("png write failed: ") + png.message);
  bytes.resize(size);
  return bytes;
}

std::vector<uint8_t> with_exif_orientation(const std::vector<uint8_t>& jpeg, int orientation,
                                           bool le) {
  auto u16 = [le](std::vector<uint8_t>& v, unsigned x) {
    if (le) {
      v.push_back(static_cast<uint8_t>(x)), v.push_back(static_cast<uint8_t>(x >> 8));
    } else {
      v.push_back(static_cast<uint8_t>(x >> 8)), v.push_back(static_cast<uint8_t>(x));
    }
  };
  auto u32 = [le, &u16](std::vector<uint8_t>& v, unsigned x) {
    if (le) {
      u16(v, x & 0xffff), u16(v, x >> 16);
    } else {
      u16(v, x >> 16), u16(v, x & 0xffff);
    }
  };
  std::vector<uint8_t> tiff;
  tiff.push_back(le ? 'I' : 'M'), tiff.push_back(le ? 'I' : 'M');
  u16(tiff, 42);
  u32(tiff, 8);  // IFD0
  u16(tiff, 1);  // one entry
  u16(tiff, 0x0112), u16(tiff, 3), u32(tiff, 1);
  u16(tiff, static_cast<unsigned>(orientation)), u16(tiff, 0);
  u32(tiff, 0);  // no next IFD
  std::vector<uint8_t> seg = {'E', 'x', 'i', 'f', 0, 0};
  seg.insert(seg.end(), tiff.begin(), tiff.end());
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);  // SOI
  out.push_back(0xff), out.push_back(0xe1);
  const size_t length = seg.size() + 2;
  out.push_back(static_cast<uint8_t>(length >> 8)), out.push_back(static_cast<uint8_t>(length));
  out.insert(out.end(), seg.begin(), seg.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

}  // namespace frugal::testing
