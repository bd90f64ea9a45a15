#!/usr/bin/env bash
# The main job: install dependencies, build frugal (Release), train SmallCNN on Fashion-MNIST
# for one epoch (cosine learning rate from 0.05 after 50 warm-up steps; about 88-89% test
# accuracy), then show that training step's memory with the planner on and off.
# Extra arguments go to `frugal train` (e.g. --memory baseline, --threads 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${FRUGAL_BUILD_DIR:-build}"

scripts/setup-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j2
"$build/apps/frugal" train --model small-cnn --epochs 1 --batch 64 --lr 0.05 --warmup 50 \
  --schedule cosine "$@"
echo
"$build/apps/frugal" memory --model small-cnn --batch 64
