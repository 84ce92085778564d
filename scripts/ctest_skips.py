#!/usr/bin/env python3
"""The tests a ctest run skipped, each with its reason, for the last lines
of scripts/test.sh (ctest itself ends "100% tests passed" and names a
skip without its reason).

    scripts/ctest_skips.py BUILD/ctest-junit.xml   (ctest --output-junit)

The reason is what follows "SKIP:" or "skipped:" on the test's first line
that has it (the tests that exit 77 print one), else its last line of
output, else ctest's own.
"""
import re
import sys
import xml.etree.ElementTree as ET


def reason(case):
    out = [x.strip() for x in (case.findtext("system-out") or "").splitlines() if x.strip()]
    for x in out:  # "SKIP: why", "skipped: why", "NAME: skipped: why"
        m = re.search(r"\bskip(?:ped)?:\s*(.*)", x, re.IGNORECASE)
        if m and m.group(1):
            return m.group(1)
    if out:
        return out[-1]
    sk = case.find("skipped")
    return sk.get("message", "no reason given") if sk is not None else "no reason given"


def main():
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except (OSError, ET.ParseError, IndexError) as e:
        print(f"skipped: unknown (no ctest JUnit report: {e})")
        return
    skipped = [c for c in root.iter("testcase") if c.get("status") in ("notrun", "disabled")]
    if not skipped:
        print("skipped: none")
        return
    print(f"skipped: {len(skipped)} test{'s' if len(skipped) > 1 else ''}")
    for c in skipped:
        print(f"  {c.get('name')}: {reason(c)}")


main()
