#!/usr/bin/env bash
# Makes the benchmark models with `onnxmap synth`, runs onnxmap against libprotobuf, python onnx
# and the physical limits (memcpy and memory-read bandwidth measured in the same run) on them,
# times `onnxmap convert` against `cp`, writes the tables to bench/RESULTS.md, and removes the
# models. Under 10 minutes on 2 cores. The cold fetches evict the pages of the bench's own
# files from the page cache (posix_fadvise), which needs no root.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps all

# Progress on stderr, with the seconds since the start: the whole run must stay under 10 minutes.
log() { echo "[${SECONDS}s] $*" >&2; }

onnxmap_release_build
build=build-release

dir=$(mktemp -d "$root/bench-models.XXXXXX")
trap 'rm -rf "$dir"' EXIT
log "making models in $dir"
# Llama-70B shapes in float32, payloads as holes (~282 GB apparent, a few MB of disk).
"$onnxmap" synth "$dir/llm-320g.onnx" --layers 80 --hidden 8192 --ffn 28672 --vocab 128256 \
  --dtype float32 --sparse >&2
# Llama-7B shapes in float16, weights in a sparse external data file.
"$onnxmap" synth "$dir/llm-7b-ext.onnx" --layers 32 --hidden 4096 --ffn 11008 --vocab 32000 \
  --kv-dim 4096 --external-data --sparse >&2
# ~1.9 GB inline with real bytes: the largest size libprotobuf can still parse.
"$onnxmap" synth "$dir/llm-2g.onnx" --layers 16 --hidden 2048 --ffn 6656 --vocab 32000 >&2
# Metadata-heavy, as issue 64 describes it: 20000 tiny layers (nine float16 tensors of 4 to 44
# elements each), the imports of ONNX Runtime GenAI's builder.
"$onnxmap" synth "$dir/graph-heavy.onnx" --layers 20000 --hidden 4 --ffn 11 --vocab 16 \
  --ir-version 10 --opset ai.onnx=21 --opset com.microsoft=1 >&2

log "running reader_bench"
ONNXMAP_BENCH_DIR=$dir "$build/bench/reader_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
  --benchmark_format=json --benchmark_out="$dir/reader.json" >/dev/null

# python_load.py's "ms rss [materialise_ms materialise_rss materialised_bytes]" as probe lines of
# its two modes.
probe_python() {
  local columns
  read -r -a columns <<<"$(/usr/bin/python3 bench/python_load.py "$1" ${3:+"$3"})"
  echo "$2 python-onnx-load ${columns[0]} ${columns[1]}"
  if [ ${#columns[@]} -ge 5 ]; then
    echo "$2 python-onnx-materialise ${columns[2]} ${columns[3]} ${columns[4]}"
  elif [ -n "$3" ]; then
    echo "$2 python-onnx-materialise ${columns[0]} ${columns[1]}"  # cannot-open
  fi
}

log "probing time and peak RSS in fresh processes (median of 5; python: 3)"
: >"$dir/probes.txt"
for model in llm-320g llm-7b-ext llm-2g graph-heavy; do
  for mode in onnxmap-open onnxmap-peek protobuf-parse; do
    for _ in 1 2 3 4 5; do
      echo "$model $mode $("$build/bench/rss_probe" "$mode" "$dir/$model.onnx")" >>"$dir/probes.txt"
    done
  done
  for run in 1 2 3; do
    # The first run also materialises the tensors onnxmap_read_all_* read (up to 2 GiB).
    materialise=""
    if [ "$run" = 1 ]; then materialise=--materialise; fi
    probe_python "$dir/$model.onnx" "$model" "$materialise" >>"$dir/probes.txt"
  done
done

log "converting (onnxmap convert against cp)"
/usr/bin/python3 bench/convert_bench.py "$onnxmap" "$build/bench/peak_rss" "$dir" llm-2g llm-320g \
  >"$dir/convert.md"

# bench/RESULTS.md: this run's tables only, written from the bench's JSON and the probes.
{
  echo "# Benchmark results"
  echo
  echo "Written by \`./tools/bench.sh\` on $(date -u +%Y-%m-%d) at commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
  echo "Cold loads against the device: [cold-load.md](cold-load.md) (\`./tools/cold_bench.sh\`)."
  echo
  /usr/bin/python3 bench/report.py "$dir" "$(nproc)"
  echo
  echo "Conversion, median of 3 fresh processes, warm page cache:"
  echo
  cat "$dir/convert.md"
} >bench/RESULTS.md
cat bench/RESULTS.md
log "done: bench/RESULTS.md"
