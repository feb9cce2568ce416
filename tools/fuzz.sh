#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz/) for SECONDS (default 60), two at a time, in the clang
# build with ASan and UBSan that tools/test.sh also tests (build-asan). Exits non-zero on any
# finding; a crashing input is copied to tests/fuzz/regressions/TARGET/, where the suite replays
# it: fix the bug and commit the input with the fix.
#
#   ./tools/fuzz.sh [SECONDS]          every target
#   FUZZ_TARGETS="fuzz_model" ./tools/fuzz.sh 600
#   FUZZ_FLAGS="-entropic=0" ./tools/fuzz.sh 3600   extra libFuzzer flags (long campaigns: the
#                                                  entropic scheduler costs ~40% of each run)
#
# Seeds: the onnx backend corpus in ../shared/corpus beside the checkout (skipped with a message
# when absent), the fixtures python3-onnx writes and the inputs kept in tests/fuzz/regressions/.
# Each target keeps its own growing corpus in build-asan/fuzz/corpus/TARGET between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
onnxmap_install_deps all

seconds=${1:-60}
build="build-asan"
work=$build/fuzz
# shellcheck disable=SC2206  # FUZZ_TARGETS is a list of words on purpose
targets=(${FUZZ_TARGETS:-fuzz_model fuzz_tensor fuzz_external fuzz_load_modes fuzz_save_roundtrip fuzz_view fuzz_urls fuzz_safetensors fuzz_manifest})

onnxmap_asan_setup
ninja -C "$build" --quiet "${targets[@]/#/tests/fuzz/}"

# Seed folders, made once: models and bare TensorProtos from the corpus and the fixtures.
seeds=$work/seeds
if [ ! -d "$seeds" ]; then
  mkdir -p "$seeds/fixtures" "$seeds/models" "$seeds/tensors" "$seeds/external"
  /usr/bin/python3 tests/conformance/make_fixtures.py "$seeds/fixtures" >/dev/null
  find "$seeds/fixtures" -name '*.onnx' -exec cp {} "$seeds/models/" \;
  for kept in tests/fuzz/regressions/fuzz_*/*.onnx; do
    cp "$kept" "$seeds/models/$(basename "$(dirname "$kept")")-$(basename "$kept")"
  done
  corpus=../shared/corpus/onnx-backend
  if [ -d "$corpus" ]; then
    n=0
    while IFS= read -r -d '' file; do
      n=$((n + 1))
      case $file in
        *.onnx) cp "$file" "$seeds/models/corpus-$n.onnx" ;;
        *.pb) cp "$file" "$seeds/tensors/corpus-$n.pb" ;;
      esac
    done < <(find "$corpus" -type f \( -name '*.onnx' -o -name '*.pb' \) -print0)
  else
    echo "fuzz: no onnx backend corpus at $corpus; seeding from the fixtures only" >&2
  fi
  # External-data seeds in fuzz_external's line format (see the top of its source).
  printf '!\x01\x04\x04\nlocation=data.bin\noffset=0\nlength=64\n' >"$seeds/external/whole"
  printf '!\x02\x10\nlocation=sub/inner.bin\n!\x01\x02\nlocation=data.bin\noffset=8\n' \
    >"$seeds/external/two"
  printf '!\x01\x01\nlocation=link_out\n!\x02\x03\nlocation=short.bin\n' >"$seeds/external/traps"
  printf '!\x02\x08\nlocation=hard.bin\n!\x02\x00\nlocation=dir\nlocation=fifo\n' \
    >"$seeds/external/more-traps"
fi

seeds_of() {
  case $1 in
    fuzz_model | fuzz_load_modes | fuzz_save_roundtrip | fuzz_view) echo "$seeds/models" ;;
    fuzz_tensor) echo "$seeds/tensors" ;;
    fuzz_external) echo "$seeds/external" ;;
    fuzz_urls) echo "tests/fuzz/regressions/fuzz_urls" ;;
    fuzz_safetensors) echo "tests/fuzz/regressions/fuzz_safetensors" ;;
    fuzz_manifest) echo "tests/fuzz/regressions/fuzz_manifest" ;;
  esac
}

# fuzz TARGET: runs it for $seconds; on a finding, prints what it found and keeps the input.
fuzz() {
  local target=$1
  local corpus_dir=$work/corpus/$target
  local log=$work/findings/$target.log
  mkdir -p "$corpus_dir"
  # -rss_limit_mb: memory must grow with bytes, never with what a file claims.
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of words on purpose
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    LSAN_OPTIONS=suppressions=$PWD/tools/lsan.supp \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/$target" "$corpus_dir" "$(seeds_of "$target")" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$work/findings/$target-" -print_final_stats=1 ${FUZZ_FLAGS:-} \
    >"$log" 2>&1; then
    echo "== $target for ${seconds}s: $(grep -E '^stat::number_of_executed_units' "$log" || true)"
    return 0
  fi
  echo "fuzz: $target found a problem; see $log" >&2
  grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 >&2 || true
  for input in "$work/findings/$target"-*; do
    [ -f "$input" ] || continue
    mkdir -p "tests/fuzz/regressions/$target"
    cp "$input" "tests/fuzz/regressions/$target/"
    echo "fuzz: kept $input in tests/fuzz/regressions/$target/: commit it with the fix" >&2
  done
  return 1
}

status=0
mkdir -p "$work/findings"
rm -f "$work/findings/"*
# Two at a time: one per core.
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pids=()
  for target in "${targets[@]:i:2}"; do
    fuzz "$target" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || status=1
  done
done
exit $status
