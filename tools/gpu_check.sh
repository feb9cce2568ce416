#!/usr/bin/env bash
# Weights into GPU memory, checked and measured on a machine with an NVIDIA GPU (issue 44):
#   (a) correctness: every tensor's device bytes equal the file's (bench/gpu_check.py), over
#       synth models (inline fp16, external bf16, int4), each mode and path, a shard (rank 1
#       of 2) and a cancelled load; and `onnxmap load --device DEVICE --json` on each;
#   (b) bench/gpu_bench.py: the bus and the disk-into-pinned limits, onnxmap warm and cold,
#       safetensors' load_file(device=...) when importable, into bench/gpu.md;
#   (c) bench/gpu_sweep.py (not with --host): each path at several thread counts, registering
#       alone, shards loaded at once by different paths, cold CPU, into bench/gpu-sweep.md.
#
# The GPU machines have CUDA, PyTorch (and maybe safetensors), Python 3.12 and 16 cores, but no
# Debian packages, no compiler toolchain to rely on and no registry: build elsewhere, carry the
# build folder. Debian's Boost.Iostreams and its compressors stay shared libraries whatever
# -Dprefer_static says, so `--bundle` copies them into
# BUILD/carried-libs/, which this script puts first on LD_LIBRARY_PATH: the binary and the
# module then need only glibc and libstdc++ there (no older than where they were built; a
# machine with PyTorch has both), and find
# CUDA at run time (dlopen: $ONNXMAP_CUDART, or torch's bundled libcudart). Here, before carrying:
#
#   meson setup build-release --buildtype=release -Dprefer_static=true -Dpython=disabled \
#     -Dtests=disabled -Dcpp_link_args='-static-libstdc++ -static-libgcc'
#   ninja -C build-release tools/onnxmap/onnxmap bench/libonnxmap_gpu_check.so
#   tools/gpu_check.sh --bundle build-release      # about 8 MB of libraries
#
# The Python package is not used there: an extension built for this machine's Python cannot be
# imported by another Python, so the check loads the library as a C module through ctypes, and
# torch allocates the destinations and copies them back.
#
# Run (from the tree's root, the build folder carried beside it):
#   tools/gpu_check.sh                      # build-release, cuda:0, writes bench/gpu.md
#   tools/gpu_check.sh --build build-test --host   # without a GPU: the host engine, a dry run
#                                                  # (the note goes to $WORK/gpu-host.md)
# Environment: WORK (scratch folder, default /tmp/onnxmap-gpu-check; about 2 x GIB of disk),
# GIB (checkpoint size, default 8), PYTHON (default python3), DEVICE (default cuda:0).
# About 3 minutes on a 16-core machine with a 2 GB/s disk (2026-11-27, an H100: 72 s without
# the sweep); each stage is bounded by timeout.
set -euo pipefail

BUILD=build-release
DEVICE=${DEVICE:-cuda:0}
WORK=${WORK:-/tmp/onnxmap-gpu-check}
GIB=${GIB:-8}
PYTHON=${PYTHON:-python3}
OUT=bench/gpu.md
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --host) DEVICE=host; GIB=${GIB_HOST:-0.25}; OUT=; shift ;;
    --device) DEVICE=$2; shift 2 ;;
    --bundle) BUNDLE=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--host | --device cuda:N] | --bundle DIR" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."

# --bundle DIR: the shared libraries DIR's binary and module need into DIR/carried-libs/, but
# glibc's and the C++ runtime's: torch's Python there needs its own (newer) libstdc++ first.
if [[ -n ${BUNDLE:-} ]]; then
  mkdir -p "$BUNDLE/carried-libs"
  ldd "$BUNDLE/tools/onnxmap/onnxmap" "$BUNDLE/bench/libonnxmap_gpu_check.so" |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r cp -L -t "$BUNDLE/carried-libs/"
  ls "$BUNDLE/carried-libs"
  exit 0
fi
[[ -d $BUILD/carried-libs ]] && export LD_LIBRARY_PATH=$BUILD/carried-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exe=$BUILD/tools/onnxmap/onnxmap
module=$BUILD/bench/libonnxmap_gpu_check.so
for f in "$exe" "$module"; do
  [[ -e $f ]] || { echo "gpu_check: $f is missing (build it: see this script's header)" >&2; exit 2; }
done
mkdir -p "$WORK"
[[ -n $OUT ]] || OUT=$WORK/gpu-host.md
start=$SECONDS
stage() { echo "== $* ($((SECONDS - start)) s)"; }

stage "models"
"$exe" synth "$WORK/inline.onnx" --layers 2 --hidden 256 --dtype float16 >/dev/null
"$exe" synth "$WORK/external.onnx" --layers 8 --hidden 1024 --dtype bfloat16 --external-data >/dev/null
"$exe" synth "$WORK/int4.onnx" --layers 2 --hidden 256 --dtype int4 --external-data >/dev/null
models=("$WORK/inline.onnx" "$WORK/external.onnx" "$WORK/int4.onnx")

stage "onnxmap load --device $DEVICE"
for m in "${models[@]}"; do
  timeout 60 "$exe" load "$m" --device "$DEVICE" --json
  timeout 60 "$exe" load "$m" --device "$DEVICE" --shard 1/2 --json
done >"$WORK/cli.json"
grep -c '"tensors"' "$WORK/cli.json" | sed 's/^/loads: /'

stage "correctness: device bytes against the file's"
timeout 120 "$PYTHON" bench/gpu_check.py --module "$module" --device "$DEVICE" "${models[@]}" \
  | tee "$WORK/check.jsonl" | grep -v '"ok": true' || true
tail -n 1 "$WORK/check.jsonl"
grep -q '"failures": 0' "$WORK/check.jsonl" || { echo "gpu_check: FAILED" >&2; exit 1; }

stage "bench: $GIB GiB checkpoint"
timeout 240 "$PYTHON" bench/gpu_bench.py --onnxmap "$exe" --dir "$WORK" --gib "$GIB" \
  --device "$DEVICE" --out "$OUT"
if [[ $DEVICE != host ]]; then
  stage "sweep: each path by threads, registration alone, shards at once, cold CPU"
  timeout 300 "$PYTHON" bench/gpu_sweep.py --module "$module" --onnxmap "$exe" --dir "$WORK" \
    --device "$DEVICE" --out "${OUT%.md}-sweep.md"
fi
rm -f "$WORK/ckpt.safetensors" "$WORK/ckpt.onnx"
stage "done: $OUT"
