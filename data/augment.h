// Placing one stored image into a model's input: centred in a larger frame (Fashion-MNIST's
// 28x28 in a 32x32 input), grey replicated to 3 channels, and for training the usual CIFAR
// augmentation (random crop from a frame padded by 4, horizontal flip) drawn per sample.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace frugal {

struct Augment {
  int crop_pad = 0;   // random shift of up to crop_pad pixels each way (0: none)
  bool flip = false;  // horizontal flip with probability 1/2
};

// One sample's draw: a shift (dy, dx) in [-crop_pad, crop_pad] and a flip.
struct AugmentDraw {
  int dy = 0, dx = 0;
  bool flip = false;
};

// The draw for sample `index` in epoch `epoch`: a function of (seed, epoch, index) alone, so a
// resumed or repeated run sees the same crops and flips.
AugmentDraw draw_augment(const Augment& augment, uint64_t seed, int epoch, int64_t index);

// x (C,H,W) -> y (K,P,Q), K == C or C == 1 (replicated), P >= H, Q >= W: y(k,p,q) reads
// x(c, p - (P-H)/2 + dy, q' - (Q-W)/2 + dx) with q' = Q-1-q when flipped, else q; pixels
// outside x take background[c] (the normalized value of a black pixel).
void place_image(const float* x, int64_t C, int64_t H, int64_t W, float* y, int64_t K, int64_t P,
                 int64_t Q, std::span<const float> background, const AugmentDraw& draw);
// The same from bytes: x(c, h, w) is tables[c][byte].
void place_image(const uint8_t* x, std::span<const std::array<float, 256>> tables, int64_t C,
                 int64_t H, int64_t W, float* y, int64_t K, int64_t P, int64_t Q,
                 std::span<const float> background, const AugmentDraw& draw);

}  // namespace frugal
