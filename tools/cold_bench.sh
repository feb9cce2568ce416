#!/usr/bin/env bash
# Cold loads against the disk's own limit: makes a 4.5 GiB model with real bytes (holes would
# read as zeros without touching the disk), runs bench/cold_load_bench on it inline and then
# with external data (one model on disk at a time, at most 5 GB), and removes them. Each case
# evicts the files (posix_fadvise DONTNEED, no root needed) before it runs; cases alternate
# round by round; medians. RUNS=N rounds (default 3); about 10 minutes a model on a quiet disk.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps
onnxmap_release_build
build=build-release
ninja -C "$build" bench/cold_load_bench >&2

dir=$(mktemp -d "$root/cold-models.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for layout in inline external; do
  flags=()
  [[ $layout == external ]] && flags=(--external-data)
  "$onnxmap" synth "$dir/llm-4g.onnx" --layers 10 --hidden 4096 --dtype float16 "${flags[@]}" >&2
  sync
  echo "### llm-4g ($layout)"
  "$build/bench/cold_load_bench" "$dir/llm-4g.onnx" --runs "${RUNS:-3}"
  echo
  rm -f "$dir"/llm-4g.onnx*
done
