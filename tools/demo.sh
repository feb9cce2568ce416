#!/usr/bin/env bash
# Builds onnxmap (release) and shows what it does, on a demo model or on MODEL.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps

onnxmap_release_build

"$onnxmap" --version

# show MODEL: the metadata, the tensors, one tensor fetched as .npy, the check, the graph, the
# structure as JSON.
show() {
  local model=$1
  echo
  echo "== onnxmap info $model"
  "$onnxmap" info "$model"
  echo
  echo "== onnxmap ls $model"
  "$onnxmap" ls "$model"
  local first
  first=$("$onnxmap" ls --json "$model" | /usr/bin/python3 -c \
    'import json, sys; rows = [r for r in json.load(sys.stdin) if r["dtype"] != "STRING"]; print(rows[0]["path"] if rows else "")')
  if [ -n "$first" ]; then
    local npy
    npy=$(mktemp --suffix=.npy)
    echo
    echo "== onnxmap get $model $first -o $npy"
    "$onnxmap" get "$model" "$first" -o "$npy"
    /usr/bin/python3 -c 'import numpy, sys; a = numpy.load(sys.argv[1]); print(a.dtype, a.shape, a.ravel()[:6])' "$npy"
    rm -f "$npy"
  fi
  echo
  echo "== onnxmap check --data $model"
  # A model with problems is still worth showing: report the exit code and go on.
  "$onnxmap" check --data "$model" || echo "(check exit code $?: problems found)"
  echo
  echo "== onnxmap graph --depth 1 $model (first 20 lines, initializers left out: ls lists them)"
  # (|| true: head may close the pipe before a large graph is printed, which is fine here)
  { "$onnxmap" graph --depth 1 "$model" | grep -v '^  init ' || true; } | head -n 20
  if "$onnxmap" --help | grep -qE "^ +dump"; then
    echo
    echo "== onnxmap dump --omit-data $model (first 30 lines)"
    { "$onnxmap" dump --omit-data "$model" || true; } | head -n 30
  fi
}

if [ $# -ge 1 ]; then
  show "$1"
else
  demo=$(mktemp -d)
  trap 'rm -rf "$demo"' EXIT
  echo
  echo "== onnxmap synth $demo/demo.onnx --layers 2 --hidden 64 --vocab 256 --external-data"
  "$onnxmap" synth "$demo/demo.onnx" --layers 2 --hidden 64 --vocab 256 --external-data
  show "$demo/demo.onnx"
fi
