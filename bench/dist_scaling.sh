#!/usr/bin/env bash
# Data parallel on one machine (docs/DISTRIBUTED.md): ResNet-20 at a global batch of 128,
# one rank with 2 threads against 2 ranks of 1 thread each (mpirun on loopback), alternated
# round by round; the median images/s of each, their ratio, and the share of rank 0's
# backward spent waiting for gradient reductions.
# Usage: bench/dist_scaling.sh [frugal] [rounds] [model] [batch]
set -euo pipefail
frugal="${1:-build/apps/frugal}"
rounds="${2:-7}"
model="${3:-resnet20}"
batch="${4:-128}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((i = 1; i <= rounds; ++i)); do
  OMP_NUM_THREADS=2 "$frugal" bench --model "$model" --batch "$batch" --steps 11 --threads 2 \
    --json | sed 's/^/one /' >>"$out"
  OMP_NUM_THREADS=1 mpirun --oversubscribe --bind-to none -np 2 "$frugal" bench --model "$model" \
    --batch "$batch" --steps 11 --threads 1 --json | sed 's/^/two /' >>"$out"
done
python3 - "$out" "$rounds" "$model" "$batch" <<'PY'
import json, statistics, sys
rows = [l.split(" ", 1) for l in open(sys.argv[1])]
one = [json.loads(j) for k, j in rows if k == "one"]
two = [json.loads(j) for k, j in rows if k == "two"]
m1 = statistics.median(j["images_per_s"] for j in one)
m2 = statistics.median(j["images_per_s"] for j in two)
wait = statistics.median(sum(j["comm_wait_s"]) / sum(j["backward_s"]) for j in two)
print(f"{sys.argv[3]} b{sys.argv[4]}, {sys.argv[2]} rounds alternated, 10 steps each after a warm-up:")
print(f"  1 rank x 2 threads: {m1:.0f} images/s (median)")
print(f"  2 ranks x 1 thread: {m2:.0f} images/s (median), ratio {m2 / m1:.3f}")
print(f"  rank 0's backward waiting for reductions: {100 * wait:.1f}% (median)")
print(f"  peak allocator bytes per rank: 1 rank {one[0]['allocator_peak_bytes'] / 2**20:.1f} MiB, "
      f"2 ranks {two[0]['allocator_peak_bytes'] / 2**20:.1f} MiB")
PY
