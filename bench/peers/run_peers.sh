#!/usr/bin/env bash
# frugal beside PyTorch, from a clean checkout: builds frugal (Release) if needed, gets PyTorch
# into a venv under the build directory (Debian's python3-torch 1.13.1 first, PyPI's CPU wheel
# only if that package is unavailable), runs every case alternating frugal and PyTorch, and
# writes the "frugal vs PyTorch" section of docs/BENCHMARKS.md. PyTorch is never a dependency
# of the library. Usage: bench/peers/run_peers.sh [--only resnet110,alexnet] [--budget-minutes N]
#   bench/peers/run_peers.sh --set torchvision   # torchvision's models through ONNX (issue 17)
#   bench/peers/run_peers.sh --set recompute     # the same with --recompute cheap (issue 16)
#   bench/peers/run_peers.sh --set lnout         # --ln-from-output (also timm, video, inputs,
#                                                # pack, bnout: each set its own results file
#                                                # and section)
#   FRUGAL_BUILD=build-peers bench/peers/run_peers.sh   # another build directory
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${FRUGAL_BUILD:-build}"
venv="$build/peers-venv"
say() { echo "run_peers: $*" >&2; }
sudo=()
[[ "$(id -u)" -ne 0 ]] && sudo=(sudo)

# frugal, Release.
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  scripts/setup-deps.sh
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
type="$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build/CMakeCache.txt")"
[[ "$type" == Release ]] || say "warning: $build is a '$type' build; timings want Release"
cmake --build "$build" -j2 --target frugal_cli
frugal="$build/apps/frugal"
"$frugal" bench --help >/dev/null

# PyTorch: Debian's package (the version of reference/published.md's figures), else PyPI.
debian_torch() {
  [[ "$(dpkg-query -W -f='${Status}' python3-torch 2>/dev/null)" == "install ok installed" ]]
}
# Debian's python3-torch runs its matrix products (nn.Linear, matmul, the FC layers) on whatever
# libblas.so.3 the system selects: with --no-install-recommends that is the reference BLAS, some
# 50x slower than OpenBLAS (a 197x768x3072 product: 0.16 s against 0.01 s here). OpenBLAS
# registers itself as the system's libblas.so.3, so PyTorch gets an optimized BLAS.
openblas() {
  [[ "$(dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null)" == "install ok installed" ]]
}
if { ! debian_torch || ! openblas; } && command -v apt-get >/dev/null; then
  say "installing Debian's python3-torch and OpenBLAS"
  "${sudo[@]}" apt-get update -qq || true
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3-torch python3-venv libopenblas0-pthread || true
fi
if debian_torch; then
  python=/usr/bin/python3  # the interpreter whose dist-packages hold python3-torch
  [[ -x "$venv/bin/python" ]] || "$python" -m venv --system-site-packages "$venv"
  source="PyTorch $(dpkg-query -W -f='${Version}' python3-torch) from Debian's python3-torch"
else
  say "python3-torch unavailable: installing PyTorch's CPU-only wheel from PyPI into $venv"
  [[ -x "$venv/bin/python" ]] || python3 -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q torch --index-url https://download.pytorch.org/whl/cpu
  version="$("$venv/bin/python" -c 'import torch; print(torch.__version__)')"
  source="PyTorch $version from pip (CPU wheel)"
fi
py="$venv/bin/python"
"$py" -c "import torch" || { say "error: torch does not import in $venv"; exit 1; }
say "using $source"

# memcnn for the RevNet rows (no frugal RevNet to set beside it yet); optional.
if "$py" -c "import memcnn" 2>/dev/null ||
  { "$venv/bin/pip" install -q --no-deps memcnn && "$py" -c "import memcnn"; } 2>/dev/null; then
  memcnn="memcnn $("$py" -c 'import memcnn; print(memcnn.__version__)') imports with it"
else
  memcnn="memcnn skipped: it did not install or import with this PyTorch"
fi
say "$memcnn"

"$py" bench/peers/pytorch_nets.py  # parameter counts equal frugal's, or stop here
# --set NAME: its own results file, and make_table.py's section of that name.
set_name=""
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
  [[ "${args[i]}" == "--set" ]] && set_name="${args[i + 1]}"
done
results="$build/peers-results${set_name:+-$set_name}.jsonl"
"$py" bench/peers/run_cases.py --frugal "$frugal" --python "$py" --torch-source "$source" \
  --out "$results" "$@"
cmdline="bench/peers/run_peers.sh"
[[ $# -gt 0 ]] && cmdline+="$(printf ' %q' "$@")"
[[ -n "${FRUGAL_BUILD:-}" ]] && cmdline="FRUGAL_BUILD=$build $cmdline"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD 2>/dev/null || commit="$commit + uncommitted changes"
set_args=()
case "$set_name" in
  "") ;;
  torchvision | recompute | pack | bnout | lnout) set_args=(--set "$set_name") ;;
  # Sets without a section of their own in make_table.py: their table printed, not written.
  *) set_args=(--set torchvision --print-only) ;;
esac
"$py" bench/peers/make_table.py "$results" --doc docs/BENCHMARKS.md "${set_args[@]}" \
  --command "$cmdline" --torch-source "$source" --memcnn "$memcnn" \
  --commit "$commit" --frugal "$frugal"
if [[ " ${set_args[*]} " == *" --print-only "* ]]; then
  say "results in $results; the table above (make_table.py has no section for --set $set_name)"
else
  say "results in $results; table in docs/BENCHMARKS.md"
fi
