// libFuzzer target for the safetensors reader (built with -DFRUGAL_FUZZ=ON; see
// tests/fuzz/README.md).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/readers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  frugal::fuzz::read_safetensors(data, size);
  return 0;
}
