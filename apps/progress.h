// Training progress on the terminal: a bar with ETA, images/s, loss and arena size that
// redraws in place when stdout is a TTY; otherwise one plain line every `every` steps.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace frugal {

class Progress {
 public:
  Progress(int64_t steps, int64_t batch, size_t arena_bytes, int64_t every);
  // Starts an epoch whose first step is `first` (non-zero when resuming mid-epoch).
  void start_epoch(int epoch, int epochs, int64_t first);
  // After step `s` (0-based within the epoch): running loss and accuracy of the epoch.
  void update(int64_t s, double loss, double accuracy, double lr);
  // Clears the bar (TTY) before a plain line is printed.
  void clear();
  double epoch_seconds() const;
  bool tty() const { return tty_; }

 private:
  int64_t steps_, batch_, every_, first_ = 0;
  size_t arena_;
  int epoch_ = 0, epochs_ = 0;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
};

std::string mib(size_t bytes);
std::string duration(double seconds);  // "1:05" or "1:02:05"

}  // namespace frugal
