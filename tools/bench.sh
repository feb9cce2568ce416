#!/usr/bin/env bash
# Makes the benchmark models with `onnxmap synth`, runs onnxmap against libprotobuf and python
# onnx on them, times `onnxmap convert` against `cp`, prints markdown tables, and removes the
# models. About 5-10 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps

onnxmap_release_build
build=build-release

dir=$(mktemp -d "$root/bench-models.XXXXXX")
trap 'rm -rf "$dir"' EXIT
echo "making models in $dir" >&2
# Llama-70B shapes in float32, payloads as holes (~282 GB apparent, a few MB of disk).
"$onnxmap" synth "$dir/llm-320g.onnx" --layers 80 --hidden 8192 --ffn 28672 --vocab 128256 \
  --dtype float32 --sparse >&2
# Llama-7B shapes in float16, weights in a sparse external data file.
"$onnxmap" synth "$dir/llm-7b-ext.onnx" --layers 32 --hidden 4096 --ffn 11008 --vocab 32000 \
  --kv-dim 4096 --external-data --sparse >&2
# ~1.9 GB inline with real bytes: the largest size libprotobuf can still parse.
"$onnxmap" synth "$dir/llm-2g.onnx" --layers 16 --hidden 2048 --ffn 6656 --vocab 32000 >&2
# Metadata-heavy: 20000 tiny layers.
"$onnxmap" synth "$dir/graph-heavy.onnx" --layers 20000 --hidden 4 --vocab 16 >&2

echo "running reader_bench" >&2
ONNXMAP_BENCH_DIR=$dir "$build/bench/reader_bench" --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true --benchmark_min_time=0.1 \
  --benchmark_format=json --benchmark_out="$dir/reader.json" >/dev/null

echo "probing time and peak RSS in fresh processes (median of 3)" >&2
: >"$dir/probes.txt"
for model in llm-320g llm-7b-ext llm-2g graph-heavy; do
  for mode in onnxmap-open onnxmap-peek protobuf-parse; do
    for _ in 1 2 3; do
      echo "$model $mode $("$build/bench/rss_probe" "$mode" "$dir/$model.onnx")" >>"$dir/probes.txt"
    done
  done
  for _ in 1 2 3; do
    echo "$model python-onnx-load $(/usr/bin/python3 bench/python_load.py "$dir/$model.onnx")" \
      >>"$dir/probes.txt"
  done
done

/usr/bin/python3 bench/report.py "$dir" "$(nproc)"

echo "converting (onnxmap convert against cp)" >&2
echo
echo "Conversion, median of 3 fresh processes, warm page cache:"
echo
/usr/bin/python3 bench/convert_bench.py "$onnxmap" "$build/bench/peak_rss" "$dir" llm-2g llm-320g
