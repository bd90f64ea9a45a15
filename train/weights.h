// Weights files: every parameter and running statistic of a ParamStore under its own name,
// optionally the optimizer's state ("momentum/<name>": SGD's momentum or AdamW's first moment;
// "second_moment/<name>": AdamW's second), in the safetensors format; the
// metadata carries the model name and, for a training checkpoint, the step counters.
#pragma once

#include <map>
#include <string>

#include "autograd/params.h"
#include "data/safetensors.h"

namespace frugal {

// The store's tensors in host memory (views of a host store's, copies of a device's) and
// `metadata`; the optimizer state that exists when `with_momentum`. Throws, naming the tensor and
// element, if any holds NaN or inf: a weights file is never written from a diverged run.
Safetensors weights_tensors(ParamStore& params, bool with_momentum,
                            std::map<std::string, std::string> metadata);

// Copies a file's tensors into the store. Every parameter must be in the file with its shape
// and dtype, its values finite; a tensor the store lacks is an error (a file for another
// model), and so is a "model" metadata entry other than `model`. Optimizer state is restored
// when `with_momentum` (a parameter without a state tensor in the file keeps none of that
// kind), otherwise ignored.
// Errors name `path`, the tensor and both shapes.
void load_weights(ParamStore& params, const Safetensors& file, const std::string& path,
                  const std::string& model, bool with_momentum);

// How a checkpoint's images were read (frugal train wrote it to the metadata): the side of the
// square input, 0 when the file says nothing (the model's own); and whether held images were
// resampled to fill it (train --resize). A malformed value is an error naming `path`.
int64_t saved_image_size(const Safetensors& file, const std::string& path);
bool saved_resize(const Safetensors& file, const std::string& path);

}  // namespace frugal
