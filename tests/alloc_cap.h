// Runs a reader in a forked child whose address space may grow only a little beyond what it
// had at the fork (setrlimit(RLIMIT_AS)): a reader that sizes an allocation from a header's
// promise instead of the file's bytes fails there, and a crash stays in the child.
#pragma once

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <new>
#include <string>

#include "core/error.h"

namespace frugal::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// The process's address space in bytes (VmSize in /proc/self/status).
inline size_t address_space_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  size_t kib = 0;
  while (in >> key)
    if (key == "VmSize:" && in >> kib) break;
  return kib * 1024;
}

// Runs `f` in a child limited to `extra` bytes of address space beyond its size at the fork
// (no limit under AddressSanitizer, whose shadow memory a limit would break; it reports giant
// allocations itself). Returns "error: <message>" for the frugal::Error `f` throws, "ok" when
// it throws nothing, "bad_alloc" when an allocation passed the cap, or how the child died.
inline std::string run_capped(const std::function<void()>& f, size_t extra = size_t{64} << 20) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    if (!kAddressSanitizer) {
      const rlim_t cap = address_space_bytes() + extra;
      const rlimit limit{cap, cap};
      setrlimit(RLIMIT_AS, &limit);
    }
    std::string result = "ok";
    try {
      f();
    } catch (const Error& e) {
      result = std::string("error: ") + e.what();
    } catch (const std::bad_alloc&) {
      result = "bad_alloc";
    } catch (const std::exception& e) {
      result = std::string("other exception: ") + e.what();
    }
    const char* p = result.data();
    size_t left = result.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  return out;
}

}  // namespace frugal::testing
