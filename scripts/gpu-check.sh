#!/usr/bin/env bash
# One command for a GPU machine: checks what is there, builds frugal with CUDA against it, runs
# the CUDA tests (every kernel against its CPU twin; the executor, trainer and checkpoints on
# the device), the command line on the device, and the GPU peers (frugal beside PyTorch,
# bench/peers/gpu_peers.py), whose table it writes into docs/BENCHMARKS.md's GPU section.
#   scripts/gpu-check.sh                 # everything
#   scripts/gpu-check.sh --no-peers      # build and check only
#   scripts/gpu-check.sh --peers-only    # build and run the peers only
#   scripts/gpu-check.sh --tests-only    # build and run the CUDA tests only
#   GPU_PEERS_ROUNDS=3 GPU_PEERS_ONLY=resnet110-b64 scripts/gpu-check.sh The machine needs nvcc, CMake, a C++20 compiler and cuDNN (from the toolkit,
# or the nvidia-cudnn Python wheel that PyTorch brings); the header-only libraries come from
# .gpu-deps/ (scripts/gpu-bundle.sh, run on a Debian machine) when the system lacks them.
# Logs go to $OUT (or build-gpu/logs) when set.
set -uo pipefail
cd "$(dirname "$0")/.."
peers=1 checks=1 cli=1
[ "${1:-}" = "--no-peers" ] && peers=0
[ "${1:-}" = "--peers-only" ] && checks=0
[ "${1:-}" = "--tests-only" ] && peers=0 cli=0
build="${FRUGAL_BUILD_DIR:-build-gpu}"
logs="${OUT:-$build/logs}"
mkdir -p "$logs"
jobs="$(nproc)"

say() { printf '%s\n' "$*" | tee -a "$logs/gpu-check.txt"; }
have() { command -v "$1" >/dev/null 2>&1; }

say "== machine"
have nvidia-smi && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
  | tee -a "$logs/gpu-check.txt"
nvcc_bin="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
[ -x "$nvcc_bin" ] || { say "gpu-check: no nvcc"; exit 1; }
say "nvcc: $("$nvcc_bin" --version | tail -1)"
say "cmake: $(cmake --version | head -1)"
say "c++: $(c++ --version | head -1)"
python="$(command -v python3 || true)"

# cuDNN: beside the toolkit, else in PyTorch's nvidia-cudnn wheel.
cudnn_args=()
cuda_root="$(dirname "$(dirname "$nvcc_bin")")"
system_cudnn=""
for h in "$cuda_root"/include/cudnn.h /usr/include/cudnn.h /usr/include/*-linux-gnu/cudnn.h; do
  [ -f "$h" ] && system_cudnn="$h"
done
if [ -z "$system_cudnn" ]; then
  wheel=""
  [ -n "$python" ] && wheel="$("$python" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null || true)"
  [ -z "$wheel" ] && wheel="$(dirname "$(find / -name cudnn.h -path '*cudnn*' 2>/dev/null | head -1)")/.."
  lib="$(ls "$wheel"/lib/libcudnn.so* 2>/dev/null | head -1)"
  if [ -f "$wheel/include/cudnn.h" ] && [ -n "$lib" ]; then
    cudnn_args=(-DFRUGAL_CUDNN_INCLUDE_DIR="$wheel/include" -DFRUGAL_CUDNN_LIBRARY="$lib")
    export LD_LIBRARY_PATH="$wheel/lib:${LD_LIBRARY_PATH:-}"
    say "cuDNN: $wheel"
  else
    say "gpu-check: no cuDNN found (cudnn.h and libcudnn)"; exit 1
  fi
fi

prefix=()
[ -d .gpu-deps ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DZLIB_ROOT="$PWD/.gpu-deps")

say "== build"
# No ONNX import there: the bundle carries no protobuf (-DFRUGAL_ONNX=OFF).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFRUGAL_CUDA=ON -DFRUGAL_ONNX=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${FRUGAL_CUDA_ARCH:-90}" "${prefix[@]}" "${cudnn_args[@]}" \
  >"$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" >"$build.build.log" 2>&1 || {
  grep -E "error|Error" "$build.build.log" | head -40; exit 1; }
say "warnings in the build: $(grep -c 'warning' "$build.build.log")"
grep -A3 'warning' "$build.build.log" | head -20 | tee -a "$logs/gpu-check.txt"

frugal="$build/apps/frugal"
failed=0
if [ "$checks" = 1 ]; then
say "== CUDA tests"
ctest --test-dir "$build" -L cuda --output-on-failure >"$logs/cuda-tests.log" 2>&1
rc=$?
grep -E "test cases|assertions|MESSAGE|executor .* bytes|ERROR|Status" "$logs/cuda-tests.log" \
  | tee -a "$logs/gpu-check.txt"
say "CUDA tests: exit $rc"
[ "$rc" -ne 0 ] && failed=1

fi
if [ "$checks" = 1 ] && [ "$cli" = 1 ]; then
say "== the command line on the device"
cli() {  # runs the command, keeps its output; a failure is counted
  say "\$ frugal $*"
  if "$frugal" "$@" >"$build.cli.log" 2>&1; then tail -8 "$build.cli.log" | tee -a "$logs/gpu-check.txt"
  else tail -8 "$build.cli.log" | tee -a "$logs/gpu-check.txt"; say "FAILED"; failed=1; fi
}
cli train --device cuda --model small-cnn --data synthetic --steps 40 --batch 64 --warmup 5
cli train --device cuda --model resnet20 --data synthetic --steps 10 --batch 128 --memory baseline
for m in resnet110 googlenet; do
  cli memory --device cuda --model "$m" --batch 64 --run
done
cli memory --device cuda --model resnet110 --batch 64 --memory-budget 120M --run
cli memory --device cuda --model vgg-a --batch 64 --run
cli memory --device cuda --model resnet110 --batch 64 --workspace-limit 4M
"$frugal" memory --device cuda --model googlenet --batch 64 --workspaces >"$logs/workspaces.txt" 2>&1 \
  || { say "memory --workspaces FAILED"; failed=1; }
cli bench --device cuda --model resnet110 --batch 64 --steps 6
cli bench --device cuda --model resnet110 --batch 64 --steps 6 --memory baseline

fi

if [ "$peers" = 1 ]; then
  say "== GPU peers: frugal beside PyTorch"
  if "$python" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    only=()
    [ -n "${GPU_PEERS_ONLY:-}" ] && only=(--only "$GPU_PEERS_ONLY")
    "$python" bench/peers/gpu_peers.py --frugal "$frugal" --rounds "${GPU_PEERS_ROUNDS:-3}" \
      "${only[@]}" --markdown "$logs/gpu-peers.md" --raw "$logs/gpu-peers.json" \
      2>"$logs/gpu-peers.log" | tee -a "$logs/gpu-check.txt" || { say "peers FAILED"; failed=1; }
    # The GPU section of docs/BENCHMARKS.md, between its two markers, becomes this run's table.
    if [ -s "$logs/gpu-peers.md" ] && [ -z "${GPU_PEERS_ONLY:-}" ]; then
      "$python" - "$logs/gpu-peers.md" <<'PY'
import sys
begin, end = "<!-- gpu-peers: begin -->", "<!-- gpu-peers: end -->"
table = open(sys.argv[1]).read()
doc = open("docs/BENCHMARKS.md").read()
if begin in doc and end in doc:
    head, rest = doc.split(begin, 1)
    doc = head + begin + "\n" + table + rest[rest.index(end):]
    open("docs/BENCHMARKS.md", "w").write(doc)
    print("gpu-check: wrote the GPU section of docs/BENCHMARKS.md")
PY
    fi
  else
    say "gpu-check: python3 has no PyTorch with CUDA; the peers were not run"
  fi
fi
say "gpu-check: exit $failed"
exit $failed
