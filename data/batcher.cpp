// Batcher: per-epoch seeded shuffling and the one copy of each batch into executor inputs,
// a plain memcpy per sample unless the image needs a frame, channels or augmentation.
#include "data/batcher.h"

#include <cstring>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/rng.h"
#include "data/resample.h"

namespace frugal {

Batcher::Batcher(const Dataset& data, bool shuffle, uint64_t seed)
    : Batcher(data, BatcherOptions{.shuffle = shuffle, .seed = seed}) {}

Batcher::Batcher(const Dataset& data, const BatcherOptions& options)
    : data_(data), options_(options), order_(static_cast<size_t>(data.size())) {
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (data.source)
    pipeline_ = std::make_unique<DecodePipeline>(*data.source, options.seed,
                                                 data.source->transform.workers);
}

Batcher::~Batcher() = default;

double Batcher::data_wait_seconds() const {
  return pipeline_ ? pipeline_->waited_seconds() : 0.0;
}
int64_t Batcher::skipped_files() const {
  return pipeline_ ? pipeline_->skipped() : 0;
}
size_t Batcher::data_bytes() const {
  return pipeline_ ? pipeline_->buffer_bytes() : 0;
}

void Batcher::start_epoch(int epoch) {
  epoch_ = epoch;
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!options_.shuffle) return;
  Rng rng(options_.seed, static_cast<uint64_t>(epoch));
  for (size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[static_cast<size_t>(rng.below(i))]);
}

bool image_fits(const Shape& s, const Shape& in, bool resize) {
  if (s.rank() != 3 || in.rank() != 3) return false;
  if (!(in[0] == s[0] || s[0] == 1)) return false;
  if (resize) return true;
  return in[1] >= s[1] && in[2] >= s[2] && (in[1] - s[1]) % 2 == 0 && (in[2] - s[2]) % 2 == 0;
}

namespace {

// Sample x (C,H,W) as floats -> yb (K,P,Q) filled by resampling: the draw's shift moves the
// source window by as many output pixels (edges repeat), its flip mirrors; grey replicated.
void resample_sample(const float* x, int64_t C, int64_t H, int64_t W, float* yb, int64_t K,
                     int64_t P, int64_t Q, const AugmentDraw& d) {
  const CropBox box{.top = d.dy * static_cast<double>(H) / static_cast<double>(P),
                    .left = d.dx * static_cast<double>(W) / static_cast<double>(Q),
                    .height = static_cast<double>(H),
                    .width = static_cast<double>(W)};
  resample_planes(x, C, H, W, box, P, Q, d.flip, yb);
  for (int64_t k = C; k < K; ++k)  // C == 1: grey to K channels
    std::memcpy(yb + k * P * Q, yb, static_cast<size_t>(P * Q) * sizeof(float));
}

}  // namespace

// images (N,C,H,W) f32, or pixels (N,C,H,W) u8 through the tables -> x (B,K,P,Q);
// labels (N) i32 -> y (B)
void Batcher::copy(int64_t first, Tensor& images, Tensor& labels) const {
  const Shape s = data_.sample_shape();
  const int64_t B = images.shape()[0];
  const Shape want{B, s[0], s[1], s[2]};
  const Shape& in = images.shape();
  const bool fits = in.rank() == 4 && images.dtype() == DType::f32 &&
                    image_fits(s, {in[1], in[2], in[3]}, data_.resize);
  FRUGAL_CHECK(fits, "batcher: input ", images.shape(), " ", dtype_name(images.dtype()),
               ", expected ", want, " f32");
  FRUGAL_CHECK(labels.shape() == Shape{B} && labels.dtype() == DType::i32, "batcher: labels ",
               labels.shape(), " ", dtype_name(labels.dtype()), ", expected ", Shape{B}, " i32");
  FRUGAL_CHECK(first >= 0 && first + B <= size(), "batcher: batch [", first, ", ", first + B,
               ") outside the data set of ", size());
  if (pipeline_) {  // decoded into the input's size: no frame, no channel replication
    FRUGAL_CHECK(in == want, "batcher: input ", in, ", expected ", want, " for ", data_.name,
                 "'s images");
    pipeline_->fill(epoch_, order_, first, B, images.data<float>(), labels.data<int32_t>());
    return;
  }
  const int64_t C = s[0], H = s[1], W = s[2], K = in[1], P = in[2], Q = in[3];
  const int64_t plane = H * W;
  const Augment& a = options_.augment;
  const bool plain = in == want && a.crop_pad == 0 && !a.flip;
  const bool resize = data_.resize && !plain;
  const bool bytes = data_.pixels.defined();
  const float* x = bytes ? nullptr : data_.images.data<float>();
  const uint8_t* px = bytes ? data_.pixels.data<uint8_t>() : nullptr;
  const std::span<const PixelTable> tables(data_.tables);
  const int32_t* l = data_.labels.data<int32_t>();
  float* y = images.data<float>();
  int32_t* t = labels.data<int32_t>();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = order_[static_cast<size_t>(first + b)];
    t[b] = l[n];
    float* yb = y + b * K * P * Q;
    if (plain && bytes) {
      for (int64_t c = 0; c < C; ++c) {
        const PixelTable& table = tables[static_cast<size_t>(c)];
        const uint8_t* xc = px + (n * C + c) * plane;
        for (int64_t i = 0; i < plane; ++i) yb[c * plane + i] = table[xc[i]];
      }
    } else if (plain) {
      std::memcpy(yb, x + n * C * plane, static_cast<size_t>(C * plane) * 4);
    } else if (resize) {
      const AugmentDraw d = draw_augment(a, options_.seed, epoch_, n);
      std::vector<float> bytes_as_floats;
      const float* xn = x ? x + n * C * plane : nullptr;
      if (bytes) {
        bytes_as_floats.resize(static_cast<size_t>(C * plane));
        for (int64_t c = 0; c < C; ++c) {
          const PixelTable& table = tables[static_cast<size_t>(c)];
          const uint8_t* xc = px + (n * C + c) * plane;
          for (int64_t i = 0; i < plane; ++i)
            bytes_as_floats[static_cast<size_t>(c * plane + i)] = table[xc[i]];
        }
        xn = bytes_as_floats.data();
      }
      resample_sample(xn, C, H, W, yb, K, P, Q, d);
    } else {
      const AugmentDraw d = draw_augment(a, options_.seed, epoch_, n);
      if (bytes)
        place_image(px + n * C * plane, tables, C, H, W, yb, K, P, Q, data_.background, d);
      else
        place_image(x + n * C * plane, C, H, W, yb, K, P, Q, data_.background, d);
    }
  }
}

const Tensor& Batcher::copy(Backend& be, int64_t first, Tensor& images, Tensor& labels) {
  auto host = [](Tensor& t, Tensor& staging) -> Tensor& {
    if (t.device().is_host()) return t;
    if (!staging.defined() || staging.meta() != t.meta())
      staging = Tensor::empty(t.shape(), t.dtype());
    return staging;
  };
  Tensor& x = host(images, staged_images_);
  Tensor& y = host(labels, staged_labels_);
  copy(first, x, y);
  if (&x != &images) be.copy_to_device(x, images);
  if (&y != &labels) be.copy_to_device(y, labels);
  return y;
}

}  // namespace frugal
