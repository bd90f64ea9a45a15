#!/usr/bin/env bash
# The tests: install dependencies, build frugal with its tests, and run them all with CTest
# (doctest cases, one CTest test each, plus the install test).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FRUGAL_BUILD_DIR:-build}"

scripts/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j2
ctest --test-dir "$build" --output-on-failure -j2
