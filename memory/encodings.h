// Chooses what each op saves for backward where it has a choice (a compact encoding or its
// own output). Results are the same bits either way; only lifetimes change.
#pragma once

#include <span>

#include "autograd/op.h"

namespace frugal {

class Tape;

// Planned: the compact encoding unless another op's backward reads the output anyway (or it
// is kept to the end). Returns the number of ops that save a compact encoding.
int choose_encodings(Tape& tape, Mode mode, const Backend& backend, std::span<const int> keep);
// Baseline (Torch's modules): every op reads its full output.
void use_full_encodings(Tape& tape);

}  // namespace frugal
