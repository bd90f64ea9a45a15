#!/usr/bin/env bash
# Gathers, on a Debian machine with scripts/setup-deps.sh's packages, what a CUDA build of
# frugal needs beyond nvcc, CMake and cuDNN, into .gpu-deps/ (ignored by git): the header-only
# libraries (Eigen, doctest, CLI11, nlohmann-json) with their CMake package files, and the
# headers and static libraries of zlib, libpng and libjpeg-turbo's TurboJPEG. A GPU machine without Debian packages or a network builds
# against that prefix (scripts/gpu-check.sh). About 12 MiB.
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
du -sh "$out"
