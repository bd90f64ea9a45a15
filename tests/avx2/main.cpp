// doctest's main for the depthwise kernels built for AVX2 (tests/avx2/CMakeLists.txt): skipped
// (exit 77) on a CPU without AVX2 and FMA. This file is built for the baseline CPU, so the check
// runs before any AVX2 instruction can.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

int main(int argc, char** argv) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::puts("frugal test skipped: this CPU has no AVX2 and FMA");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
