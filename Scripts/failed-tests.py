#!/usr/bin/env python3
"""Prints a `swift test --filter` pattern that selects exactly the test cases that failed, from the xUnit
files `swift test --xunit-output FILE` writes (FILE for XCTest, FILE's `-swift-testing` sibling for Swift
Testing), and exits 0; exits 1 when no failed case is named (a crash, a build error: nothing to run again)
or when more than MAX cases failed (a real breakage, not a test starved of the two cores).

    failed-tests.py MAX XUNIT_FILE...
"""
import os
import re
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    limit, paths = int(sys.argv[1]), sys.argv[2:]
    failed = []
    for path in paths:
        if not os.path.exists(path):
            continue
        for case in ElementTree.parse(path).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                name = f"{case.get('classname', '')}/{case.get('name', '')}"
                if name not in failed:
                    failed.append(name)
    if not failed or len(failed) > limit:
        for name in failed:
            print(name, file=sys.stderr)
        return 1
    # A test's id goes on after its name (its source location), so the pattern is anchored at the start only.
    print("|".join("^" + re.escape(name) for name in failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
