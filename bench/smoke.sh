#!/usr/bin/env bash
# Runs each benchmark once on tiny stand-ins of the bench models. Usage: smoke.sh ONNXMAP BENCH PROBE
set -euo pipefail
onnxmap=$1 bench=$2 probe=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$onnxmap" synth "$dir/llm-320g.onnx" --layers 41 --hidden 16 --vocab 32 --sparse >/dev/null
"$onnxmap" synth "$dir/llm-7b-ext.onnx" --layers 17 --hidden 16 --vocab 32 --external-data >/dev/null
"$onnxmap" synth "$dir/llm-2g.onnx" --layers 9 --hidden 16 --vocab 32 >/dev/null
"$onnxmap" synth "$dir/graph-heavy.onnx" --layers 10001 --hidden 4 --vocab 8 >/dev/null
ONNXMAP_BENCH_DIR=$dir "$bench" --benchmark_min_time=0.001 >/dev/null
for mode in onnxmap-open onnxmap-peek protobuf-parse; do "$probe" "$mode" "$dir/llm-2g.onnx" >/dev/null; done
echo "bench smoke: every benchmark ran once"
