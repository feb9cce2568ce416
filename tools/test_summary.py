#!/usr/bin/python3
"""The closing line of tools/test.sh, `tests: N passed, N failed, N skipped`, over the meson test
logs of the builds it names. The meson test "python" counts as the pytest cases of its JUnit
report; a build without a log counts as one failure; ODR_FAILED=1 counts the ODR check as failed
(it is one test either way).

    test_summary.py BUILD_DIR...
"""
import json, os, sys, collections
import xml.etree.ElementTree as ET
counts = collections.Counter()
counts["FAIL" if os.environ.get("ODR_FAILED") == "1" else "OK"] += 1  # tools/odr_check.sh

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
