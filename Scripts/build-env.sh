# Sourced by Scripts/test.sh and Scripts/demo.sh: the flags of the debug build and the environment
# every SwiftPM command of theirs runs with. The two are the same on purpose: SwiftPM rebuilds a module
# whose command line changed, and compiles the manifests of all 30-odd packages again for a command
# whose environment differs (10-15 s), so the demo and the tests, run one after the other as the
# README says, build the package once between them. Defines `swiftpm_flags` (an array) and `triple`.

# SwiftPM passes a package's enabled traits to the compiler in the iteration order of a Set, which
# changes from one run to the next under Swift's per-process random hashing; a changed command line
# recompiles the module (Hummingbird, with two default traits) and everything that depends on it. A
# fixed seed keeps the order, so the example package's build and the test's own find everything built.
export SWIFT_DETERMINISTIC_HASHING=1

# No debug information (DWARF) and no index store in this build. Emitting DWARF was about a
# fifth of a cold build's time (689 s against 567 s on two cores), and indexing while building
# (SwiftPM's default for debug builds, for editors) about a fifth of what was left (531 s against
# 431 s); nothing in a test run reads either. A failure names its file and line from the test's
# own source locations, a crash its functions from the symbol table. Every SwiftPM command of test.sh
# and demo.sh (and docs.sh, and the example package's test, through ATTACHE_SWIFTPM_FLAGS) passes the
# same flags, so each finds this build up to date. To debug in lldb or to index for an editor, build
# as usual (`swift build --build-tests`). The executables and the test bundle are linked with LLVM's
# lld, which the Swift toolchain ships: 1.5 s against GNU gold's 3.6 s for the test bundle, on the
# build's critical path.
#
# Each module is compiled whole (`-wmo`, still at -Onone: nothing is optimized): one compiler process
# type-checks all of a module's files once, where the default batch mode gave each module two or
# more processes that each parsed every file and loaded every imported module again, plus one more
# process that type-checked the declarations to write the module's interface. A cold build of the
# package and its tests took 442-456 s against 544 s on two cores (the code generation of a module
# still runs on two threads, `-num-threads 2`, which also gives SwiftPM the one object per file it
# links). The price is incremental compilation: after an edit, the script compiles the edited
# module whole again (half a minute for the largest); a plain `swift build` is unchanged.
export ATTACHE_SWIFTPM_FLAGS="-debug-info-format none --disable-index-store -Xswiftc -use-ld=lld -Xswiftc -wmo -Xswiftc -num-threads -Xswiftc 2 -Xswiftc -no-emit-module-separately-wmo"
read -r -a swiftpm_flags <<<"$ATTACHE_SWIFTPM_FLAGS"
# Every variable the SwiftPM commands see is set here, before the first of them: SwiftPM
# keys its cache of compiled package manifests by the whole environment, and a command that runs
# with one variable more compiles the manifests of all 30-odd packages again (10-15 s each time).
#
# SwiftPM finds the tests on Linux by reading the test targets' index units; Package.swift gives
# the test targets alone an index store at this path (the one SwiftPM reads: the bin path, which
# `swift build --show-bin-path` prints) when it is set.
triple=$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["unversionedTriple"])')
export ATTACHE_TEST_INDEX_STORE="$PWD/.build/$triple/debug/index/store"
# The library modules write their public symbol graphs while they compile, for Scripts/docs.sh.
export ATTACHE_SYMBOL_GRAPH_DIR="$PWD/.build/symbol-graphs"
mkdir -p "$ATTACHE_SYMBOL_GRAPH_DIR"
# ExamplePackageTests builds the example package itself unless test.sh has (it does, before the tests).
export ATTACHE_EXAMPLE_PACKAGE_BUILT=1
# At most 12 tests at a time (Swift Testing otherwise starts every test at once): on two cores, a
# few hundred live tests, each with its own server processes, starved one another until a dozen
# of them failed on time in one run. With 8, the cores were idle a tenth of the time while tests
# waited on their servers and timeouts (the test phase 351 s, against 309 s with 12 and the cores
# busy throughout). SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH is Swift Testing's own setting;
# set it to change the width.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-12}"
