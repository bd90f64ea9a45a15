// Data selection for training and evaluation: one place decides which loader reads `--data`
// and whether its images fit the model, so `frugal train` and `frugal eval` agree.
#include "train/train_data.h"

#include "core/error.h"
#include "data/batcher.h"
#include "data/cifar.h"
#include "data/synthetic.h"

namespace frugal {

Dataset load_data(const std::string& data, const ModelSpec& model, bool train,
                  const SyntheticSizes& synthetic, uint64_t seed) {
  Dataset d;
  if (data == "synthetic")
    d = synthetic_dataset(model.input, train ? synthetic.train : synthetic.test, model.classes,
                          train ? seed : seed + 1);
  else if (is_cifar10_dir(data))
    d = load_cifar10(data, train);
  else
    d = load_fashion_mnist(data, train);
  const Shape& s = d.images.shape();
  FRUGAL_CHECK(image_fits({s[1], s[2], s[3]}, model.input), model.name, " takes images ",
               model.input, "; ", d.name, "'s ", Shape{s[1], s[2], s[3]},
               " do not fit (they may be centred in a larger frame and grey replicated to 3 "
               "channels, never cropped)");
  return d;
}

TrainData load_train_data(const std::string& data, const ModelSpec& model,
                          const SyntheticSizes& synthetic, uint64_t seed) {
  return {load_data(data, model, true, synthetic, seed),
          load_data(data, model, false, synthetic, seed)};
}

}  // namespace frugal
