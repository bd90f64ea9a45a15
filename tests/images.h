// Image files for the tests, written with the libraries frugal reads them with: JPEG through
// TurboJPEG's compressor (RGB, grey, CMYK as YCCK), PNG through libpng's simplified API (RGB,
// grey, with alpha), and an EXIF orientation spliced into a JPEG.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/image.h"

namespace frugal::testing {

enum class JpegKind { rgb, grey, cmyk };

// A w x h test card: a gradient in each channel and a marked top-left corner, so a flip or a
// rotation shows.
RgbImage test_card(int64_t width, int64_t height);
std::vector<uint8_t> test_jpeg(const RgbImage& image, JpegKind kind = JpegKind::rgb,
                               int quality = 95);
std::vector<uint8_t> test_png(const RgbImage& image, bool grey = false, bool alpha = false);
// `jpeg` with an APP1 EXIF segment whose IFD0 holds Orientation = `orientation`, right after SOI.
std::vector<uint8_t> with_exif_orientation(const std::vector<uint8_t>& jpeg, int orientation,
                                           bool little_endian = true);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace frugal::testing
