// ONNX import left out (-DFRUGAL_ONNX=OFF): reading a file says so. The rest of the importer
// (models/onnx_record.cpp) needs no protobuf and is built either way.
#include "core/error.h"
#include "models/onnx.h"

namespace frugal {

OnnxModel load_onnx_bytes(const std::string& path, const char*, size_t, bool) {
  throw Error(path +
              ": this frugal was built without ONNX import (-DFRUGAL_ONNX=OFF; it needs "
              "libonnx-dev and libprotobuf-dev)");
}

OnnxModel load_onnx(const std::string& path, bool keep_weights) {
  return load_onnx_bytes(path, nullptr, 0, keep_weights);
}

}  // namespace frugal
