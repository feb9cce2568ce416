#!/usr/bin/env bash
# Shared by tools/demo.sh, tools/test.sh and tools/bench.sh: installs the Debian packages onnxmap
# builds and tests with (only those missing, quiet when all are in place) and makes the release
# build.
set -euo pipefail

onnxmap_packages=(
  g++ meson ninja-build pkg-config
  # tests/install: the CMake example consumer.
  cmake
  libboost-dev libboost-iostreams-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  # SHA-1 of external data checksums (check --data).
  libssl-dev
  # Models read over HTTP (http:// and https:// URLs).
  libcurl4-openssl-dev
  # The reference implementation, used as the oracle by tests and benchmarks.
  python3 python3-onnx python3-protobuf python3-numpy
  libonnx-dev libprotobuf-dev
  # The Python package (python/, pyproject.toml): pybind11, meson-python, pytest; PyTorch for
  # safe_open(framework="pt") and the torch.distributed tensor-parallel test (47 s to
  # install here: 173 packages, 606 MB).
  python3-dev python3-pybind11 pybind11-dev python3-mesonpy python3-pytest python3-venv
  python3-torch
  # tools/fuzz.sh: libFuzzer ships with clang (libclang_rt.fuzzer is in libclang-rt-14-dev).
  clang libclang-rt-14-dev
)

onnxmap_install_deps() {
  local missing=()
  local pkg
  for pkg in "${onnxmap_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0

  echo "onnxmap: installing missing packages: ${missing[*]}" >&2
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "onnxmap: need root or sudo to install ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq >&2
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Configures (once) and builds the release build in build-release; sets $onnxmap to the command.
onnxmap_release_build() {
  local build=build-release
  if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=release >/dev/null
  fi
  local log
  if ! log=$(ninja -C "$build" --quiet 2>&1); then
    echo "$log" >&2
    return 1
  fi
  onnxmap="$build/tools/onnxmap/onnxmap"
}
