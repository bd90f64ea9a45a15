// Image files for training: JPEG (libjpeg-turbo's TurboJPEG API, decoding at a reduced scale
// when the target is much smaller) and PNG (libpng), decoded to 8-bit RGB; grey images are
// replicated, CMYK/YCCK JPEGs converted without colour management, and a JPEG's EXIF
// orientation applied (data/resample.h then crops, resizes, flips and normalizes them into a
// model's (3,H,W) f32 input). Every error names the file and what was wrong with it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace frugal {

// The largest image decoded (pixels): beyond any photograph, far below what a corrupt header
// can claim.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;
// The largest image file read.
inline constexpr int64_t kMaxImageFileBytes = int64_t{1} << 30;

// Decoded pixels: rows of width RGB triples.
struct RgbImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // height * width * 3
};

enum class ImageFormat { unknown, jpeg, png };
// The format a file's first bytes announce.
ImageFormat sniff_image(std::span<const uint8_t> bytes);

// A file's bytes (at most kMaxImageFileBytes); errors name `path`.
std::vector<uint8_t> read_image_file(const std::string& path);

// Decodes JPEG or PNG bytes (`path` for messages). A JPEG is decoded at the smallest of
// libjpeg-turbo's scales (1/8 .. 1) whose shorter side is still at least `min_side` (0: full
// size), then turned as its EXIF orientation says.
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& path,
                      int64_t min_side = 0);

// The EXIF orientation (1..8) of a JPEG's APP1 segment, 1 if it has none or it cannot be read.
int jpeg_exif_orientation(std::span<const uint8_t> bytes);

// Encoders, for writing data sets out as image folders (`frugal export-images`): JPEG at
// `quality` (1..100, 4:4:4), PNG; grey writes the red channel as one grey channel.
std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality = 95, bool grey = false);
std::vector<uint8_t> encode_png(const RgbImage& image, bool grey = false);

}  // namespace frugal
