// Reading an ONNX file's pieces with the ONNX protobuf classes: typed attributes, a pool's
// and a convolution's window, tensors (sizes checked before anything is allocated), the file
// itself. Private to the importer: models/onnx.cpp, the only file that includes it, turns what
// it reads into the plain graph of models/onnx_graph.h.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "models/onnx_graph.h"

namespace frugal {

// The largest ONNX file read: protobuf's own limit for one message.
constexpr int64_t kMaxOnnxBytes = (int64_t{1} << 31) - 1;
// The largest kernel side, stride or padding read from a file (far beyond any network's).
constexpr int64_t kMaxWindow = 4096;
// The largest tensor (elements) an initializer may hold.
constexpr int64_t kMaxInitializerElements = int64_t{1} << 31;

// A file's nodes, attributes and tensors read with the protobuf classes; every error names the
// file (and the node).
struct OnnxReader {
  const std::string& path;

  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const {
    throw Error(path + ": node '" + n.name() + "' (" + n.op_type() + "): " + what);
  }

  const onnx::AttributeProto* attr(const onnx::NodeProto& n, const char* name) const {
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  // The attribute `name`, or null; one of another type than `type` is an error.
  const onnx::AttributeProto* typed(const onnx::NodeProto& n, const char* name,
                                    onnx::AttributeProto::AttributeType type,
                                    const char* what) const {
    const onnx::AttributeProto* a = attr(n, name);
    if (a && a->type() != type) fail(n, std::string("attribute ") + name + " is not " + what);
    return a;
  }
  int64_t get_int(const onnx::NodeProto& n, const char* name, int64_t fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::INT, "an int");
    return a ? a->i() : fallback;
  }
  double get_float(const onnx::NodeProto& n, const char* name, double fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::FLOAT, "a float");
    return a ? a->f() : fallback;
  }
  std::vector<int64_t> get_ints(const onnx::NodeProto& n, const char* name) const {
    const auto* a = typed(n, name, onnx::AttributeProto::INTS, "a list of ints");
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
  }
  std::string get_string(const onnx::NodeProto& n, const char* name,
                         const std::string& fallback) const {
    const auto* a = typed(n, name, onnx::AttributeProto::STRING, "a string");
    return a ? a->s() : fallback;
  }

  // A Conv's strides, pads (each side its own), dilations and group; the kernel comes from the
  // weight, which kernel_shape (optional) must agree with when the weight is recorded.
  // A 1-D window (Conv1d over (N, C, L): one value each, two pads) is taken as 2-D with a
  // height of 1, the recorder running it over (N, C, 1, L).
  // With depth_3d (Conv, ConvTranspose, pools), a 3-D window 1 wide along no axis (along any,
  // for ConvTranspose: unit_axis_3d false) keeps its depth window in o.depth_* and the window
  // of its last two axes in o.conv.
  void conv_window(const onnx::NodeProto& n, OnnxNode& o, bool unit_axis_3d = false,
                   bool depth_3d = false) const {
    size_t dims = !get_ints(n, "kernel_shape").empty() ? get_ints(n, "kernel_shape").size()
                  : !get_ints(n, "strides").empty()    ? get_ints(n, "strides").size()
                  : !get_ints(n, "dilations").empty()  ? get_ints(n, "dilations").size()
                  : get_ints(n, "pads").size() == 2    ? 1
                                                       : 2;
    // A 3-D window one of whose axes is 1 wide, with stride 1 and no padding (LambdaNetworks'
    // (k, k, 1) over (N, 1, H, W, V)): the 2-D window of the other two, that axis recorded
    // into the batch (o.unit_axis, 2 to 4).
    std::vector<size_t> unit_drop;  // the attribute entries of the other two axes
    if (dims == 3 && (unit_axis_3d || depth_3d)) {
      const std::vector<int64_t> k = get_ints(n, "kernel_shape"), st = get_ints(n, "strides"),
                                 pads = get_ints(n, "pads");
      for (size_t a = 3; unit_axis_3d && a-- > 0 && k.size() == 3;)
        if (k[a] == 1 && (st.empty() || (st.size() == 3 && st[a] == 1)) &&
            (pads.empty() || (pads.size() == 6 && pads[a] == 0 && pads[a + 3] == 0))) {
          o.unit_axis = static_cast<int>(a) + 2;
          break;
        }
      if (o.unit_axis == 0 && depth_3d) {
        const std::vector<int64_t> d = get_ints(n, "dilations");
        if (k.size() != 3 || (!st.empty() && st.size() != 3) || (!d.empty() && d.size() != 3) ||
            (!pads.empty() && pads.size() != 6))
          fail(n,
               "a 3-D window needs kernel_shape of three values, strides and dilations of three "
               "where written, and six pads");
        o.depth_kernel = k[0];
        o.depth_stride = st.empty() ? 1 : st[0], o.depth_dilation = d.empty() ? 1 : d[0];
        o.depth_pad_begin = pads.empty() ? 0 : pads[0],
        o.depth_pad_end = pads.empty() ? 0 : pads[3];
        auto outside = [](int64_t v, int64_t lo) { return v < lo || v > kMaxWindow; };
        if (outside(o.depth_kernel, 1) || outside(o.depth_stride, 1) ||
            outside(o.depth_dilation, 1) || outside(o.depth_pad_begin, 0) ||
            outside(o.depth_pad_end, 0))
          fail(n, "a 3-D window's depth: kernel, stride and dilation 1.." +
                      std::to_string(kMaxWindow) + ", pads 0.." + std::to_string(kMaxWindow));
        unit_drop = {1, 2};
      } else {
        if (o.unit_axis == 0)
          fail(n,
               "a 3-D window is imported where one axis is 1 wide with stride 1 and no "
               "padding (kernel_shape written); this one has none");
        for (size_t a = 0; a < 3; ++a)
          if (static_cast<int>(a) + 2 != o.unit_axis) unit_drop.push_back(a);
      }
      dims = 2;
    }
    auto pair = [&](const char* name, int64_t lo) {
      std::vector<int64_t> v = get_ints(n, name);
      if (!unit_drop.empty() && v.size() == 3) v = {v[unit_drop[0]], v[unit_drop[1]]};
      if (v.empty()) v = std::vector<int64_t>(dims, 1);
      if (v.size() == 1 && dims == 1) v.insert(v.begin(), 1);
      if (v.size() != 2 || v[0] < lo || v[1] < lo || v[0] > kMaxWindow || v[1] > kMaxWindow)
        fail(n, std::string(name) + " must be " + (dims == 1 ? "one value" : "two values") +
                    " in " + std::to_string(lo) + ".." + std::to_string(kMaxWindow));
      return v;
    };
    if (dims != 1 && dims != 2)
      fail(n, std::to_string(dims) + "-D windows are not imported (1-D and 2-D are" +
                  (unit_axis_3d ? ", and 3-D ones with an axis 1 wide)" : ")"));
    const std::vector<int64_t> s = pair("strides", 1), d = pair("dilations", 1);
    if (!get_ints(n, "kernel_shape").empty()) {
      const std::vector<int64_t> k = pair("kernel_shape", 1);
      o.kernel_h = k[0], o.kernel_w = k[1];
    }
    std::vector<int64_t> p = get_ints(n, "pads");
    if (!unit_drop.empty() && p.size() == 6)
      p = {p[unit_drop[0]], p[unit_drop[1]], p[unit_drop[0] + 3], p[unit_drop[1] + 3]};
    if (p.empty()) p = {0, 0, 0, 0};
    if (dims == 1 && p.size() == 2) p = {0, p[0], 0, p[1]};
    if (p.size() != 4 || *std::min_element(p.begin(), p.end()) < 0 ||
        *std::max_element(p.begin(), p.end()) > kMaxWindow)
      fail(n, "pads must be four values in 0.." + std::to_string(kMaxWindow) +
                  " (top, left, bottom, right)");
    const int64_t group = get_int(n, "group", 1);
    if (group < 1 || group > kMaxWindow * kMaxWindow)
      fail(n, "group " + std::to_string(group) + " out of range");
    o.conv = {.stride_h = s[0],
              .stride_w = s[1],
              .pad_top = p[0],
              .pad_left = p[1],
              .pad_bottom = p[2],
              .pad_right = p[3],
              .dilation_h = d[0],
              .dilation_w = d[1],
              .groups = group};
    // SAME_UPPER, SAME_LOWER (TensorFlow's SAME, as tf2onnx writes it): pads computed once the
    // input's sizes are known; VALID: none.
    const std::string auto_pad = get_string(n, "auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && !get_ints(n, "pads").empty())
      fail(n, "auto_pad " + auto_pad + " with pads: ONNX allows one or the other");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER")
      o.auto_pad =
          auto_pad == "SAME_UPPER" ? OnnxNode::AutoPad::same_upper : OnnxNode::AutoPad::same_lower;
    else if (auto_pad != "NOTSET" && auto_pad != "VALID")
      fail(n, "auto_pad " + auto_pad + " is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  }

  // TensorProto -> host tensor: FLOAT as f32, DOUBLE as f64, INT64 and INT32 (and BOOL) as
  // int64 values in `ints`.
  Tensor tensor(const onnx::TensorProto& t, std::vector<int64_t>* ints) const {
    int64_t count = 1;
    std::vector<int64_t> dims;
    for (int64_t d : t.dims()) {
      FRUGAL_CHECK(d >= 0 && (d == 0 || count <= kMaxInitializerElements / d), path, ": tensor '",
                   t.name(), "' has dimension ", d, ", too large or negative");
      count *= d;
      dims.push_back(d);
    }
    const std::string& raw = t.raw_data();
    if (t.data_type() == onnx::TensorProto::FLOAT || t.data_type() == onnx::TensorProto::DOUBLE) {
      // float32 or float64 (an export of model.double()). What the file holds is checked
      // before anything is allocated for it.
      const bool f64 = t.data_type() == onnx::TensorProto::DOUBLE;
      const int64_t size = f64 ? 8 : 4;
      const int64_t listed = f64 ? t.double_data_size() : t.float_data_size();
      if (!raw.empty())
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count * size, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count,
                     f64 ? " doubles" : " floats");
      else
        FRUGAL_CHECK(listed == count, path, ": tensor '", t.name(), "' holds ", listed,
                     f64 ? " doubles" : " floats", " for ", count, " elements");
      Tensor out = Tensor::empty(Shape(dims), f64 ? DType::f64 : DType::f32);
      if (!raw.empty() && count > 0)
        std::memcpy(out.raw(), raw.data(), raw.size());
      else
        for (int64_t i = 0; i < count; ++i) {
          if (f64)
            out.data<double>()[i] = t.double_data(static_cast<int>(i));
          else
            out.data<float>()[i] = t.float_data(static_cast<int>(i));
        }
      return out;
    }
    if (t.data_type() == onnx::TensorProto::INT64 && ints) {
      ints->clear();
      if (!raw.empty()) {
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count * 8, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " int64 values");
        ints->resize(static_cast<size_t>(count));
        if (count > 0) std::memcpy(ints->data(), raw.data(), raw.size());
      } else {
        FRUGAL_CHECK(t.int64_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.int64_data_size(), " int64 values for ", count, " elements");
        ints->assign(t.int64_data().begin(), t.int64_data().end());
      }
      return {};
    }
    if (t.data_type() == onnx::TensorProto::INT32 && ints) {
      // Shapes and indices some exports write as int32 (timm's EdgeNeXt): read as int64.
      ints->clear();
      if (!raw.empty()) {
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count * 4, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " int32 values");
        for (int64_t i = 0; i < count; ++i) {
          int32_t v;
          std::memcpy(&v, raw.data() + 4 * i, 4);
          ints->push_back(v);
        }
      } else {
        FRUGAL_CHECK(t.int32_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.int32_data_size(), " int32 values for ", count, " elements");
        ints->assign(t.int32_data().begin(), t.int32_data().end());
      }
      return {};
    }
    if (t.data_type() == onnx::TensorProto::BOOL && ints) {
      // Dropout's training_mode: one byte per value (raw) or int32_data.
      ints->clear();
      if (!raw.empty()) {
        FRUGAL_CHECK(static_cast<int64_t>(raw.size()) == count, path, ": tensor '", t.name(),
                     "' holds ", raw.size(), " bytes of data for ", count, " booleans");
        for (char c : raw) ints->push_back(c != 0);
      } else {
        FRUGAL_CHECK(t.int32_data_size() == count, path, ": tensor '", t.name(), "' holds ",
                     t.int32_data_size(), " booleans for ", count, " elements");
        for (int32_t v : t.int32_data()) ints->push_back(v != 0);
      }
      return {};
    }
    throw Error(
        path + ": tensor '" + t.name() + "' has data type " + std::to_string(t.data_type()) +
        "; frugal imports float32 and float64 weights (and int64 or int32 shapes, booleans)");
  }
};

// The whole file, checked for size first.
inline std::vector<char> read_onnx_file(const std::string& path) {
  std::error_code ec;
  FRUGAL_CHECK(std::filesystem::is_regular_file(path, ec), path, ": no such file");
  const auto size = std::filesystem::file_size(path, ec);
  FRUGAL_CHECK(!ec, path, ": cannot read: ", ec.message());
  FRUGAL_CHECK(size > 0, path, ": empty file (0 bytes), not an ONNX model");
  FRUGAL_CHECK(size <= static_cast<uintmax_t>(kMaxOnnxBytes), path, ": ", size,
               " bytes, over protobuf's 2 GiB limit for one model");
  std::vector<char> bytes(static_cast<size_t>(size));
  std::ifstream in(path, std::ios::binary);
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  FRUGAL_CHECK(in.gcount() == static_cast<std::streamsize>(size), path, ": read ", in.gcount(),
               " of ", size, " bytes");
  return bytes;
}

}  // namespace frugal
