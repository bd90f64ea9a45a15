#!/usr/bin/env bash
# The main job: install dependencies, build frugal (Release) and train SmallCNN on
# Fashion-MNIST for one epoch. Extra arguments go to `frugal train` (e.g. --memory baseline).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FRUGAL_BUILD_DIR:-build}"

scripts/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j2
"$build/apps/frugal" train --model small-cnn --epochs 1 "$@"
