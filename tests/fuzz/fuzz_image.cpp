// libFuzzer target for the image readers, JPEG and PNG (-DFRUGAL_FUZZ=ON; tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  frugal::fuzz::read_image(data, size);
  return 0;
}
