#!/usr/bin/env bash
# Installs what the build needs (once), builds everything, and runs every test.
#   Scripts/test.sh                 all tests
#   Scripts/test.sh --filter NAME   only the tests whose name matches NAME (passed to `swift test`)
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/bootstrap.sh

echo "==> swift build --build-tests"
Scripts/swift-build-quiet.sh --build-tests

echo "==> swift test"
exec swift test --skip-build "$@"
