#!/usr/bin/env bash
# Runs each benchmark once on tiny stand-ins of the bench models, the probes and python's load
# and materialise included, then report.py on the results, so neither the harness nor the tables
# can rot. Times nothing against anything. Usage: smoke.sh ONNXMAP BENCH PROBE
set -euo pipefail
onnxmap=$1 bench=$2 probe=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$onnxmap" synth "$dir/llm-320g.onnx" --layers 41 --hidden 16 --vocab 32 --sparse >/dev/null
"$onnxmap" synth "$dir/llm-7b-ext.onnx" --layers 17 --hidden 16 --vocab 32 --external-data >/dev/null
"$onnxmap" synth "$dir/llm-2g.onnx" --layers 9 --hidden 16 --vocab 32 >/dev/null
"$onnxmap" synth "$dir/graph-heavy.onnx" --layers 10001 --hidden 4 --vocab 8 >/dev/null
ONNXMAP_BENCH_DIR=$dir "$bench" --benchmark_min_time=0.001 --benchmark_format=json \
  --benchmark_out="$dir/reader.json" >/dev/null

# A benchmark that skipped itself with an error would leave its cells empty without failing.
/usr/bin/python3 - "$dir/reader.json" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["benchmarks"]
failed = sorted({r["run_name"] + ": " + r.get("error_message", "") for r in rows
                 if r.get("error_occurred")})
if failed or not rows:
    sys.exit("benchmarks failed:\n" + "\n".join(failed or ["none ran"]))
EOF

for model in llm-320g llm-7b-ext llm-2g graph-heavy; do
  for mode in onnxmap-open onnxmap-peek protobuf-parse; do
    echo "$model $mode $("$probe" "$mode" "$dir/$model.onnx")" >>"$dir/probes.txt"
  done
  python_probe=$(/usr/bin/python3 "$here/python_load.py" "$dir/$model.onnx" --materialise)
  read -r -a columns <<<"$python_probe"
  echo "$model python-onnx-load ${columns[0]} ${columns[1]}" >>"$dir/probes.txt"
  echo "$model python-onnx-materialise ${columns[*]:2}" >>"$dir/probes.txt"
done
/usr/bin/python3 "$here/report.py" "$dir" "$(nproc)" >"$dir/report.md"
rows=$(grep -c '^|' "$dir/report.md")
echo "bench smoke: every benchmark ran once; report.py made $rows table rows"
