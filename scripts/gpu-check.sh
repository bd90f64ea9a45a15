#!/usr/bin/env bash
# One command for a GPU machine: checks what is there, builds frugal with CUDA against it, runs
# the CUDA tests (every kernel against its CPU twin; the executor, trainer and checkpoints on
# the device), the command line on the device, and the GPU peers (frugal beside PyTorch,
# bench/peers/gpu_peers.py), whose table it writes into docs/BENCHMARKS.md's GPU section.
#   scripts/gpu-check.sh                 # everything
#   scripts/gpu-check.sh --no-peers      # build and check only
#   scripts/gpu-check.sh --peers-only    # build and run the peers only
#   scripts/gpu-check.sh --tests-only    # build and run the CUDA tests only
#   scripts/gpu-check.sh --onnx-only     # build, then users' models: the ONNX fixtures on the
#                                        # device and the ONNX peers (.gpu-deps has ONNX)
#   GPU_PEERS_ROUNDS=3 GPU_PEERS_ONLY=resnet110-b64 scripts/gpu-check.sh
#   GPU_SANITIZE=1 scripts/gpu-check.sh  # the kernel twins under compute-sanitizer too
#   GPU_ONNX_PEERS=0 scripts/gpu-check.sh --onnx-only   # the ONNX fixtures only
#   GPU_ONNX_FILES="tests/data/onnx/a.onnx ..." ...     # these fixtures instead of all of them
# The machine needs nvcc, CMake, a C++20 compiler, cuDNN and NCCL (beside the toolkit, or the
# nvidia-cudnn and nvidia-nccl Python wheels that PyTorch brings); the header-only libraries
# and the image libraries come from .gpu-deps/ (scripts/gpu-bundle.sh, run on a Debian machine)
# when the system lacks them. Only the command line and the CUDA tests are built (the CPU suite
# is CI's), with Ninja where there is one.
# Logs go to $OUT (or build-gpu/logs) when set.
set -uo pipefail
cd "$(dirname "$0")/.."
peers=1 checks=1 cli=1 onnx_checks=1
[ "${1:-}" = "--no-peers" ] && peers=0
[ "${1:-}" = "--peers-only" ] && checks=0 onnx_checks=0
[ "${1:-}" = "--tests-only" ] && peers=0 cli=0 onnx_checks=0
[ "${1:-}" = "--onnx-only" ] && peers=0 checks=0
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

# A library beside the toolkit or, failing that, in the wheel PyTorch brings (nvidia.cudnn,
# nvidia.nccl) or anywhere on the disk: prints "include-dir library" or nothing.
cuda_root="$(dirname "$(dirname "$nvcc_bin")")"
find_wheel_lib() {  # header, library stem, python module
  local h="$1" stem="$2" mod="$3" dir="" lib=""
  for d in "$cuda_root/include" /usr/include /usr/include/*-linux-gnu; do
    [ -f "$d/$h" ] && lib="$(ls "$cuda_root"/lib64/"$stem".so* "$cuda_root"/lib/"$stem".so* \
      /usr/lib/*-linux-gnu/"$stem".so* 2>/dev/null | head -1)" && [ -n "$lib" ] && {
      echo "system"; return; }
  done
  [ -n "$python" ] && dir="$("$python" -c "import $mod as m; print(list(m.__path__)[0])" 2>/dev/null || true)"
  if [ -z "$dir" ] || [ ! -f "$dir/include/$h" ]; then
    dir="$(dirname "$(find / -name "$h" -not -path '/proc/*' 2>/dev/null | head -1)")/.."
  fi
  lib="$(ls "$dir"/lib/"$stem".so* 2>/dev/null | head -1)"
  [ -f "$dir/include/$h" ] && [ -n "$lib" ] && echo "$dir/include $lib"
}
cudnn_args=()
found="$(find_wheel_lib cudnn.h libcudnn nvidia.cudnn)"
if [ -z "$found" ]; then say "gpu-check: no cuDNN found (cudnn.h and libcudnn)"; exit 1; fi
if [ "$found" != system ]; then
  read -r inc lib <<<"$found"
  cudnn_args=(-DFRUGAL_CUDNN_INCLUDE_DIR="$inc" -DFRUGAL_CUDNN_LIBRARY="$lib")
  export LD_LIBRARY_PATH="$(dirname "$lib"):${LD_LIBRARY_PATH:-}"
fi
say "cuDNN: $found"
found="$(find_wheel_lib nccl.h libnccl nvidia.nccl)"
if [ -z "$found" ]; then say "gpu-check: no NCCL found (nccl.h and libnccl)"; exit 1; fi
if [ "$found" != system ]; then
  read -r inc lib <<<"$found"
  cudnn_args+=(-DFRUGAL_NCCL_INCLUDE_DIR="$inc" -DFRUGAL_NCCL_LIBRARY="$lib")
  export LD_LIBRARY_PATH="$(dirname "$lib"):${LD_LIBRARY_PATH:-}"
fi
say "NCCL: $found"

prefix=()
[ -d .gpu-deps ] && prefix=(-DCMAKE_PREFIX_PATH="$PWD/.gpu-deps" -DZLIB_ROOT="$PWD/.gpu-deps")
# ONNX import where the bundle carries protobuf and ONNX's classes (their shared libraries on
# the library path: libonnx_proto needs libprotobuf at run time).
onnx=0
if [ -f .gpu-deps/include/onnx/onnx-ml.pb.h ] && [ -f .gpu-deps/lib/libonnx_proto.so.1 ]; then
  onnx=1
  export LD_LIBRARY_PATH="$PWD/.gpu-deps/lib:${LD_LIBRARY_PATH:-}"
fi
say "ONNX import: $([ "$onnx" = 1 ] && echo "on (.gpu-deps)" || echo "off (no protobuf and ONNX in .gpu-deps)")"

say "== build"
# No MPI there: the bundle carries no Open MPI. Only the programs the checks run are built
# (the CPU suite runs in CI).
generator=()
have ninja && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DFRUGAL_CUDA=ON \
  -DFRUGAL_ONNX="$([ "$onnx" = 1 ] && echo ON || echo OFF)" -DFRUGAL_MPI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="${FRUGAL_CUDA_ARCH:-90}" "${prefix[@]}" "${cudnn_args[@]}" \
  >"$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; exit 1; }
targets=(frugal_cli)
[ "$checks" = 1 ] && targets+=(frugal_cuda_tests)
cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$build.build.log" 2>&1 || {
  grep -E "error|Error" "$build.build.log" | head -40; exit 1; }
say "warnings in the build: $(grep -c 'warning' "$build.build.log")"
grep -A3 'warning' "$build.build.log" | head -20 | tee -a "$logs/gpu-check.txt"

frugal="$build/apps/frugal"
failed=0
if [ "$checks" = 1 ]; then
say "== CUDA tests"
# Bounded, and by test case (-d prints each case's time as it ends): a lent machine's minutes
# are few, and on 2026-11-26 one case that did not end took the whole run with it.
timeout "${GPU_TEST_TIMEOUT:-360}" stdbuf -oL "$build/tests/cuda/frugal_cuda_tests" -d \
  >"$logs/cuda-tests.log" 2>&1
rc=$?
grep -E "test cases|assertions|MESSAGE|executor .* bytes|ERROR|Status| s: |skipped" "$logs/cuda-tests.log" \
  | tee -a "$logs/gpu-check.txt"
say "CUDA tests: exit $rc"
[ "$rc" -ne 0 ] && failed=1
fi
# The kernel twins under memcheck run beside the ONNX fixtures (which only print the driver's
# figures) and are waited for before the command line, whose driver figures are reported.
sanitizer=""
if [ "$checks" = 1 ] && [ -n "${GPU_SANITIZE:-}" ] && have compute-sanitizer; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/cuda/frugal_cuda_tests" \
    -tc='cuda*' -tce='cuda device*' >"$logs/sanitizer.log" 2>&1 &
  sanitizer=$!
fi
wait_sanitizer() {
  [ -n "$sanitizer" ] || return 0
  wait "$sanitizer"
  local rc=$?
  sanitizer=""
  say "compute-sanitizer memcheck over the kernel twins: exit $rc, $(grep -c 'Invalid' "$logs/sanitizer.log") invalid accesses"
  [ "$rc" -ne 0 ] && failed=1
  return 0
}
if [ "$onnx_checks" = 1 ] && [ "$onnx" = 1 ]; then
  say "== users' models: the ONNX fixtures on the device"
  # Each fixture's training step planned and measured on the GPU: measured == planned, a
  # second step allocating nothing, planned and baseline losses bitwise equal.
  read -r -a onnx_files <<<"${GPU_ONNX_FILES:-$(echo tests/data/onnx/*.onnx)}"
  total=0 passed=0
  for f in "${onnx_files[@]}"; do
    total=$((total + 1))
    if timeout 120 "$frugal" memory --device cuda --onnx "$f" --batch 2 --mode training --run \
      >"$build.onnx.log" 2>&1 && grep -q "losses are bitwise equal" "$build.onnx.log" &&
      grep -q "(report: equal); a second step allocates 0 bytes more" "$build.onnx.log"; then
      passed=$((passed + 1))
    else
      say "$(basename "$f"): $(grep -v '^$' "$build.onnx.log" | tail -2 | tr '\n' ' ')"
      failed=1
    fi
  done
  say "ONNX fixtures on the device: $passed of $total planned == measured, planned == baseline"
  # Three training steps of each on synthetic data, the losses printed (compare them with a
  # CPU run of the same command: the data and the weights are the same on both).
  : >"$logs/onnx-train-cuda.txt"
  for f in "${onnx_files[@]}"; do
    printf '%s' "$(basename "$f")" >>"$logs/onnx-train-cuda.txt"
    timeout 120 "$frugal" train --device cuda --onnx "$f" --data synthetic --steps 3 --batch 2 \
      --print-every 1 2>&1 | grep -o ' loss [^ ]*' | head -3 | tr -d '\n' >>"$logs/onnx-train-cuda.txt"
    echo >>"$logs/onnx-train-cuda.txt"
  done
  say "== users' models: torchvision through ONNX beside PyTorch"
  if [ "${GPU_ONNX_PEERS:-1}" = 0 ]; then
    say "gpu-check: GPU_ONNX_PEERS=0: the ONNX peers were not run"
  elif [ -d .gpu-deps/onnx ] && "$python" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
    "$python" bench/peers/gpu_peers.py --frugal "$frugal" --set onnx --onnx-dir .gpu-deps/onnx \
      --rounds "${GPU_PEERS_ROUNDS:-1}" --markdown "$logs/gpu-peers-onnx.md" \
      --raw "$logs/gpu-peers-onnx.json" 2>"$logs/gpu-peers-onnx.log" | tee -a "$logs/gpu-check.txt" \
      || { say "ONNX peers FAILED"; failed=1; }
  else
    say "gpu-check: no exports in .gpu-deps/onnx or no PyTorch with CUDA; the ONNX peers were not run"
  fi
fi

wait_sanitizer
if [ "$checks" = 1 ] && [ "$cli" = 1 ]; then
say "== the command line on the device"
cli() {  # runs the command, keeps its output; a failure is counted
  say "\$ frugal $*"
  if timeout 180 "$frugal" "$@" >"$build.cli.log" 2>&1; then
    tail -8 "$build.cli.log" | tee -a "$logs/gpu-check.txt"
  else tail -8 "$build.cli.log" | tee -a "$logs/gpu-check.txt"; say "FAILED"; failed=1; fi
}
cli train --device cuda --model small-cnn --data synthetic --steps 40 --batch 64 --warmup 5
cli train --device cuda --model resnet20 --data synthetic --steps 10 --batch 128 --memory baseline
for m in resnet110 googlenet; do
  cli memory --device cuda --model "$m" --batch 64 --run
done
cli memory --device cuda --model resnet110 --batch 64 --memory-budget 120M --run
cli memory --device cuda --model vgg-a --batch 64 --run
cli memory --device cuda --model vgg-a --batch 64 --workspace-growth 1G --run
cli memory --device cuda --model resnet110 --batch 64 --workspace-limit 4M
for m in googlenet vgg-a; do
  "$frugal" memory --device cuda --model "$m" --batch 64 --workspaces >"$logs/workspaces-$m.txt" 2>&1 \
    || { say "memory --model $m --workspaces FAILED"; failed=1; }
  tail -1 "$logs/workspaces-$m.txt" | tee -a "$logs/gpu-check.txt"
done
"$frugal" memory --device cuda --model vgg-a --batch 64 --workspaces --workspace-growth 1G \
  2>&1 | tail -1 | tee -a "$logs/gpu-check.txt"
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
