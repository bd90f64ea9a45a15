// Conv2d kernels of the CUDA backend over cuDNN. Each geometry gets a plan on first use: its
// descriptors and, per direction, the first algorithm in cuDNN's heuristic order that is
// deterministic, uses no tensor-op (TF32) math and needs at most kWorkspaceLimit bytes of
// workspace. The workspace is the op's scratch, so the memory planner sees and places it.
#include <algorithm>
#include <string>
#include <vector>

#include "core/kernel_checks.h"
#include "cuda/channel.h"
#include "cuda/cuda_backend.h"
#include "cuda/cudnn_handles.h"

namespace frugal {

struct ConvPlan {
  TensorDescriptor x, y;  // (N,C,H,W) and (N,K,P,Q); also dx and dy
  FilterDescriptor w;     // (K,C,R,S); also dw
  ConvolutionDescriptor conv;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
};

namespace {

// Workspace bound per direction: algorithms that want more (FFT on large inputs) are skipped.
constexpr size_t kWorkspaceLimit = size_t{64} << 20;

std::string geometry_str(const Conv2dGeometry& g, DType t) {
  return detail::concat("x [", g.N, ",", g.C, ",", g.H, ",", g.W, "] w [", g.K, ",", g.C, ",", g.R,
                        ",", g.S, "] stride ", g.stride_h, "x", g.stride_w, " pad ", g.pad_h, "x",
                        g.pad_w, " ", dtype_name(t));
}

// The first of cuDNN's ranked candidates (then `fallback`) that is deterministic, uses no
// tensor-op math, and whose workspace, asked with our descriptors, fits the limit.
template <typename Perf, typename Algo, typename WorkspaceSize>
Algo choose(const char* op, const std::string& geometry, const std::vector<Perf>& ranked,
            Algo fallback, WorkspaceSize workspace_size, size_t& bytes) {
  std::vector<Algo> candidates;
  for (const Perf& p : ranked)
    if (p.status == CUDNN_STATUS_SUCCESS && p.determinism == CUDNN_DETERMINISTIC &&
        p.mathType != CUDNN_TENSOR_OP_MATH && p.mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
      candidates.push_back(p.algo);
  candidates.push_back(fallback);
  for (Algo a : candidates) {
    size_t b = 0;
    if (workspace_size(a, &b) == CUDNN_STATUS_SUCCESS && b <= kWorkspaceLimit) {
      bytes = b;
      return a;
    }
  }
  throw Error(detail::concat(op, ": cuDNN has no deterministic algorithm within ",
                             kWorkspaceLimit >> 20, " MiB of workspace for ", geometry));
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

void* workspace(const char* op, const Tensor& scratch, size_t bytes, const Device& device) {
  if (bytes == 0) return nullptr;
  FRUGAL_CHECK(scratch.defined() && scratch.bytes() >= bytes, op, ": scratch of ",
               scratch.defined() ? scratch.bytes() : 0, " bytes, needs ", bytes);
  check_device(op, {&scratch}, device);
  return scratch.device_raw();
}

}  // namespace

const ConvPlan& CudaBackend::conv_plan(const Conv2dGeometry& g, DType t) const {
  const std::array<int64_t, 14> key{
      g.N, g.C, g.H,        g.W,        g.K,     g.R,     g.S,
      g.P, g.Q, g.stride_h, g.stride_w, g.pad_h, g.pad_w, static_cast<int64_t>(t)};
  std::lock_guard<std::mutex> lock(plans_mutex_);
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  const std::string geometry = geometry_str(g, t);
  auto p = std::make_shared<ConvPlan>(ConvPlan{
      .x = tensor_nchw(t, g.N, g.C, g.H, g.W),
      .y = tensor_nchw(t, g.N, g.K, g.P, g.Q),
      .w = filter_kcrs(t, g.K, g.C, g.R, g.S),
      .conv = convolution(t, g.pad_h, g.pad_w, g.stride_h, g.stride_w),
  });
  int n = 0, count = 0;
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> ranked(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn_, p->x.get(), p->w.get(), p->conv.get(), p->y.get(), count, &n, ranked.data()));
    ranked.resize(static_cast<size_t>(n));
    p->forward = choose(
        "conv2d forward", geometry, ranked, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
        [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(cudnn_, p->x.get(), p->w.get(),
                                                         p->conv.get(), p->y.get(), a, bytes);
        },
        p->forward_bytes);
  }
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> ranked(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        cudnn_, p->w.get(), p->y.get(), p->conv.get(), p->x.get(), count, &n, ranked.data()));
    ranked.resize(static_cast<size_t>(n));
    p->backward_data = choose(
        "conv2d backward data", geometry, ranked, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, p->w.get(), p->y.get(),
                                                              p->conv.get(), p->x.get(), a, bytes);
        },
        p->backward_data_bytes);
  }
  {
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnn_, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> ranked(static_cast<size_t>(count));
    FRUGAL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        cudnn_, p->x.get(), p->y.get(), p->conv.get(), p->w.get(), count, &n, ranked.data()));
    ranked.resize(static_cast<size_t>(n));
    p->backward_filter = choose(
        "conv2d backward filter", geometry, ranked, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
              cudnn_, p->x.get(), p->y.get(), p->conv.get(), p->w.get(), a, bytes);
        },
        p->backward_filter_bytes);
  }
  return *plans_.emplace(key, std::move(p)).first->second;
}

size_t CudaBackend::conv2d_forward_scratch(const Conv2dGeometry& g, DType t) const {
  return conv_plan(g, t).forward_bytes;
}
size_t CudaBackend::conv2d_backward_scratch(const Conv2dGeometry& g, DType t) const {
  const ConvPlan& p = conv_plan(g, t);
  return std::max(p.backward_data_bytes, p.backward_filter_bytes);
}

// x (N,C,H,W)  w (K,C,R,S)  b (K) or undefined  y (N,K,P,Q)
void CudaBackend::conv2d_forward(const Conv2dGeometry& g, const Tensor& x, const Tensor& w,
                                 const Tensor& b, Tensor& y, Tensor& scratch) {
  const char* op = "conv2d forward";
  FRUGAL_CHECK(w.defined(), op, ": missing weight");
  check_conv(op, g, x, w, y, device());
  check_conv_bias(op, "bias", g, b, x, device());
  const ConvPlan& p = conv_plan(g, x.dtype());
  const Scalars s(x.dtype());
  FRUGAL_CUDNN_CHECK(cudnnConvolutionForward(cudnn_, s.one(), p.x.get(), x.device_raw(), p.w.get(),
                                             w.device_raw(), p.conv.get(), p.forward,
                                             workspace(op, scratch, p.forward_bytes, device()),
                                             p.forward_bytes, s.zero(), p.y.get(), y.device_raw()));
  if (b.defined()) add_channel_bias(b, g.N, g.K, g.P * g.Q, y);
}

// dy (N,K,P,Q)  w (K,C,R,S)  dx (N,C,H,W)
void CudaBackend::conv2d_backward_data(const Conv2dGeometry& g, const Tensor& dy, const Tensor& w,
                                       Tensor& dx, Tensor& scratch) {
  const char* op = "conv2d backward data";
  FRUGAL_CHECK(w.defined(), op, ": missing weight");
  check_conv(op, g, dx, w, dy, device());
  const ConvPlan& p = conv_plan(g, dy.dtype());
  const Scalars s(dy.dtype());
  FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardData(
      cudnn_, s.one(), p.w.get(), w.device_raw(), p.y.get(), dy.device_raw(), p.conv.get(),
      p.backward_data, workspace(op, scratch, p.backward_data_bytes, device()),
      p.backward_data_bytes, s.zero(), p.x.get(), dx.device_raw()));
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
    FRUGAL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        cudnn_, s.one(), p.x.get(), x.device_raw(), p.y.get(), dy.device_raw(), p.conv.get(),
        p.backward_filter, workspace(op, scratch, p.backward_filter_bytes, device()),
        p.backward_filter_bytes, s.zero(), p.w.get(), dw.device_raw()));
  }
  if (db.defined()) sum_channels(dy, g.N, g.K, g.P * g.Q, db);
}

}  // namespace frugal
