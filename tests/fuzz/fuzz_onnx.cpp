// libFuzzer target for the ONNX loader (-DFRUGAL_FUZZ=ON; tests/fuzz/README.md): protobuf
// parsing, every node's checks and the batch-1 recording on a shapes-only store. Loading must
// succeed or throw frugal::Error.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "models/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    frugal::load_onnx_bytes("fuzz.onnx", reinterpret_cast<const char*>(data), size);
  } catch (const frugal::Error&) {
  }
  return 0;
}
