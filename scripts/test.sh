#!/usr/bin/env bash
# The tests: install dependencies, build frugal with its tests and run them all with CTest
# (doctest cases, one CTest test each, plus the install and command-line tests), then the file
# readers' fuzz corpus under ASan and UBSan (-DFRUGAL_SANITIZE=ON). Where the
# CUDA toolkit is installed, it first builds with -DFRUGAL_CUDA=ON as well and runs the CUDA
# tests, which report themselves as skipped when no GPU is present. Every ctest call fails where
# it finds no test to run (--no-tests=error): a filter or a build that matched nothing passed.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FRUGAL_BUILD_DIR:-build}"

scripts/setup-deps.sh
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  cuda_build="${build}-cuda"
  cmake -S . -B "$cuda_build" -DCMAKE_BUILD_TYPE=Release -DFRUGAL_CUDA=ON \
    -DFRUGAL_APPS=OFF -DFRUGAL_BENCH=OFF
  # Only the CUDA tests' binary (against the CUDA-enabled library); the CPU suite, apps and
  # benchmarks are built and run by the CPU-only configuration below.
  cmake --build "$cuda_build" -j2 --target frugal_cuda_tests
  ctest --test-dir "$cuda_build" --output-on-failure --no-tests=error -L cuda
else
  echo "CUDA toolkit not found: the FRUGAL_CUDA=ON configuration was not built or tested."
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure --no-tests=error -j2

# The file readers under AddressSanitizer and UndefinedBehaviorSanitizer: a small build of the
# readers alone (tests/fuzz/), replaying the fuzz corpus and the inputs fuzzing once crashed on.
sanitize_build="${build}-sanitize"
cmake -S . -B "$sanitize_build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFRUGAL_SANITIZE=ON \
  -DFRUGAL_TESTS=OFF -DFRUGAL_APPS=OFF -DFRUGAL_BENCH=OFF
cmake --build "$sanitize_build" -j2 --target frugal_reader_tests
ctest --test-dir "$sanitize_build" --output-on-failure --no-tests=error
