// Image files for training: JPEG (libjpeg-turbo's TurboJPEG API, decoding at a reduced scale
// when the target is much smaller) and PNG (libpng), decoded to 8-bit RGB; grey images are
// replicated, CMYK/YCCK JPEGs converted without colour management, and a JPEG's EXIF
// orientation applied. Then one resampling pass crops, resizes, flips and normalizes into a
// model's (3,H,W) f32 input. Every error names the file and what was wrong with it.
#pragma once

#include <array>
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

// A region of an image in its pixel coordinates.
struct CropBox {
  double top = 0, left = 0, height = 0, width = 0;
};

// Per-channel normalization: x = (v / 255 - mean) / std.
struct Normalize {
  std::array<double, 3> mean{0.485, 0.456, 0.406};  // ImageNet's
  std::array<double, 3> std{0.229, 0.224, 0.225};
};

// Resamples `box` of `image` to (3, out_h, out_w) f32 at `out`, mirrored left-right when
// `flip`, normalized: a separable triangle (bilinear) filter whose support widens with the
// scale when shrinking, so downscaling averages rather than skips pixels (as PIL's bilinear).
void resample(const RgbImage& image, const CropBox& box, int64_t out_h, int64_t out_w, bool flip,
              const Normalize& normalize, float* out);

// The same filter over float planes: x (C,H,W) -> y (C,out_h,out_w), `box` of each plane
// resampled, mirrored when `flip`, with no normalization (the weights are non-negative and sum
// to 1, so it commutes with any per-channel affine one). Pixels outside x repeat its edge.
void resample_planes(const float* x, int64_t C, int64_t H, int64_t W, const CropBox& box,
                     int64_t out_h, int64_t out_w, bool flip, float* y);

}  // namespace frugal
