#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, ASan and UBSan, and runs each for SECONDS
# (default 60). Exits non-zero on any finding; a crashing input is left in build-fuzz/findings/.
#
#   ./tools/fuzz.sh [SECONDS]          every target
#   FUZZ_TARGETS="fuzz_model" ./tools/fuzz.sh 600
#   FUZZ_FLAGS="-entropic=0" ./tools/fuzz.sh 3600   extra libFuzzer flags (long campaigns: the
#                                                  entropic scheduler costs ~40% of each run)
#
# Seeds: the onnx backend corpus in ../shared/corpus beside the checkout (skipped with a message
# when absent), the fixtures python3-onnx writes and the inputs kept in tests/fuzz/regressions/.
# Each target keeps its own growing corpus in build-fuzz/corpus/TARGET between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
onnxmap_install_deps

seconds=${1:-60}
build="build-fuzz"
# shellcheck disable=SC2206  # FUZZ_TARGETS is a list of words on purpose
targets=(${FUZZ_TARGETS:-fuzz_model fuzz_tensor fuzz_external fuzz_load_modes fuzz_save_roundtrip})

if [ ! -f "$build/build.ninja" ]; then
  # Only the fuzz targets are built here; the test suite has its own builds (tools/test.sh).
  CXX=clang++ meson setup "$build" --buildtype=debugoptimized -Dfuzz=enabled -Dtests=disabled \
    -Dbench=disabled -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$build" --quiet "${targets[@]/#/tests/fuzz/}"

# Seed folders, made once: models and bare TensorProtos from the corpus and the fixtures.
seeds=$build/seeds
if [ ! -d "$seeds" ]; then
  mkdir -p "$seeds/fixtures" "$seeds/models" "$seeds/tensors" "$seeds/external"
  /usr/bin/python3 tests/conformance/make_fixtures.py "$seeds/fixtures" >/dev/null
  find "$seeds/fixtures" -name '*.onnx' -exec cp {} "$seeds/models/" \;
  cp tests/fuzz/regressions/fuzz_save_roundtrip/*.onnx "$seeds/models/"
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
    fuzz_model | fuzz_load_modes | fuzz_save_roundtrip) echo "$seeds/models" ;;
    fuzz_tensor) echo "$seeds/tensors" ;;
    fuzz_external) echo "$seeds/external" ;;
  esac
}

status=0
mkdir -p "$build/findings"
for target in "${targets[@]}"; do
  corpus_dir=$build/corpus/$target
  mkdir -p "$corpus_dir"
  log=$build/findings/$target.log
  echo "== $target for ${seconds}s"
  # -rss_limit_mb: memory must grow with bytes, never with what a file claims.
  # shellcheck disable=SC2086  # FUZZ_FLAGS is a list of words on purpose
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/$target" "$corpus_dir" "$(seeds_of "$target")" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$build/findings/$target-" -print_final_stats=1 ${FUZZ_FLAGS:-} \
    >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units' "$log" | sed "s/^/  /" || true
  else
    echo "fuzz: $target found a problem; see $log and $build/findings/$target-*" >&2
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -5 >&2 || true
    status=1
  fi
done
exit $status
