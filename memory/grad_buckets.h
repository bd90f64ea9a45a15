// Data-parallel gradient buckets in the liveness analysis (LivenessOptions::grad_bucket_bytes):
// the analysis's own step, called once every gradient buffer exists.
#pragma once

#include <span>

#include "memory/liveness.h"

namespace frugal {

// Packs the parameter gradients of `live` into buckets (Liveness::buckets): in the order they
// become final (`ready`: value id -> the backward step after which its gradient is final, -1
// for none), about options.grad_bucket_bytes each, one dtype each, every gradient a view at an
// aligned offset. Sets the buckets' ready and wait steps, the members' lifetimes and update
// steps.
void add_grad_buckets(const Step& step, const LivenessOptions& options, std::span<const int> ready,
                      Liveness& live);

}  // namespace frugal
