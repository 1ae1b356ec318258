#!/usr/bin/env bash
# Runs `swift build` with the given arguments, hiding progress lines and one dependency's packaging
# warning (swift-distributed-tracing ships CMakeLists.txt files SwiftPM does not know what to do with).
# Errors and our own warnings still show; the exit status is swift build's.
set -uo pipefail
swift build "$@" 2>&1 | grep --line-buffered -v -E \
    '^\[[0-9]+/[0-9]+\] |unhandled; explicitly declare them|/checkouts/swift-distributed-tracing/.*CMakeLists\.txt$'
exit "${PIPESTATUS[0]}"
