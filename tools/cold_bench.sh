#!/usr/bin/env bash
# Cold loads against the disk's own limit: makes a 4.5 GiB model with real bytes (holes would
# read as zeros without touching the disk), runs bench/cold_load_bench on it inline and then
# with external data (one model on disk at a time, at most 5 GB), writes bench/cold-load.md,
# and removes them. Each case evicts the files (posix_fadvise DONTNEED, no root needed) before
# it runs; cases alternate round by round; medians. RUNS=N rounds (default 3); about 10
# minutes a model on a quiet disk.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps all
onnxmap_release_build
build=build-release
ninja -C "$build" bench/cold_load_bench >&2

dir=$(mktemp -d "$root/cold-models.XXXXXX")
trap 'rm -rf "$dir"' EXIT
{
  echo "# Cold loads: the loader against the device"
  echo
  echo "Written by \`./tools/cold_bench.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $(uname -m), $(nproc) cores, Linux $(uname -r | cut -d- -f1)."
  echo "Each case starts with the files evicted (posix_fadvise DONTNEED); cases rotate round by round;"
  echo "medians of ${RUNS:-3} rounds. The device limit is the fastest plain reader of the same files"
  echo "in the same run, the buffered limit the fastest through the page cache (what read and map"
  echo "go through). CPU: user + system of every thread per GB delivered. Peak RSS growth: the"
  echo "process's peak resident memory during the case above what it held when the case began."
  echo
} >"$dir/cold-load.md"
for layout in inline external; do
  flags=()
  [[ $layout == external ]] && flags=(--external-data)
  "$onnxmap" synth "$dir/llm-4g.onnx" --layers 10 --hidden 4096 --dtype float16 "${flags[@]}" >&2
  sync
  {
    echo "## llm-4g ($layout)"
    echo
    "$build/bench/cold_load_bench" "$dir/llm-4g.onnx" --runs "${RUNS:-3}"
    echo
  } >>"$dir/cold-load.md"
  rm -f "$dir"/llm-4g.onnx*
done
cp "$dir/cold-load.md" bench/cold-load.md
cat bench/cold-load.md
