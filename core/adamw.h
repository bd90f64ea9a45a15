// One element of PyTorch's AdamW update, shared by the CPU and CUDA backends so both round
// alike: the scalars torch.optim.AdamW derives per step (in double, then in the tensor's type)
// and the per-element order of its single-tensor loop.
#pragma once

#include <cmath>

#include "core/backend.h"

#if defined(__CUDACC__)
#define FRUGAL_HOST_DEVICE __host__ __device__
#else
#define FRUGAL_HOST_DEVICE
#endif

namespace frugal {

template <typename T>
struct AdamwScalars {
  T decay;       // 1 - lr wd
  T beta1_rest;  // 1 - beta1: the lerp weight of the first moment
  T beta2, beta2_rest;
  T bias2_sqrt;  // sqrt(1 - beta2^step)
  T eps;
  T neg_step;  // -lr / (1 - beta1^step)
};

template <typename T>
AdamwScalars<T> adamw_scalars(const OptimizerConfig& c) {
  const double step = static_cast<double>(c.step);
  const double bias1 = 1 - std::pow(c.beta1, step), bias2 = 1 - std::pow(c.beta2, step);
  return {static_cast<T>(1 - c.lr * c.weight_decay),
          static_cast<T>(1 - c.beta1),
          static_cast<T>(c.beta2),
          static_cast<T>(1 - c.beta2),
          static_cast<T>(std::sqrt(bias2)),
          static_cast<T>(c.eps),
          static_cast<T>(-(c.lr / bias1))};
}

template <typename T>
FRUGAL_HOST_DEVICE inline void adamw_element(const AdamwScalars<T>& k, T& w, T g, T& m, T& v) {
  w = w * k.decay;
  // torch.lerp with a weight below 1/2: m + weight (g - m)
  m = m + k.beta1_rest * (g - m);
  v = v * k.beta2;
  v = v + k.beta2_rest * g * g;
#if defined(__CUDA_ARCH__)
  const T root = sqrt(v);  // CUDA's overload for T
#else
  const T root = std::sqrt(v);
#endif
  const T denom = root / k.bias2_sqrt + k.eps;
  w = w + k.neg_step * m / denom;
}

}  // namespace frugal
