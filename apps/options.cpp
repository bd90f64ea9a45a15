// Numeric option checks shared by the commands, and --ranks' relaunch under mpirun.
#include "apps/options.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "recompute/budget.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <thread>

namespace frugal {

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string range = max == std::numeric_limits<int64_t>::max()
                                ? ">= " + std::to_string(min)
                                : "in " + std::to_string(min) + ".." + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& s) -> std::string {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        const std::string text = s.size() <= 40 ? s : s.substr(0, 40) + "...";
        if (s.empty() || end != s.data() + s.size() ||
            (ec != std::errc() && ec != std::errc::result_out_of_range))
          return text + " is not a whole number " + range;
        if (ec == std::errc::result_out_of_range || v < min || v > max)
          return text + " is out of range: expected a whole number " + range;
        return "";
      },
      "INT " + range, "whole_number");
}

void relaunch_under_mpirun(int ranks) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  FRUGAL_CHECK(!args.empty(), "--ranks: cannot read this command line from /proc/self/cmdline");
  std::vector<std::string> command{"mpirun", "--oversubscribe", "-np", std::to_string(ranks),
                                   "/proc/self/exe"};
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  FRUGAL_CHECK(n > 0, "--ranks: cannot find this program (/proc/self/exe)");
  command.back() = std::string(self, static_cast<size_t>(n));
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--ranks") {
      ++i;  // and its value
      continue;
    }
    if (args[i].rfind("--ranks=", 0) == 0) continue;
    command.push_back(args[i]);
  }
  std::vector<char*> argv;
  for (std::string& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  ::execvp("mpirun", argv.data());
  throw Error(std::string("--ranks: cannot start mpirun (") + std::strerror(errno) +
              "); install Debian's openmpi-bin, or start the ranks yourself with mpirun -np N");
}

int capped_threads(int threads) {
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  if (cores <= 0 || threads <= cores) return threads;
  std::fprintf(stderr, "warning: --threads %d is more than this machine's %d cores; using %d\n",
               threads, cores, cores);
  return cores;
}

CLI::Option* add_bytes_option(CLI::App* app, const std::string& name, size_t* target,
                              const std::string& help, bool zero_allowed) {
  return app->add_option_function<std::string>(
      name,
      [name, target, zero_allowed](const std::string& text) {
        try {
          *target = parse_bytes(text, zero_allowed);
        } catch (const Error& e) {
          throw CLI::ValidationError(name, e.what());
        }
      },
      help);
}

}  // namespace frugal
