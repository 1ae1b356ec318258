#!/usr/bin/env python3
"""Reads the xUnit files `swift test --xunit-output FILE` writes (FILE for XCTest, its `-swift-testing`
sibling for Swift Testing), prints how many test cases ran, failed and were skipped, names each failed
and skipped one, and exits 1 when any failed or was skipped, or when none ran at all.

A full run must run every test: a skip is a test that did not test (a missing server, a condition the
machine does not meet), and it fails the run as a failure does. Nothing is run a second time.

    test-report.py XUNIT_FILE...
"""
import os
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    ran, failed, skipped = 0, [], []
    for path in sys.argv[1:]:
        if not os.path.exists(path):
            continue
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}/{case.get('name', '')}"
            ran += 1
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(name)
            elif case.find("skipped") is not None:
                skipped.append(name)
    for name in failed:
        print(f"test-report: failed: {name}", file=sys.stderr)
    for name in skipped:
        print(f"test-report: skipped: {name}", file=sys.stderr)
    print(f"test-report: {ran} test cases, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed or skipped or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
