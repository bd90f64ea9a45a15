// Image placement and augmentation: one loop over the output pixels, so padding, channel
// replication, crop and flip cost one pass and no temporary image.
#include "data/augment.h"

#include "core/rng.h"

namespace frugal {
namespace {
constexpr uint64_t kAugmentStream = uint64_t(0xa0) << 32;  // apart from shuffling's streams
}  // namespace

AugmentDraw draw_augment(const Augment& a, uint64_t seed, int epoch, int64_t index) {
  const uint64_t bits = random_bits(seed, kAugmentStream | static_cast<uint32_t>(epoch),
                                    static_cast<uint64_t>(index));
  const uint64_t span = static_cast<uint64_t>(2 * a.crop_pad + 1);
  AugmentDraw d;
  d.dy = static_cast<int>((bits & 0xffff) % span) - a.crop_pad;
  d.dx = static_cast<int>(((bits >> 16) & 0xffff) % span) - a.crop_pad;
  d.flip = a.flip && ((bits >> 32) & 1) != 0;
  return d;
}

namespace {
// x (C,H,W)  y (K,P,Q); value(c, i) is element i of x's channel c as a float.
template <typename Value>
void place(Value value, int64_t C, int64_t H, int64_t W, float* y, int64_t K, int64_t P, int64_t Q,
           std::span<const float> background, const AugmentDraw& d) {
  const int64_t top = (P - H) / 2 - d.dy, left = (Q - W) / 2 - d.dx;
  for (int64_t k = 0; k < K; ++k) {
    const int64_t c = C == 1 ? 0 : k;
    const float fill = background.empty() ? 0.0f : background[static_cast<size_t>(c)];
    float* yk = y + k * P * Q;
    for (int64_t p = 0; p < P; ++p) {
      const int64_t h = p - top;
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t w = (d.flip ? Q - 1 - q : q) - left;
        yk[p * Q + q] = h >= 0 && h < H && w >= 0 && w < W ? value(c, h * W + w) : fill;
      }
    }
  }
}
}  // namespace

void place_image(const float* x, int64_t C, int64_t H, int64_t W, float* y, int64_t K, int64_t P,
                 int64_t Q, std::span<const float> background, const AugmentDraw& d) {
  place([x, H, W](int64_t c, int64_t i) { return x[c * H * W + i]; }, C, H, W, y, K, P, Q,
        background, d);
}

void place_image(const uint8_t* x, std::span<const std::array<float, 256>> tables, int64_t C,
                 int64_t H, int64_t W, float* y, int64_t K, int64_t P, int64_t Q,
                 std::span<const float> background, const AugmentDraw& d) {
  place([x, tables, H, W](int64_t c,
                          int64_t i) { return tables[static_cast<size_t>(c)][x[c * H * W + i]]; },
        C, H, W, y, K, P, Q, background, d);
}

}  // namespace frugal
