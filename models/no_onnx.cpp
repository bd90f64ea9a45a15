// ONNX import left out (-DFRUGAL_ONNX=OFF): every entry point says so.
#include "core/error.h"
#include "models/onnx.h"

namespace frugal {

namespace {
[[noreturn]] void no_onnx(const std::string& what) {
  throw Error(what + ": this frugal was built without ONNX import (-DFRUGAL_ONNX=OFF; it needs "
                     "libonnx-dev and libprotobuf-dev)");
}
}  // namespace

OnnxModel load_onnx(const std::string& path) {
  no_onnx(path);
}
OnnxModel load_onnx_bytes(const std::string& path, const char*, size_t) {
  no_onnx(path);
}
Value record_onnx(const OnnxModel& model, Value) {
  no_onnx(model.path);
}
void load_onnx_weights(ParamStore&, const OnnxModel& model) {
  no_onnx(model.path);
}
const ModelSpec& onnx_model_spec(const std::string& path) {
  no_onnx(path);
}
const OnnxModel& onnx_model(const std::string& path) {
  no_onnx(path);
}

}  // namespace frugal
