#!/usr/bin/env bash
# Runs `swift build` with the given arguments, hiding progress lines, one dependency's packaging
# warning (swift-distributed-tracing ships CMakeLists.txt files SwiftPM does not know what to do with)
# and the linker's notes on the fully static `attache` executable (glibc functions inside libcrypto.a
# and the Swift runtime that it never calls there: getaddrinfo, dlopen, mktemp), and the two lines the
# driver prints for every module compiled whole (`-wmo`, as Scripts/test.sh builds): batch mode and
# incremental compilation do not apply to a whole-module compile.
# Errors and our own warnings still show; the exit status is swift build's.
# `swift-build-quiet.sh test ARGS...` runs `swift test ARGS...` (which builds first) the same way; the
# tests' own output passes through unchanged.
set -uo pipefail
command=build
if [[ "${1:-}" == "test" ]]; then
    command=test
    shift
fi
swift "$command" "$@" 2>&1 | grep --line-buffered -v -E \
    '^\[[0-9]+/[0-9]+\] |unhandled; explicitly declare them|/checkouts/swift-distributed-tracing/.*CMakeLists\.txt$|in statically linked applications requires at runtime|the use of .mktemp. is dangerous|ignoring .-enable-batch-mode. because .-whole-module-optimization.|Incremental compilation has been disabled: it is not compatible with whole module'
exit "${PIPESTATUS[0]}"
