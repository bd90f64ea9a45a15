#!/usr/bin/env bash
# Installs the Debian packages frugal needs to build, test and train, when any is missing.
# Idempotent and silent when everything is present; uses sudo only when not root.
set -euo pipefail

packages=(cmake g++ make pkg-config libeigen3-dev doctest-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev libturbojpeg0-dev libpng-dev libonnx-dev libprotobuf-dev dataset-fashion-mnist graphviz
  librsvg2-bin libopenmpi-dev openmpi-bin)

missing=()
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null; then
  echo "setup-deps: no apt-get here; please install: ${missing[*]}" >&2
  exit 1
fi
sudo=()
[[ "$(id -u)" -ne 0 ]] && sudo=(sudo)
echo "setup-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends "${missing[@]}"
