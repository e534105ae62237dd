#!/usr/bin/env python3
"""The skip gate: fails when a `swift test` run skipped a test or suite it was not expected to.

    scripts/check-skips.py OUTPUT [--expect NAME ...]

OUTPUT is the run's console output (scripts/test.sh tees it to .build/test-output.txt). A test
is skipped when its `.enabled(if:)` condition is false (a tool that is not installed, an
environment variable that is not set, a binary that was not built) or when an XCTest calls
XCTSkip; Swift Testing prints `➜ Test NAME skipped` / `➜ Suite NAME skipped`, XCTest
`Test Case 'NAME' skipped`. Every skip must be named with --expect (a test that is meant to skip
in this run); anything else fails the gate with the names and the reasons printed, so that a
feature can never pass CI by its tests quietly not running. A run with no summary line at all
also fails (the output is not a test run's).
"""
import re
import sys


def skipped(text):
    """(name, reason) of every skipped test and suite in a run's output, in order."""
    found = []
    for line in text.splitlines():
        m = re.search(r"➜ (?:Test|Suite) (.+?) skipped(?:: (.*))?\.?$", line)
        if m:
            found.append((m.group(1), (m.group(2) or "").strip('"')))
            continue
        m = re.search(r"Test Case '(.+?)' skipped", line)
        if m:
            found.append((m.group(1), "XCTSkip"))
    return found


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, rest = argv[0], argv[1:]
    expected = set()
    while rest:
        if rest[0] != "--expect" or len(rest) < 2:
            print(f"check-skips: unexpected argument {rest[0]!r}", file=sys.stderr)
            return 2
        expected.add(rest[1])
        rest = rest[2:]
    text = open(path, encoding="utf-8", errors="replace").read()
    if not re.search(r"Test run with \d+ tests?|Executed \d+ tests?", text):
        print(f"check-skips: {path} holds no test run's summary", file=sys.stderr)
        return 1
    found = skipped(text)
    unexpected = [(n, r) for n, r in found if n not in expected]
    print(f"check-skips: {len(found)} skipped in {path} ({len(found) - len(unexpected)} expected: {', '.join(sorted(expected)) or 'none'})")
    if unexpected:
        print(f"check-skips: {len(unexpected)} test(s) or suite(s) skipped that this run must run:", file=sys.stderr)
        for n, r in unexpected:
            print(f"  {n}" + (f" — {r}" if r else ""), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
