#!/usr/bin/env bash
# The image pipeline on this machine: decoding throughput against libjpeg-turbo's own tjbench
# on the same files, and the share of a training step spent waiting for batches (AlexNet and
# ResNet-18 at 112 px, batch 64). Writes an ImageNet-sized folder first (Fashion-MNIST resized to
# 375 x 375, grey JPEGs; a few thousand images) unless FOLDER names one.
#   bench/image_pipeline.sh                  # build/ must hold frugal (scripts/main.sh builds it)
#   FOLDER=/data/imagenet-subset bench/image_pipeline.sh
set -euo pipefail
cd "$(dirname "$0")/.."
frugal="${FRUGAL:-build/apps/frugal}"
folder="${FOLDER:-build/fm375}"
steps="${STEPS:-8}"
if [ ! -d "$folder" ]; then
  "$frugal" export-images --to "$folder" --size 375 --limit 3000 --format jpeg
fi
command -v tjbench >/dev/null || {
  echo "image_pipeline: tjbench missing (Debian: libjpeg-turbo-progs)" >&2
  exit 1
}
sample="$(find "$folder/train" -name '*.jpg' | sort | sed -n 1p)"
echo "== tjbench (libjpeg-turbo), one file: $sample"
for scale in 1/1 3/8; do
  echo "-- scale $scale"
  tjbench "$sample" -scale "$scale" -benchtime 3 -warmup 1 -nowrite -quiet 2>&1 | tail -3
done
echo "== frugal: the decode pipeline alone (no network)"
for workers in 1 2; do
  for mode in training inference; do
    "$frugal" bench --model resnet18 --image-size 112 --batch 64 --steps "$steps" --mode "$mode" \
      --data "$folder" --workers "$workers" --decode-only
  done
done
echo "== frugal: training steps fed by the pipeline, 2 workers beside 2 compute threads"
for model in alexnet resnet18; do
  "$frugal" bench --model "$model" --image-size 112 --batch 64 --steps "$steps" \
    --data "$folder" --workers 2 --threads 2 | grep -E "step time|data:"
done
