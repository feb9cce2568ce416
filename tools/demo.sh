#!/usr/bin/env bash
# Builds the onnxmap library and command (release, in build-demo) and shows what the command
# does, on MODEL or on a model it makes and keeps in build-demo/demo/. Installs only the packages
# the build and this script need (tools/setup.sh's first list); tools/test.sh adds the rest.
set -euo pipefail
# MODEL as given from where the script was started (a URL stays as it is).
if [ $# -ge 1 ] && [ -e "$1" ]; then
  set -- "$(realpath "$1")"
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
source tools/setup.sh
onnxmap_install_deps demo

onnxmap_demo_build

"$onnxmap" --version

# show MODEL: the metadata, the tensors, one tensor fetched as .npy and its statistics, the check,
# the graph, the structure as JSON. The .npy is kept in $demo.
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
    local npy=$demo/first.npy
    echo
    echo "== onnxmap get $model $first -o $npy"
    "$onnxmap" get "$model" "$first" -o "$npy"
    echo "($(stat -c %s "$npy") bytes: numpy.load reads it)"
    echo
    echo "== onnxmap stats $model $first"
    "$onnxmap" stats "$model" "$first"
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

# next MODEL: where to go from here.
next() {
  local model=$1
  echo
  echo "== next (from $root)"
  echo "The command is $onnxmap; to put it on PATH:"
  echo "  export PATH=\"$root/${onnxmap%/*}:\$PATH\""
  echo "Look around the model in a browser (a local server; --no-browser prints only the URL):"
  echo "  $onnxmap view $model"
  echo "The whole test suite (it installs GoogleTest, the Python stack, PyTorch, clang and"
  echo "Chromium first; about 20 minutes on 2 cores): ./tools/test.sh"
  echo "The docs: README.md, docs/cli.md (every verb), docs/view.md, docs/cpp.md, docs/python.md,"
  echo "docs/development.md"
}

# The demo's files, kept after it for `onnxmap view` and the other verbs: the model it makes
# (made again on each run) and the .npy.
demo="build-demo/demo"
mkdir -p "$demo"
if [ $# -ge 1 ]; then
  show "$1"
  next "$1"
else
  rm -rf "$demo"
  mkdir "$demo"
  echo
  echo "== onnxmap synth $demo/demo.onnx --layers 2 --hidden 64 --vocab 256 --external-data"
  "$onnxmap" synth "$demo/demo.onnx" --layers 2 --hidden 64 --vocab 256 --external-data
  show "$demo/demo.onnx"
  next "$demo/demo.onnx"
fi
