#!/usr/bin/env bash
# Builds onnxmap and runs the whole test suite: a normal build (warnings are errors), an
# AddressSanitizer + UndefinedBehaviorSanitizer build and a ThreadSanitizer build of the threaded
# tests; checks for one-definition-rule clashes with an LTO build (tools/odr_check.sh). Exits
# non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
onnxmap_install_deps

# build_and_test DIR "MESON OPTIONS" "NINJA TARGETS" [MESON TEST ARGS...]: configures once,
# builds the targets (all when empty), runs tests.
build_and_test() {
  local dir=$1
  local options=$2
  local targets=$3
  shift 3
  if [ ! -f "$dir/build.ninja" ]; then
    # shellcheck disable=SC2086  # options are words on purpose
    meson setup "$dir" --buildtype=debugoptimized -Dwerror=true $options >/dev/null
  fi
  # shellcheck disable=SC2086
  ninja -C "$dir" --quiet $targets
  rm -f "$dir/python/tests/pytest.xml"  # the pytest report of this run only
  echo "== meson test ($dir)"
  meson test -C "$dir" --no-rebuild --print-errorlogs --num-processes 2 "$@"
}

status=0
build_and_test build-test "" "" || status=1
# Two definitions of one name in two .cpp files link silently and corrupt memory: GCC's LTO
# compares them (about 2.5 minutes on 2 cores from scratch). Counted as one test.
odr_failed=0
./tools/odr_check.sh || { status=1; odr_failed=1; }
# Sanitized builds: -Db_lundef=false is what meson needs to link with the sanitizer runtimes. The
# ASan build runs the Python suite too, with the runtime preloaded into python
# (python/tests/meson.build).
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  build_and_test build-asan "-Db_sanitize=address,undefined -Db_lundef=false" "" || status=1
# ThreadSanitizer over the tests that run threads (shared models, the parallel pass, the loaders,
# read-ahead): only their program is built.
TSAN_OPTIONS=halt_on_error=1 \
  build_and_test build-tsan "-Db_sanitize=thread -Db_lundef=false -Dbench=disabled -Dpython=disabled" \
  tests/unit_tests unit --test-args=--gtest_filter=Concurrency.*:Bulk.*:ChunkFeed.*:IndexThreads*:Load.*:ReadAhead.*:RunGuess.* || status=1

# One closing line over all runs, read from meson's JSON logs; the meson test "python" counts as
# the pytest cases its JUnit report lists.
ODR_FAILED=$odr_failed /usr/bin/python3 - build-test build-asan build-tsan <<'PY'
import json, os, sys, collections
import xml.etree.ElementTree as ET
counts = collections.Counter()
counts["FAIL" if os.environ["ODR_FAILED"] == "1" else "OK"] += 1  # tools/odr_check.sh

def add_pytest(report):
    """Adds the cases of a pytest JUnit report; returns how many failed."""
    for suite in ET.parse(report).getroot().iter("testsuite"):
        failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped = int(suite.get("skipped", 0))
        counts["OK"] += int(suite.get("tests", 0)) - failed - skipped
        counts["FAIL"] += failed
        counts["SKIP"] += skipped
        return failed

for build in sys.argv[1:]:
    try:
        with open(f"{build}/meson-logs/testlog.json") as log:
            for line in log:
                entry = json.loads(line)
                report = f"{build}/python/tests/pytest.xml"
                if entry["name"] == "python" and entry["result"] in ("OK", "FAIL"):
                    try:
                        if add_pytest(report) == 0 and entry["result"] == "FAIL":
                            counts["FAIL"] += 1  # pytest failed outside any case
                        continue
                    except (FileNotFoundError, ET.ParseError):
                        pass
                counts[entry["result"]] += 1
    except FileNotFoundError:
        counts["FAIL"] += 1
failed = sum(n for r, n in counts.items() if r not in ("OK", "SKIP", "EXPECTEDFAIL"))
print(f"tests: {counts['OK'] + counts['EXPECTEDFAIL']} passed, {failed} failed, {counts['SKIP']} skipped")
PY
exit $status
