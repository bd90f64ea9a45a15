#!/usr/bin/env bash
# Gathers, on a Debian machine with scripts/setup-deps.sh's packages, what a CUDA build of
# frugal needs beyond nvcc, CMake and cuDNN, into .gpu-deps/ (ignored by git): the header-only
# libraries (Eigen, doctest, CLI11, nlohmann-json) with their CMake package files, and the
# headers and static libraries of zlib, libpng and libjpeg-turbo's TurboJPEG, protobuf and ONNX's
# classes (ONNX import), and two torchvision models exported to ONNX for the GPU peers. A GPU
# machine without Debian packages or a network builds against that prefix
# (scripts/gpu-check.sh). About 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
out=.gpu-deps
rm -rf "$out"
mkdir -p "$out/include" "$out/lib" "$out/share/cmake" "$out/share/eigen3" "$out/lib/cmake"
cp -r /usr/include/eigen3 /usr/include/doctest /usr/include/CLI /usr/include/nlohmann \
  /usr/include/zlib.h /usr/include/zconf.h "$out/include/"
cp -r /usr/share/eigen3/cmake "$out/share/eigen3/"
cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$out/share/cmake/"
cp -r /usr/lib/cmake/doctest "$out/lib/cmake/"
# doctest's package file names /usr outright; make it relative to where it lies.
sed -i 's|set(_IMPORT_PREFIX "/usr")|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
  "$out/lib/cmake/doctest/doctestTargets.cmake"
grep -rl '"/usr' "$out/share/cmake" "$out/lib/cmake" "$out/share/eigen3" && {
  echo "gpu-bundle: a package file above still names /usr" >&2
  exit 1
}
cp /usr/include/png.h /usr/include/pngconf.h /usr/include/pnglibconf.h /usr/include/turbojpeg.h \
  "$out/include/"
lib="/usr/lib/$(gcc -dumpmachine)"
cp "$lib/libz.a" "$lib/libpng16.a" "$lib/libturbojpeg.a" "$out/lib/"
# ONNX import: protobuf's headers and library, ONNX's generated classes (libonnx_proto, which
# needs libprotobuf.so.32 at run time: gpu-check.sh puts the bundle's lib/ on the library
# path) and a package file naming only the target frugal links (Debian's also names onnxifi
# files frugal never uses, and CMake checks that each exists).
cp -r /usr/include/google /usr/include/onnx "$out/include/"
cp -P "$lib"/libprotobuf.so "$lib"/libprotobuf.so.32* "$lib"/libonnx_proto.so* "$out/lib/"
mkdir -p "$out/lib/cmake/ONNX"
cat >"$out/lib/cmake/ONNX/ONNXConfig.cmake" <<'CMAKE'
# ONNX's onnx_proto target over scripts/gpu-bundle.sh's prefix (two folders up).
get_filename_component(_onnx_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(ONNX_VERSION "bundled")
if(NOT TARGET onnx_proto)
  add_library(onnx_proto SHARED IMPORTED)
  set_target_properties(onnx_proto PROPERTIES
    IMPORTED_LOCATION "${_onnx_prefix}/lib/libonnx_proto.so.1"
    INTERFACE_COMPILE_DEFINITIONS "ONNX_NAMESPACE=onnx;ONNX_ML=1"
    INTERFACE_INCLUDE_DIRECTORIES "${_onnx_prefix}/include"
    INTERFACE_LINK_LIBRARIES "protobuf::libprotobuf")
endif()
CMAKE
# Training-mode ONNX exports for the GPU peers (gpu_peers.py --set onnx): the networks
# measure_torch.py builds for tv-NAME, exported by Debian's PyTorch as the CPU peers do. Two,
# to stay inside the 64 MiB a GPU machine's working tree may take.
if ! /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3-torch python3-torchvision
fi
mkdir -p "$out/onnx"
for m in tv-mobilenet_v2 tv-efficientnet_b0; do
  /usr/bin/python3 bench/peers/export_torchvision.py --model "$m" --out "$out/onnx/$m.onnx"
done
du -sh "$out"
