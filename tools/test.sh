#!/usr/bin/env bash
# Builds onnxmap and runs the whole suite; exits non-zero on any failure. Four builds:
#   build-test  GCC, warnings are errors: every test (unit, CLI, conformance, interop, the install
#               consumers, Python with `pip install .`, remote, the fuzz replays); the Python
#               suite twice: with Debian's NumPy 1.24, and over the wheel `pip wheel .` builds
#               in the PyPI environment of tools/venvs/pypi.txt (NumPy 2, torch, ONNX Runtime);
#               the exporters' corpus, its Optimum part exported in the environment of
#               tools/venvs/optimum.txt
#   build-odr   GCC's link-time optimizer over the library and the command: two different
#               definitions of one name fail the build (tools/odr_check.sh)
#   build-asan  clang with AddressSanitizer, UndefinedBehaviorSanitizer and the fuzzers' coverage
#               instrumentation, unity files: the unit tests, the CLI and Python suites (the long
#               corpus sweeps on a sample) and the fuzz targets, which tools/fuzz.sh then runs
#   build-tsan  GCC with ThreadSanitizer, unity files: only the tests that start threads
# The ODR, ASan and TSan builds compile (at low priority) while the plain tests run; then the ASan
# and TSan tests run side by side. ccache keeps every compile, so a rerun compiles only what
# changed. The last lines are each phase's wall time and one closing line over all runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
onnxmap_install_deps all
# CI clones into a new folder each run: ccache may then reuse compiles made in another folder
# (their debug information names that folder, which nobody debugs in CI).
if [ -n "${CI:-}" ]; then
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
fi

logs=build-logs
mkdir -p "$logs"
rm -f "$logs"/*.seconds
declare -A failed=()

# timed NAME COMMAND...: runs COMMAND, writes its wall seconds to $logs/NAME.seconds; returns
# COMMAND's status.
timed() {
  local name=$1
  shift
  local start=$SECONDS status=0
  "$@" || status=$?
  echo $((SECONDS - start)) >"$logs/$name.seconds"
  return $status
}

# configure DIR [MESON OPTIONS...]: configures DIR once (warnings are errors).
configure() {
  local dir=$1
  shift
  [ -f "$dir/build.ninja" ] || meson setup "$dir" --buildtype=debugoptimized -Dwerror=true "$@" \
    >/dev/null
}

# run_tests DIR [MESON TEST ARGS...]: meson's tests of DIR, two at a time.
run_tests() {
  local dir=$1
  shift
  # The JUnit reports test_summary.py counts: this run's only.
  rm -f "$dir"/python/tests/pytest*.xml "$dir"/*.xml
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 "$@"
}

build_asan() {
  onnxmap_asan_setup && nice -n 10 ninja -C build-asan --quiet
}

# The TSan build compiles the library and the threaded tests' program only.
build_tsan() {
  configure build-tsan -Db_sanitize=thread -Db_lundef=false -Dunity=on -Dbench=disabled \
    -Dpython=disabled && nice -n 10 ninja -C build-tsan --quiet tests/thread_tests
}

# The ODR check and the sanitizer builds, at low priority while the plain tests run. Returns a
# bit per failed build: 1 ODR, 2 ASan, 4 TSan.
background_builds() {
  local status=0
  timed odr nice -n 10 ./tools/odr_check.sh >"$logs/odr.log" 2>&1 || status=$((status | 1))
  timed asan-build build_asan >"$logs/asan-build.log" 2>&1 || status=$((status | 2))
  timed tsan-build build_tsan >"$logs/tsan-build.log" 2>&1 || status=$((status | 4))
  return $status
}

# The PyPI environment the Python suite runs in a second time (python-pypi) and the exporters'
# corpus is made and judged in, and Optimum's environment that exports its Optimum part
# (tests/exporters/optimum_export.py): each made once per machine (2-3 minutes, mostly
# downloads), while the plain build compiles.
timed pypi-venv tools/venv.sh pypi >"$logs/pypi-venv.path" 2>"$logs/pypi-venv.log" &
pypi_venv=$!
timed optimum-venv tools/venv.sh optimum >"$logs/optimum-venv.path" 2>"$logs/optimum-venv.log" &
optimum_venv=$!

configure build-test
echo "== build (build-test)"
timed plain-build ninja -C build-test --quiet || failed[plain-build]=1

if wait $pypi_venv; then
  ONNXMAP_PYPI_VENV=$(cat "$logs/pypi-venv.path")
  export ONNXMAP_PYPI_VENV
else
  failed[pypi-venv]=1
  cat "$logs/pypi-venv.log"
fi
if wait $optimum_venv; then
  ONNXMAP_OPTIMUM_VENV=$(cat "$logs/optimum-venv.path")
  export ONNXMAP_OPTIMUM_VENV
else
  failed[optimum-venv]=1
  cat "$logs/optimum-venv.log"
fi

background_builds &
background=$!

echo "== meson test (build-test)"
timed plain-tests run_tests build-test || failed[plain-tests]=1

echo "== waiting for the ODR check and the sanitizer builds"
background_status=0
wait $background || background_status=$?
cat "$logs/odr.log"
((background_status & 1)) && failed[odr]=1
if ((background_status & 2)); then
  failed[asan-build]=1
  tail -30 "$logs/asan-build.log"
fi
if ((background_status & 4)); then
  failed[tsan-build]=1
  tail -30 "$logs/tsan-build.log"
fi

# ASan and TSan tests side by side: each runs its own process tree, output kept apart.
echo "== meson test (build-asan) and (build-tsan)"
(
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$PWD/tools/lsan.supp \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    timed asan-tests run_tests build-asan >"$logs/asan-tests.log" 2>&1
) &
asan=$!
(
  TSAN_OPTIONS=halt_on_error=1 timed tsan-tests run_tests build-tsan threads \
    >"$logs/tsan-tests.log" 2>&1
) &
tsan=$!
wait $asan || failed[asan-tests]=1
wait $tsan || failed[tsan-tests]=1
cat "$logs/asan-tests.log" "$logs/tsan-tests.log"

echo "== wall time per phase (the ODR and sanitizer builds overlap the plain tests)"
for phase in pypi-venv optimum-venv plain-build plain-tests odr asan-build tsan-build asan-tests \
  tsan-tests; do
  seconds=$(cat "$logs/$phase.seconds" 2>/dev/null || echo "?")
  printf '  %-12s %5s s%s\n' "$phase" "$seconds" "${failed[$phase]:+  FAILED}"
done
echo "  total        $SECONDS s"

# One closing line over all runs, read from meson's JSON logs; the meson test "python" counts as
# the pytest cases its JUnit report lists; the ODR check counts as one test.
ODR_FAILED=${failed[odr]:-0} /usr/bin/python3 tools/test_summary.py build-test build-asan build-tsan
[ ${#failed[@]} -eq 0 ]
