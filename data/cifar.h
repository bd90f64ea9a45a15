// CIFAR-10's binary format: each file a sequence of 3073-byte records, one label byte (0..9)
// then 32x32 red, green and blue planes. Read into a Dataset of (N,3,32,32) f32 normalized
// per channel with the training set's mean and standard deviation.
#pragma once

#include <string>

#include "data/idx.h"

namespace frugal {

// Per-channel mean and standard deviation of CIFAR-10's training pixels, scaled to [0,1].
inline constexpr float kCifarMean[3] = {0.4914f, 0.4822f, 0.4465f};
inline constexpr float kCifarStd[3] = {0.2470f, 0.2435f, 0.2616f};

// Whether `dir` holds CIFAR-10 binary files (test_batch.bin or data_batch_1.bin).
bool is_cifar10_dir(const std::string& dir);

// Reads one or more record files in order into one Dataset; an empty file, a size that is no
// multiple of 3073 or a label above 9 throws an error naming the file (and the record).
Dataset read_cifar10(const std::vector<std::string>& paths);

// The training set (data_batch_1.bin .. data_batch_5.bin, every one required) or the test
// set (test_batch.bin) from `dir`.
Dataset load_cifar10(const std::string& dir, bool train);

}  // namespace frugal
