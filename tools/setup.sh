#!/usr/bin/env bash
# Shared by tools/demo.sh, tools/test.sh, tools/bench.sh and the other scripts: installs the
# Debian packages a purpose needs (only those missing, quiet when all are in place) and makes the
# demo's and the benchmarks' release builds.
set -euo pipefail

# The library and the onnxmap command, and what tools/demo.sh itself runs.
onnxmap_demo_packages=(
  # The compiler and the build: Meson, Ninja, and pkg-config, which finds the libraries below.
  g++ meson ninja-build pkg-config
  # The viewer's page is built into the command by a Python script (viewer/embed_assets.py);
  # demo.sh reads `onnxmap ls --json` with it (Meson needs it too).
  python3
  # The library's Boost.Iostreams mappings and containers; the viewer's HTTP server (Beast).
  libboost-dev libboost-iostreams-dev
  # The command's arguments and JSON output (header-only).
  libcli11-dev nlohmann-json3-dev
  # onnxmap view's graph page: Graphviz's dot program lays out each scene (run per drawing).
  graphviz
  # SHA-1 of external data checksums (check --data), SHA-256 of manifests (hash, verify).
  libssl-dev
  # XXH3-128, the fast manifests' hash (hash --algorithm xxh3-128).
  libxxhash-dev
  # Models read over HTTP (http:// and https:// URLs): the headers, and libcurl loaded at run time.
  libcurl4-openssl-dev
)

# What the test suite (tools/test.sh, tools/fuzz.sh) adds.
onnxmap_test_packages=(
  # A compiler cache: Meson uses it when it is on PATH; the suite's four builds and reruns compile
  # only what changed.
  ccache
  # tests/install: the CMake example consumer. Meson also writes the installed CMake package with
  # it (lib/meson.build), so a build that installs the library (README's Install) needs it.
  cmake
  # GoogleTest and GoogleMock: the unit, conformance and CLI tests' programs.
  libgtest-dev libgmock-dev
  # tests' schema-generated: the generated schema tables are compared formatted as the tree's.
  clang-format
  # The reference implementation, used as the oracle by tests and benchmarks.
  python3-onnx python3-protobuf python3-numpy
  libonnx-dev libprotobuf-dev
  # The Python package (python/, pyproject.toml): pybind11, meson-python, pytest; PyTorch for
  # safe_open(framework="pt") and the torch.distributed tensor-parallel test (47 s to
  # install here: 173 packages, 606 MB).
  python3-dev python3-pybind11 pybind11-dev python3-mesonpy python3-pytest python3-venv
  python3-torch
  # pytest's -n 2 (python/tests/meson.build); mypy's stubtest checks the shipped type stub.
  python3-pytest-xdist python3-mypy
  # The sanitizer build (tools/test.sh) and the fuzz targets (tools/fuzz.sh): clang with
  # AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer (libclang-rt-14-dev).
  clang libclang-rt-14-dev
  # The browser tests (tests/view/browser_test.py) and tools/view_bench.sh: the viewer's pages in
  # headless Chromium, driven by puppeteer-core from npm (Node.js and npm: see
  # onnxmap_install_deps). Node.js and npm also run the s3:// tests' S3 server
  # (tests/remote/s3server/: @20minutes/s3rver, npm ci).
  chromium
)

# What the benchmarks (bench/, tools/*bench.sh) add; the suite builds them too.
onnxmap_bench_packages=(
  # Google Benchmark: bench/'s programs (tools/bench.sh; bench/smoke.sh in the suite).
  libbenchmark-dev
  # bench/cold_load_bench: the device's limit (fio, O_DIRECT) and io_uring against the thread
  # pool for direct reads.
  fio liburing-dev
)

# onnxmap_install_deps demo|all: installs what is missing of the demo's packages (demo), or of
# every list (all: what tools/test.sh, tools/bench.sh and the other scripts need).
onnxmap_install_deps() {
  local wanted=("${onnxmap_demo_packages[@]}")
  case ${1:?demo or all} in
    demo) ;;
    all) wanted+=("${onnxmap_test_packages[@]}" "${onnxmap_bench_packages[@]}") ;;
    *) echo "onnxmap_install_deps: unknown purpose $1 (demo or all)" >&2; return 2 ;;
  esac
  local missing=()
  local pkg
  # One dpkg-query for the whole list: a rerun with everything in place stays quick.
  local installed
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${wanted[@]}" 2>/dev/null |
    awk '/ install ok installed$/ {print $1}' || true)
  for pkg in "${wanted[@]}"; do
    grep -qxF "$pkg" <<<"$installed" || missing+=("$pkg")
  done
  # npm only when none is on PATH: Node.js from NodeSource brings its own npm, and its package
  # (also named nodejs) conflicts with Debian's npm. Debian's npm pulls in Debian's nodejs.
  if [ "$1" = all ]; then
    command -v npm >/dev/null || missing+=(npm)
  fi
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

# onnxmap_build DIR [MESON OPTIONS...]: configures DIR once as a release build (its log shown only
# when it fails), builds every target it has, and sets $onnxmap to the command.
onnxmap_build() {
  local build=$1
  shift
  local log
  if [ ! -f "$build/build.ninja" ]; then
    if ! log=$(meson setup "$build" --buildtype=release "$@" 2>&1); then
      echo "$log" >&2
      return 1
    fi
  fi
  if ! log=$(ninja -C "$build" --quiet 2>&1); then
    echo "$log" >&2
    return 1
  fi
  onnxmap="$build/tools/onnxmap/onnxmap"
}

# tools/demo.sh's build, build-demo: the static library and the onnxmap command only, so that it
# needs only the demo's packages and is not rebuilt when the others come (tools/test.sh and the
# benchmarks build in folders of their own). Unity files and -O2: half the compile time of a
# plain -O3 release build, for the same command (no shared library, nothing to install).
onnxmap_demo_build() {
  onnxmap_build build-demo -Doptimization=2 -Dunity=on -Dtests=disabled -Dbench=disabled \
    -Dpython=disabled -Dfuzz=disabled
}

# The benchmarks' build, build-release: everything the installed packages allow, the benchmarks
# and the Python package included.
onnxmap_release_build() {
  onnxmap_build build-release
}
