// Conv2d kernels of the CUDA backend over cuDNN. Each geometry gets a plan on first use: its
// descriptors and, per direction, every algorithm that is deterministic and uses no tensor-op
// (TF32) math, timed once by cudnnFind* (with cuDNN's own temporary memory, at planning time,
// never in a step) and kept for the process. The least workspace among them is the op's
// default scratch; the faster ones are offered to the planner as scratch choices
// (memory/workspace.h), and each kernel runs the fastest algorithm that fits the scratch the
// plan gave it. Planned and baseline steps get the same scratch, so the same algorithms.
// cuDNN pads both sides of an axis alike; a geometry padded more on one side (TensorFlow's
// "same" padding at stride 2, as exports of its models have it) is run as a convolution without
// padding over a zero-padded copy of the input at the front of the op's scratch: forward and
// the filter gradient fill it from x, the data gradient computes the padded dx there and copies
// its interior out. Past 400 lines: the plan (descriptors, the timed algorithms, the scratch
// choices, the padded copy) and the three passes that read it share ConvPlan, private here.
#include <algorithm>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/copy_box.h"
#include "core/kernel_checks.h"
#include "cuda/channel.h"
#include "cuda/cuda_backend.h"
#include "cuda/cudnn_handles.h"

namespace frugal {

namespace {

// One usable algorithm of one direction: its workspace and measured time.
template <typename Algo>
struct Measured {
  Algo algo{};
  size_t bytes = 0;
  double seconds = 0;
  std::string name;
};

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "implicit GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "implicit precomputed GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "Winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "Winograd non-fused";
    default:
      return "forward algorithm";
  }
}
const char* algo_name(cudnnConvolutionBwdDataAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return "data algo 0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return "data algo 1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
      return "data FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return "data FFT tiling";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
      return "data Winograd";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return "data Winograd non-fused";
    default:
      return "data algorithm";
  }
}
const char* algo_name(cudnnConvolutionBwdFilterAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
      return "filter algo 0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
      return "filter algo 1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
      return "filter FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
      return "filter algo 3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
      return "filter Winograd non-fused";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
      return "filter FFT tiling";
    default:
      return "filter algorithm";
  }
}

// cuDNN's timed results that qualify (deterministic, full-precision math), fastest first.
template <typename Perf>
auto usable(const std::vector<Perf>& found) {
  std::vector<Measured<decltype(Perf{}.algo)>> out;
  for (const Perf& p : found)
    if (p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC &&
        p.mathType != CUDNN_TENSOR_OP_MATH && p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      out.push_back({p.algo, p.memory, static_cast<double>(p.time) * 1e-3, algo_name(p.algo)});
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
  return out;
}

template <typename Algo>
size_t least_bytes(const std::vector<Measured<Algo>>& v) {
  size_t b = v.front().bytes;
  for (const auto& m : v) b = std::min(b, m.bytes);
  return b;
}

// The fastest algorithm whose workspace fits `bytes` (null if none does).
template <typename Algo>
const Measured<Algo>* fastest_within(const std::vector<Measured<Algo>>& v, size_t bytes) {
  for (const auto& m : v)  // fastest first
    if (m.bytes <= bytes) return &m;
  return nullptr;
}

}  // namespace

struct ConvPlan {
  TensorDescriptor x, y;  // (N,C,H,W) and (N,K,P,Q); also dx and dy
  FilterDescriptor w;     // (K,C,R,S); also dw
  ConvolutionDescriptor conv;
  std::vector<Measured<cudnnConvolutionFwdAlgo_t>> forward = {};
  std::vector<Measured<cudnnConvolutionBwdDataAlgo_t>> backward_data = {};
  std::vector<Measured<cudnnConvolutionBwdFilterAlgo_t>> backward_filter = {};
  size_t forward_bytes = 0, backward_bytes = 0;  // the least scratch of each pass
  std::vector<ScratchChoice> forward_choices = {}, backward_choices = {};
  // Uneven padding: x (and dx) go through a zero-padded copy of padded_shape at the front of
  // the scratch, padded_bytes (rounded up to 256), the workspace after it; x's descriptor is
  // the padded copy's and the convolution pads nothing. shift: (0, 0, -pad_h, -pad_w).
  bool padded = false;
  Shape padded_shape = {};
  size_t padded_bytes = 0;
  std::vector<int64_t> shift = {};
};

namespace {

std::string geometry_str(const Conv2dGeometry& g, DType t) {
  return detail::concat("x [", g.N, ",", g.C, ",", g.H, ",", g.W, "] w [", g.K, ",", g.C / g.groups,
                        ",", g.R, ",", g.S, "] stride ", g.stride_h, "x", g.stride_w, " pad ",
                        g.pad_h, "x", g.pad_w, " dilation ", g.dilation_h, "x", g.dilation_w,
                        " groups ", g.groups, " ", dtype_name(t));
}

// The choices of the forward pass: the algorithms that beat every one with less workspace.
std::vector<ScratchChoice> frontier(std::vector<ScratchChoice> all) {
  std::stable_sort(all.begin(), all.end(), [](const ScratchChoice& a, const ScratchChoice& b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.seconds < b.seconds;
  });
  std::vector<ScratchChoice> out;
  for (const ScratchChoice& c : all)
    if (out.empty() || c.seconds < out.back().seconds) {
      if (!out.empty() && out.back().bytes == c.bytes) out.pop_back();
      out.push_back(c);
    }
  return out;
}

// The backward pass's choices: at each workspace size either direction can use, the fastest
// data algorithm plus the fastest filter algorithm within it.
std::vector<ScratchChoice> backward_frontier(const ConvPlan& p) {
  std::vector<size_t> sizes;
  for (const auto& m : p.backward_data) sizes.push_back(m.bytes);
  for (const auto& m : p.backward_filter) sizes.push_back(m.bytes);
  std::vector<ScratchChoice> all;
  for (size_t s : sizes) {
    if (s < p.backward_bytes) continue;
    const auto* d = fastest_within(p.backward_data, s);
    const auto* f = fastest_within(p.backward_filter, s);
    if (d && f) all.push_back({s, d->seconds + f->seconds, d->name + " + " + f->name});
  }
  return frontier(std::move(all));
}

// 1 and 0 in the compute type, as cuDNN's alpha and beta want them.
struct Scalars {
  explicit Scalars(DType t) : f64(t == DType::f64) {}
  const void* one() const { return f64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return f64 ? static_cast<const void*>(&d0) : &f0; }
  bool f64;
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
};

// The fastest algorithm of `v` that fits the scratch given (its pointer and bytes in `ws`).
template <typename Algo>
const Measured<Algo>* pick(const char* op, const std::vector<Measured<Algo>>& v,
                           const Tensor& scratch, const Device& device, void*& ws) {
  const size_t bytes = scratch.defined() ? scratch.bytes() : 0;
  const Measured<Algo>* m = fastest_within(v, bytes);
  FRUGAL_CHECK(m != nullptr, op, ": scratch of ", bytes, " bytes, needs at least ", least_bytes(v));
  ws = nullptr;
  if (m->bytes > 0) {
    check_device(op, {&scratch}, device);
    ws = scratch.device_raw();
  }
  return m;
}

// The scratch after the padded copy (all of it where there is none): the workspace.
Tensor workspace_of(const char* op, const ConvPlan& p, const Tensor& scratch) {
  if (!p.padded) return scratch;
  const size_t bytes = scratch.defined() ? scratch.bytes() : 0;
  FRUGAL_CHECK(bytes >= p.padded_bytes, op, ": scratch of ", bytes, " bytes, needs at least ",
               p.padded_bytes, " for the zero-padded input of uneven padding");
  if (bytes == p.padded_bytes) return Tensor();
  return Tensor(scratch.storage(), scratch.offset() + p.padded_bytes,
                Shape{static_cast<int64_t>(bytes - p.padded_bytes)}, DType::u8);
}

// x's shape as the geometry has it (the tensor may hold it otherwise: a Conv1d's (N, C, L)).
Shape input_shape(const Conv2dGeometry& g) {
  return Shape{g.N, g.C, g.H, g.W};
}

// The padded copy at the front of the scratch, of x's type.
Tensor padded_of(const ConvPlan& p, const Tensor& scratch, DType t) {
  return Tensor(scratch.storage(), scratch.offset(), p.padded_shape, t);
}

}  // namespace

const ConvPlan& CudaBackend::conv_plan(const Conv2dGeometry& g, DType t) const {
  const std::array<int64_t, 19> key{g.N,
                                    g.C,
                                    g.H,
                                    g.W,
                                    g.K,
                                    g.R,
                                    g.S,
                                    g.P,
                                    g.Q,
                                    g.stride_h,
                                    g.stride_w,
                                    g.pad_h,
                                    g.pad_w,
                                    g.pad_h_end,
                                    g.pad_w_end,
                                    g.dilation_h,
                                    g.dilation_w,
                                    g.groups,
                                    static_cast<int64_t>(t)};
  std::lock_guard<std::mutex> lock(plans_mutex_);
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  const std::string geometry = geometry_str(g, t);
  // What cuDNN runs: g itself, or with uneven padding g over the padded input, padding nothing.
  Conv2dGeometry c = g;
  const bool padded = g.pad_h_end != g.pad_h || g.pad_w_end != g.pad_w;
  if (padded) {
    c.H += g.pad_h + g.pad_h_end;
    c.W += g.pad_w + g.pad_w_end;
    c.pad_h = c.pad_w = c.pad_h_end = c.pad_w_end = 0;
  }
  auto p = std::make_shared<ConvPlan>(ConvPlan{
      .x = tensor_nchw(t, c.N, c.C, c.H, c.W),
      .y = tensor_nchw(t, g.N, g.K, g.P, g.Q),
      .w = filter_kcrs(t, g.K, g.C / g.groups, g.R, g.S),
      .conv = convolution(t, c),
  });
  if (padded) {
    p->padded = true;
    p->padded_shape = Shape{c.N, c.C, c.H, c.W};
    p->padded_bytes = round_up(static_cast<size_t>(p->padded_shape.numel()) * dtype_size(t), 256);
    p->shift = {0, 0, -g.pad_h, -g.pad_w};
  }
  int n = 0, count = 0;
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> found(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(
        cudnn_, p->x.get(), p->w.get(), p->conv.get(), p->y.get(), count, &n, found.data()));
    found.resize(static_cast<size_t>(n));
    p->forward = usable(found);
  }
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> found(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        cudnn_, p->w.get(), p->y.get(), p->conv.get(), p->x.get(), count, &n, found.data()));
    found.resize(static_cast<size_t>(n));
    p->backward_data = usable(found);
  }
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> found(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
        cudnn_, p->x.get(), p->y.get(), p->conv.get(), p->w.get(), count, &n, found.data()));
    found.resize(static_cast<size_t>(n));
    p->backward_filter = usable(found);
  }
  FRUGAL_CHECK(!p->forward.empty() && !p->backward_data.empty() && !p->backward_filter.empty(),
               "conv2d: cuDNN has no deterministic full-precision algorithm for ",
               p->forward.empty()         ? "forward"
               : p->backward_data.empty() ? "backward data"
                                          : "backward filter",
               " of ", geometry);
  p->forward_bytes = least_bytes(p->forward);
  p->backward_bytes = std::max(least_bytes(p->backward_data), least_bytes(p->backward_filter));
  std::vector<ScratchChoice> forward;
  for (const auto& m : p->forward) forward.push_back({m.bytes, m.seconds, m.name});
  p->forward_choices = frontier(std::move(forward));
  p->backward_choices = backward_frontier(*p);
  // Every pass's scratch also holds the padded copy in front of its workspace.
  p->forward_bytes += p->padded_bytes;
  p->backward_bytes += p->padded_bytes;
  for (auto* choices : {&p->forward_choices, &p->backward_choices})
    for (ScratchChoice& choice : *choices) choice.bytes += p->padded_bytes;
  return *plans_.emplace(key, std::move(p)).first->second;
}

size_t CudaBackend::conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const {
  return conv_plan(g, t).forward_bytes;
}
size_t CudaBackend::conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const {
  return conv_plan(g, t).backward_bytes;
}
std::vector<ScratchChoice> CudaBackend::conv2d_scratch_choices(const Conv2dGeometry& g, DType t,
                                                               bool backward) const {
  const ConvPlan& p = conv_plan(g, t);
  return backward ? p.backward_choices : p.forward_choices;
}

// x (N,C,H,W)  w (K,C/groups,R,S)  b (K) or undefined  y (N,K,P,Q)
void CudaBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                 const Tensor& b, Tensor& y, Tensor& scratch) {
  const char* op = "conv2d forward";
  check_defined(op, "weight", w);
  check_conv(op, g, x, w, y, device());
  check_conv_bias(op, "bias", g, b, x, device());
  const ConvPlan& p = conv_plan(g, x.dtype());
  const Scalars s(x.dtype());
  void* ws = nullptr;
  const Tensor workspace = workspace_of(op, p, scratch);
  const auto* a = pick(op, p.forward, workspace, device(), ws);
  const void* in = x.device_raw();
  if (p.padded) {
    Tensor xp = padded_of(p, scratch, x.dtype());
    fill(xp, 0);
    strided_copy(shifted_box(input_shape(g), p.padded_shape, p.shift), x, xp);
    in = xp.device_raw();
  }
  FRUGAL_CUDNN_CHECK(cudnnConvolutionForward(cudnn_, s.one(), p.x.get(), in, p.w.get(),
                                             w.device_raw(), p.conv.get(), a->algo, ws, a->bytes,
                                             s.zero(), p.y.get(), y.device_raw()));
  if (b.defined()) add_channel_bias(b, g.N, g.K, g.P * g.Q, y);
}

// dy (N,K,P,Q)  w (K,C,R,S)  dx (N,C,H,W)
void CudaBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                       Tensor& dx, Tensor& scratch) {
  const char* op = "conv2d backward data";
  check_defined(op, "weight", w);
  check_conv(op, g, dx, w, dy, device());
  const ConvPlan& p = conv_plan(g, dy.dtype());
  const Scalars s(dy.dtype());
  void* ws = nullptr;
  const Tensor workspace = workspace_of(op, p, scratch);
  const auto* a = pick(op, p.backward_data, workspace, device(), ws);
  Tensor dxp = p.padded ? padded_of(p, scratch, dx.dtype()) : Tensor();
  FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardData(
      cudnn_, s.one(), p.w.get(), w.device_raw(), p.y.get(), dy.device_raw(), p.conv.get(), a->algo,
      ws, a->bytes, s.zero(), p.x.get(), p.padded ? dxp.device_raw() : dx.device_raw()));
  if (p.padded) {  // the interior; the padding's gradients are dropped
    std::vector<int64_t> back(p.shift.size());
    for (size_t i = 0; i < back.size(); ++i) back[i] = -p.shift[i];
    strided_copy(shifted_box(p.padded_shape, input_shape(g), back), dxp, dx);
  }
}

// x (N,C,H,W)  dy (N,K,P,Q)  dw (K,C,R,S) or undefined  db (K) or undefined
void CudaBackend::conv2d_backward_filter(const Conv2dGeometry& g, const Tensor& x, const Tensor& dy,
                                         Tensor& dw, Tensor& db, Tensor& scratch) {
  const char* op = "conv2d backward filter";
  check_conv(op, g, x, dw, dy, device());  // dw undefined: bias only
  check_conv_bias(op, "bias gradient", g, db, x, device());
  if (dw.defined()) {
    const ConvPlan& p = conv_plan(g, x.dtype());
    const Scalars s(x.dtype());
    void* ws = nullptr;
    const Tensor workspace = workspace_of(op, p, scratch);
    const auto* a = pick(op, p.backward_filter, workspace, device(), ws);
    const void* in = x.device_raw();
    if (p.padded) {  // the padded copy again: the data gradient may have used the scratch
      Tensor xp = padded_of(p, scratch, x.dtype());
      fill(xp, 0);
      strided_copy(shifted_box(input_shape(g), p.padded_shape, p.shift), x, xp);
      in = xp.device_raw();
    }
    FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnn_, s.one(), p.x.get(), in, p.y.get(), dy.device_raw(), p.conv.get(), a->algo, ws,
        a->bytes, s.zero(), p.w.get(), dw.device_raw()));
  }
  if (db.defined()) sum_channels(dy, g.N, g.K, g.P * g.Q, db, partials(), sums());
}

}  // namespace frugal
