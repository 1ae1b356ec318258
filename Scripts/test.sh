#!/usr/bin/env bash
# Installs what the build needs (once), builds everything, and runs every test.
#   Scripts/test.sh                 all tests
#   Scripts/test.sh --filter NAME   only the tests whose name matches NAME (passed to `swift test`)
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/bootstrap.sh

echo "==> swift build --build-tests"
# Progress lines and a dependency's packaging warning are noise in CI logs; errors still show.
set +o pipefail
swift build --build-tests 2>&1 | grep --line-buffered -v -E "^\[[0-9]+/[0-9]+\] |unhandled; explicitly declare them"
status=${PIPESTATUS[0]}
set -o pipefail
[ "$status" -eq 0 ] || { echo "build failed (exit $status)" >&2; exit "$status"; }

echo "==> swift test"
exec swift test --skip-build "$@"
