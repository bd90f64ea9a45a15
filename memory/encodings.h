// Chooses what each op saves for backward where it has a choice (a compact encoding or its
// own output). Results are the same bits either way; only lifetimes change.
#pragma once

#include <span>

#include "memory/step.h"

namespace frugal {

// Planned: the compact encoding unless another op's backward reads the output anyway (or it
// is kept to the end). Sets each such op's `compact` and `roles`; returns the number of ops
// that save a compact encoding. With `free_for_grads`, a backward reader that may write the
// output's gradient over it (Roles::grad_takes_input) does not count: the encoding lets the
// output die at that reader's backward and its gradient take the bytes.
int choose_encodings(Step& step, std::span<const int> keep, bool free_for_grads = false);
// Baseline (Torch's modules): every op reads its full output.
void use_full_encodings(Step& step);

}  // namespace frugal
