#!/usr/bin/python3
"""The closing line of tools/test.sh, `tests: N passed, N failed, N skipped`, over the meson test
logs of the builds it names. A meson test that wrote a JUnit report in this run counts as the
cases the report lists: the report a pytest run names with --junitxml=PATH (the pytest suite
"python" and every script test of tests/meson.build), or else BUILD/NAME.xml, where meson has a
GoogleTest program ("unit", "threads") write it. A report older than the test's start is another
run's, and is not read. A build without a log counts as one failure; ODR_FAILED=1 counts the ODR
check as failed (it is one test either way).

    test_summary.py BUILD_DIR...
"""
import collections
import json
import os
import pathlib
import sys
import xml.etree.ElementTree as ET

# The report a pytest run names on its command line; meson adds the GoogleTest flag itself, out
# of the logged command, with the report BUILD/NAME.xml.
JUNIT_FLAG = "--junitxml="


def junit_counts(report):
    """(passed, failed, skipped) over every test suite of a JUnit report."""
    passed = failed = skipped = 0
    for suite in ET.parse(report).getroot().iter("testsuite"):
        bad = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skip = int(suite.get("skipped", 0)) + int(suite.get("disabled", 0))
        passed += int(suite.get("tests", 0)) - bad - skip
        failed += bad
        skipped += skip
    return passed, failed, skipped


def report_of(build, entry):
    """The JUnit report the test of this testlog.json entry wrote in its run, or None."""
    flagged = [arg[len(JUNIT_FLAG):] for arg in entry.get("command") or []
               if arg.startswith(JUNIT_FLAG)]
    report = build / (flagged[0] if flagged else f"{entry['name']}.xml")  # absolute stays so
    if report.is_file() and report.stat().st_mtime >= entry.get("starttime", 0) - 1:
        return report
    return None


def main():
    counts = collections.Counter()
    counts["FAIL" if os.environ.get("ODR_FAILED") == "1" else "OK"] += 1  # tools/odr_check.sh
    for build in map(pathlib.Path, sys.argv[1:]):
        log = build / "meson-logs" / "testlog.json"
        if not log.is_file():
            counts["FAIL"] += 1
            continue
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            report = report_of(build, entry)
            if entry["result"] in ("OK", "FAIL", "SKIP") and report is not None:
                try:
                    passed, failed, skipped = junit_counts(report)
                except ET.ParseError:
                    counts[entry["result"]] += 1
                    continue
                counts["OK"] += passed
                counts["SKIP"] += skipped
                # A run that failed outside any case (a crash, a collection error) is one failure.
                counts["FAIL"] += failed or (1 if entry["result"] == "FAIL" else 0)
                continue
            counts[entry["result"]] += 1
    failed = sum(n for result, n in counts.items() if result not in ("OK", "SKIP", "EXPECTEDFAIL"))
    print(f"tests: {counts['OK'] + counts['EXPECTEDFAIL']} passed, {failed} failed, "
          f"{counts['SKIP']} skipped")


if __name__ == "__main__":
    main()
