#!/usr/bin/env bash
# Step times with and without rebuilds, alternated process by process (docs/RECOMPUTE.md):
# each line: model, flags, median step seconds, planned arena bytes, allocator peak bytes.
# Usage: bench/rebuild_times.sh [build/apps/frugal]
set -euo pipefail
frugal="${1:-build/apps/frugal}"
run() {
  "$frugal" bench --model "$1" --batch "$2" --steps 3 --json "${@:3}" 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('$1 b$2', '${*:3}' or 'none', j['median_s'], j['arena_bytes'], j['allocator_peak_bytes'])"
}
for round in 1 2 3; do
  run resnet1001 64
  run resnet1001 64 --memory-budget 1480M
  run resnet1001 64 --memory-budget 1480M --recompute cheap
done
for round in 1 2; do
  run googlenet 64
  run googlenet 64 --memory-budget 560M
  run resnet50 32
  run resnet50 32 --memory-budget 719M
  run resnet50 32 --memory-budget 950M
  run densenet121 32
  run densenet121 32 --recompute cheap
done
