// Progress: a few lines of printf. The bar is 24 cells wide; ETA extrapolates this epoch's
// speed so far.
#include "apps/progress.h"

#include <unistd.h>

#include <cstdio>

namespace frugal {

std::string mib(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  return s;
}

std::string duration(double seconds) {
  const long t = static_cast<long>(seconds + 0.5);
  char s[32];
  if (t >= 3600)
    std::snprintf(s, sizeof s, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(s, sizeof s, "%ld:%02ld", t / 60, t % 60);
  return s;
}

Progress::Progress(int64_t steps, int64_t batch, size_t arena_bytes, int64_t every)
    : steps_(steps),
      batch_(batch),
      every_(every > 0 ? every : 1),
      arena_(arena_bytes),
      tty_(isatty(fileno(stdout)) != 0) {}

void Progress::start_epoch(int epoch, int epochs, int64_t first) {
  epoch_ = epoch;
  epochs_ = epochs;
  first_ = first;
  start_ = std::chrono::steady_clock::now();
}

double Progress::epoch_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::update(int64_t s, double loss, double accuracy, double lr) {
  const bool last = s + 1 == steps_;
  if (tty_ ? !(s % 5 == 4 || last) : !((s + 1) % every_ == 0 || last)) return;
  const double t = epoch_seconds();
  const double rate = double(s + 1 - first_) / t;  // steps per second this epoch
  const double eta = double(steps_ - s - 1) / rate;
  if (tty_) {
    constexpr int kCells = 24;
    const int filled = static_cast<int>(kCells * (s + 1) / steps_);
    std::printf(
        "\r  epoch %d/%d [%s%s] %lld/%lld  eta %s  %.0f img/s  loss %.4f  acc %.2f%%  "
        "arena %s ",
        epoch_ + 1, epochs_, std::string(static_cast<size_t>(filled), '#').c_str(),
        std::string(static_cast<size_t>(kCells - filled), '.').c_str(), (long long)s + 1,
        (long long)steps_, duration(eta).c_str(), rate * double(batch_), loss, 100.0 * accuracy,
        mib(arena_).c_str());
  } else {
    std::printf(
        "  epoch %d/%d step %lld/%lld  loss %.4f  acc %.2f%%  lr %.4g  %.0f img/s  "
        "eta %s\n",
        epoch_ + 1, epochs_, (long long)s + 1, (long long)steps_, loss, 100.0 * accuracy, lr,
        rate * double(batch_), duration(eta).c_str());
  }
  std::fflush(stdout);
}

void Progress::clear() {
  if (tty_) std::printf("\r\033[K");
}

}  // namespace frugal
