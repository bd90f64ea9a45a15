// Data selection for training and evaluation: one place decides which loader reads `--data`
// and whether its images fit the model, so `frugal train` and `frugal eval` agree.
#include "train/train_data.h"

#include "core/error.h"
#include "data/batcher.h"
#include "data/cifar.h"
#include "data/image_folder.h"
#include "data/synthetic.h"

namespace frugal {

ModelSpec model_at_size(const ModelSpec& model, int64_t image_size) {
  if (image_size == 0) return model;
  FRUGAL_CHECK(image_size >= 1 && image_size <= 4096, "--image-size ", image_size,
               ": expected 1..4096");
  FRUGAL_CHECK(model.input.rank() == 3 && model.input[0] == 3, model.name, " takes ", model.input,
               ", not 3-channel images of a chosen size");
  FRUGAL_CHECK(model.extra_inputs.empty(), "--image-size ", image_size, ": ", model.name,
               " reads other inputs beside its images, whose sizes --image-size cannot change");
  ModelSpec m = model;
  m.input = {3, image_size, image_size};
  return m;
}

namespace {

void check_fits(const Dataset& d, const ModelSpec& model) {
  const Shape s = d.sample_shape();
  const Shape& in = model.input;
  // Only the size is wrong: --resize would fit it.
  const bool channels_fit = s.rank() == 3 && in.rank() == 3 && (in[0] == s[0] || s[0] == 1);
  FRUGAL_CHECK(image_fits(s, in, d.resize), model.name, " takes images ", in, "; ", d.name, "'s ",
               s,
               d.resize ? " do not fit (grey is replicated to 3 channels, never the reverse)"
                        : " do not fit (they may be centred in a larger frame and grey "
                          "replicated to 3 channels, never cropped)",
               !d.resize && channels_fit ? "; --resize resamples them to any size" : "");
}

TrainData folder_data(const std::string& dir, const ModelSpec& model, const FolderOptions& o) {
  FRUGAL_CHECK(model.input.rank() == 3 && model.input[0] == 3 && model.input[1] == model.input[2],
               model.name, " takes ", model.input,
               "; an image folder gives 3-channel square "
               "images (--image-size chooses their side)");
  const ImageFolder f = scan_image_folder(dir, o.skip_bad);
  const int64_t classes = static_cast<int64_t>(f.classes.size());
  ImageTransform t{.size = model.input[1],
                   .crop_fraction = o.crop_fraction,
                   .skip_bad = o.skip_bad,
                   .workers = o.workers};
  TrainData d;
  t.train = o.augment;
  d.train = image_dataset(f.train, t, classes, dir + "/train", f.classes);
  t.train = false;
  d.test = image_dataset(f.val, t, classes, dir + "/val", f.classes);
  d.class_names = f.classes;
  d.skipped = f.skipped;
  return d;
}

}  // namespace

Dataset load_data(const std::string& data, const ModelSpec& model, bool train,
                  const SyntheticSizes& synthetic, uint64_t seed, const FolderOptions& folder) {
  if (data != "synthetic" && is_image_folder(data)) {
    TrainData d = folder_data(data, model, folder);
    return train ? std::move(d.train) : std::move(d.test);
  }
  Dataset d;
  if (data == "synthetic")
    d = synthetic_dataset(model.input, train ? synthetic.train : synthetic.test, model.classes,
                          train ? seed : seed + 1);
  else if (is_cifar10_dir(data))
    d = load_cifar10(data, train);
  else
    d = load_fashion_mnist(data, train);
  d.resize = folder.resize;
  check_fits(d, model);
  return d;
}

TrainData load_train_data(const std::string& data, const ModelSpec& model,
                          const SyntheticSizes& synthetic, uint64_t seed,
                          const FolderOptions& folder) {
  if (data != "synthetic" && is_image_folder(data)) return folder_data(data, model, folder);
  return {load_data(data, model, true, synthetic, seed, folder),
          load_data(data, model, false, synthetic, seed, folder),
          {},
          {}};
}

}  // namespace frugal
