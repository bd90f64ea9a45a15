// Weights files: every parameter and running statistic of a ParamStore under its own name,
// optionally the SGD momentum buffers as "momentum/<name>", in the safetensors format; the
// metadata carries the model name and, for a training checkpoint, the step counters.
#pragma once

#include <map>
#include <string>

#include "autograd/params.h"
#include "data/safetensors.h"

namespace frugal {

// The store's tensors in host memory (views of a host store's, copies of a device's) and
// `metadata`; momentum buffers that exist when `with_momentum`. Throws, naming the tensor and
// element, if any holds NaN or inf: a weights file is never written from a diverged run.
Safetensors weights_tensors(ParamStore& params, bool with_momentum,
                            std::map<std::string, std::string> metadata);

// Copies a file's tensors into the store. Every parameter must be in the file with its shape
// and dtype, its values finite; a tensor the store lacks is an error (a file for another
// model), and so is a "model" metadata entry other than `model`. Momentum buffers are restored when
// `with_momentum` (parameters without one in the file keep none), otherwise ignored.
// Errors name `path`, the tensor and both shapes.
void load_weights(ParamStore& params, const Safetensors& file, const std::string& path,
                  const std::string& model, bool with_momentum);

}  // namespace frugal
