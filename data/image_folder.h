// Image folders as torchvision's ImageFolder reads them: ROOT/train/<class>/<file> and
// ROOT/val/<class>/<file>, classes named by their folders (sorted), files JPEG or PNG. A
// Dataset over such a folder holds file names and labels, not pixels: its batches are decoded,
// augmented and normalized by worker threads ahead of the step (data/pipeline.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/idx.h"
#include "data/image.h"
#include "data/resample.h"

namespace frugal {

struct ImageFile {
  std::string path;
  int32_t label = 0;
};

struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;  // train/'s class folders, sorted by name
  std::vector<ImageFile> train, val;
  std::vector<std::string> skipped;  // files left out for their names (skip_bad)
};

// Whether `dir` holds train/ and val/ folders.
bool is_image_folder(const std::string& dir);

// Scans ROOT/train and ROOT/val: every class folder of train/ must hold at least one image and
// appear in val/, and val/ may hold no other class; a file must end in .jpg, .jpeg or .png
// (any case) and start as the format it names. Hidden files (".name") are ignored. A bad name
// or a file that is not an image by its first bytes is an error naming it, or with skip_bad is
// left out and listed in `skipped`. Files are sorted by name within each class.
ImageFolder scan_image_folder(const std::string& root, bool skip_bad);

// How a folder's images become a model's input.
struct ImageTransform {
  int64_t size = 224;  // the input's height and width
  // Training: a random resized crop (scale 0.08-1 of the area, aspect ratio 3/4-4/3, as
  // torchvision's RandomResizedCrop) and a horizontal flip with probability 1/2. Evaluation:
  // the shorter side resized to size / crop_fraction, then the centre size x size.
  bool train = false;
  // Evaluation (and training without augmentation): the centre square of this fraction of the
  // shorter side (0.875 as the ImageNet recipes; 1: the whole shorter side).
  double crop_fraction = 0.875;
  Normalize normalize = {};
  bool skip_bad = false;  // a file that fails to decode is replaced by the next one that does
  int workers = 0;        // decode threads (0: the machine's cores)
};

// The crop of a `height` x `width` image for sample `index` in `epoch`: a function of (seed,
// epoch, index) alone, and the flip with it.
struct CropDraw {
  CropBox box;
  bool flip = false;
};
CropDraw draw_crop(const ImageTransform& t, int64_t height, int64_t width, uint64_t seed, int epoch,
                   int64_t index);

// What a Dataset over image files holds in place of pixels.
struct ImageSource {
  std::vector<ImageFile> files;
  ImageTransform transform;
};

// A Dataset over `files` (labels from them; classes, their names and the name as given).
Dataset image_dataset(std::vector<ImageFile> files, const ImageTransform& transform,
                      int64_t classes, const std::string& name,
                      std::vector<std::string> class_names = {});

// Sample `index` of the source decoded and transformed into (3, size, size) at `out`; with
// skip_bad, a file that fails is replaced by the next (index + 1, ...) that decodes, and the
// failures are counted in *skipped. Returns the label of the sample written.
int32_t load_sample(const ImageSource& source, int64_t index, uint64_t seed, int epoch, float* out,
                    int64_t* skipped);

}  // namespace frugal
