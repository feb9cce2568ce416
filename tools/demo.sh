#!/usr/bin/env bash
# Builds onnxmap (release) and shows what it does, on a demo model or on MODEL.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/install-deps.sh
onnxmap_install_deps

build=build-release
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" --buildtype=release >/dev/null
fi
ninja -C "$build" >/dev/null
onnxmap="$build/tools/onnxmap/onnxmap"

"$onnxmap" --version
echo "(the model reader is not built yet: this demo grows with the project)"
