// Checks for the command's numeric options, with messages people can read: whole numbers in
// a range (no 1e20 becoming INT64_MAX, no 300-digit bounds), and the thread count capped at
// the machine's cores.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace frugal {

// A CLI11 check: the text is a whole number in [min, max] ("--batch: 1e20 is not a whole
// number", "--epochs: -1 is below 1").
CLI::Validator whole_number(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());

// An option taking a byte size (parse_bytes: 1073741824, 200M, 1.5G, 64KiB) into *target; a bad
// size is an error naming the option.
CLI::Option* add_bytes_option(CLI::App* app, const std::string& name, size_t* target,
                              const std::string& help, bool zero_allowed = false);

// `threads`, or the machine's core count with a warning on stderr when `threads` is more
// (more threads than cores only slows a step and grows its scratch). 0 stays 0: all cores.
int capped_threads(int threads);

// `frugal CMD --ranks N ...` outside mpirun: runs this very command line again under
// `mpirun --oversubscribe -np N` on this machine, without --ranks, and does not return
// (throws when mpirun cannot be started).
[[noreturn]] void relaunch_under_mpirun(int ranks);

// Bytes in MiB, for the commands' tables.
inline double to_mib(size_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

}  // namespace frugal
