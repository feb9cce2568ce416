#!/usr/bin/env bash
# Shared by tools/demo.sh, tools/test.sh and tools/bench.sh: installs the Debian packages onnxmap
# builds and tests with (only those missing, quiet when all are in place) and makes the release
# build.
set -euo pipefail

onnxmap_packages=(
  g++ meson ninja-build pkg-config
  # A compiler cache: Meson uses it when it is on PATH, so a rerun compiles only what changed.
  ccache
  # tests/install: the CMake example consumer.
  cmake
  libboost-dev libboost-iostreams-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev
  # onnxmap view's graph page: Graphviz's dot lays out each scene (libgvc, in-process).
  libgraphviz-dev
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
  # pytest's -n 2 (python/tests/meson.build); mypy's stubtest checks the shipped type stub.
  python3-pytest-xdist python3-mypy
  # bench/cold_load_bench: the device's limit (fio, O_DIRECT) and io_uring against the thread
  # pool for direct reads.
  fio liburing-dev
  # The sanitizer build (tools/test.sh) and the fuzz targets (tools/fuzz.sh): clang with
  # AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer (libclang-rt-14-dev).
  clang libclang-rt-14-dev
  # The browser tests (tests/view/browser_test.py): the viewer's pages in headless Chromium,
  # driven by puppeteer-core from npm (Node.js and npm: see onnxmap_install_deps). Node.js and npm
  # also run the s3:// tests' S3 server (tests/remote/s3server/: @20minutes/s3rver, npm ci).
  chromium
)

onnxmap_install_deps() {
  local missing=()
  local pkg
  for pkg in "${onnxmap_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  # npm only when none is on PATH: Node.js from NodeSource brings its own npm, and its package
  # (also named nodejs) conflicts with Debian's npm. Debian's npm pulls in Debian's nodejs.
  command -v npm >/dev/null || missing+=(npm)
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

# Configures (once) the clang build with AddressSanitizer, UndefinedBehaviorSanitizer and the
# fuzzers' coverage instrumentation in build-asan: tools/test.sh runs its tests, tools/fuzz.sh its
# fuzz targets. Unity files: it only checks, and is not the build one debugs in.
onnxmap_asan_setup() {
  local build=build-asan
  [ -f "$build/build.ninja" ] && return 0
  # -Db_lundef=false: meson needs it to link with the sanitizer runtimes.
  CXX="$(command -v ccache >/dev/null && echo "ccache ")clang++" meson setup "$build" --buildtype=debugoptimized -Dwerror=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=enabled -Dunity=on -Dbench=disabled \
    >/dev/null
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
