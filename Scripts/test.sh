#!/usr/bin/env bash
# Installs what the build needs (once), builds everything, and runs every test.
#   Scripts/test.sh                        all tests, then the documentation (Scripts/docs.sh)
#   Scripts/test.sh --filter NAME          only the tests whose name matches NAME (passed to `swift test`)
#   Scripts/test.sh --sanitize address     the same under AddressSanitizer (debug build in .build-asan)
#   Scripts/test.sh --sanitize thread      the same under ThreadSanitizer (debug build in .build-tsan)
# Other options go to `swift test` as they are (--filter, --skip, --parallel, ...).
# docs/RELIABILITY.md says what the sanitized runs cover, what they leave out and why, and how long they take.
set -euo pipefail
cd "$(dirname "$0")/.."

sanitizer=""
test_args=()
while (($#)); do
    case "$1" in
        --sanitize) sanitizer="${2:?--sanitize needs address or thread}"; shift 2 ;;
        --sanitize=*) sanitizer="${1#--sanitize=}"; shift ;;
        *) test_args+=("$1"); shift ;;
    esac
done

Scripts/bootstrap.sh

# A fixed order of the packages' traits on the compiler's command lines, for the sanitized builds too
# (Scripts/build-env.sh says why).
export SWIFT_DETERMINISTIC_HASHING=1

if [[ -z "$sanitizer" ]]; then
    # The build's flags and environment (no debug information, no index store, each module compiled
    # whole, 12 tests at a time): Scripts/build-env.sh says why, and Scripts/demo.sh uses the same.
    . Scripts/build-env.sh

    # The example packages depend on Attache the way the README says; ExamplePackageTests builds and runs
    # them. Built first: each SwiftPM command on another root package compiles the dependencies' package
    # plugins again (about 10 s), so this package's build and its tests come last, one after the other.
    #
    # Samples/Examples uses the `Attache` library alone and asks for none of Attache's traits, so it
    # resolves no GRDB, PostgresNIO or SwiftNIO. It has a build folder of its own (.build/examples):
    # without the traits, Attache's modules are compiled with other flags (SwiftPM passes each enabled
    # trait to every module of the package as a -D flag), so in this package's .build each of the two
    # builds would compile them, and everything that imports them, again. Its first build compiles
    # Attache and the few small packages it depends on; later ones find them up to date.
    echo "==> swift build --package-path Samples/Examples --scratch-path .build/examples $ATTACHE_SWIFTPM_FLAGS"
    # --disable-build-manifest-caching: the cached plan of an earlier build does not list a source file
    # added to Attache since, and the build then fails to find its types.
    Scripts/swift-build-quiet.sh --package-path Samples/Examples --scratch-path "$PWD/.build/examples" "${swiftpm_flags[@]}" \
        --disable-build-manifest-caching

    # Samples/Backend (the journaled batch, a Hummingbird gateway) takes Attache's default traits and is
    # built into this package's own .build: the modules it shares with this package (Attache and its
    # dependencies, GRDB, SwiftNIO, Hummingbird) are then compiled once, not twice, and only its two
    # programs are new (25 s against 9 min on two cores for a scratch path of its own).
    # --disable-build-manifest-caching: with a build plan of this package cached in .build (after
    # Scripts/demo.sh, which builds with the same flags), SwiftPM took that plan for the example
    # package's too, reported the build complete and made neither of its programs.
    echo "==> swift build --package-path Samples/Backend --scratch-path .build $ATTACHE_SWIFTPM_FLAGS"
    Scripts/swift-build-quiet.sh --package-path Samples/Backend --scratch-path "$PWD/.build" "${swiftpm_flags[@]}" \
        --disable-build-manifest-caching

    # One run, every test in parallel (Swift Testing's default). What made parallel runs fail before
    # was the reference server sharing the test process's cooperative pool with CPU-bound tests: live
    # tests now start `attache-server` as a process of its own (Tests/AttacheTestSupport), and no test
    # waits on a wall-clock deadline shorter than 30 s (docs/RELIABILITY.md).
    #
    # `swift test` builds the package and its tests itself. With a `swift build --build-tests` before
    # it, SwiftPM planned the build twice (it keeps the plan of the last command's parameters only, and
    # the two commands' differ): 6-15 s more.
    #
    # --disable-build-manifest-caching: the build of Samples/Backend just before leaves its plan in the
    # same .build, and `swift test` took that plan for this package's when the Backend build had
    # planned anew (a source file changed): it built nothing and found no tests.
    echo "==> swift test: build $ATTACHE_SWIFTPM_FLAGS, then every test (at most $SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH at a time)"
    swiftpm_flags+=(--disable-build-manifest-caching)
    if ((${#test_args[@]} > 0)); then
        Scripts/swift-build-quiet.sh test "${swiftpm_flags[@]}" "${test_args[@]}"
    else
        # One run, and it must pass as it is: a test that fails is not run a second time (a flake is a
        # bug, in the product or in the test, and a second run would hide which). The report counts the
        # test cases, and a skipped one fails the run too: the bootstrap installs every server the tests
        # need, so a skip means a test that did not test.
        results=$(mktemp -d)
        trap 'rm -rf "$results"' EXIT
        status=0
        Scripts/swift-build-quiet.sh test "${swiftpm_flags[@]}" --xunit-output "$results/tests.xml" || status=$?
        python3 Scripts/test-report.py "$results/tests.xml" "$results/tests-swift-testing.xml" || status=1
        ((status == 0)) || { echo "test.sh: the test run failed (see above)" >&2; exit 1; }
    fi
    [[ -d "$PWD/.build/$triple/debug/index/store" ]] || { echo "test.sh: no index store at $ATTACHE_TEST_INDEX_STORE" >&2; exit 1; }

    # The whole run (no --filter) also builds the DocC site and checks that every public symbol of the
    # library has a doc comment.
    if ((${#test_args[@]} == 0)); then
        Scripts/docs.sh
    fi
    exit 0
fi

case "$sanitizer" in
    address) scratch=.build-asan ;;
    thread) scratch=.build-tsan ;;
    *) printf 'test.sh: --sanitize takes address or thread, not %s\n' "$sanitizer" >&2; exit 64 ;;
esac

# A debug build of everything, instrumented, in its own scratch path so the normal build is never
# rebuilt. lld, because GNU gold crashes in its own error reporting on instrumented objects.
build=(--scratch-path "$scratch" --sanitize="$sanitizer" -Xswiftc -use-ld=lld)
suppressions="$PWD/Scripts/sanitizers"
# halt_on_error: the first report fails the run, with the report on stderr. Each suppression file
# says why each of its entries is there.
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=0:suppressions=$suppressions/asan.supp}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$suppressions/tsan.supp}"

# Tests left out of sanitized runs, by name (docs/RELIABILITY.md):
# - aConsumerThatStopsReadingStopsTheRunWithABoundedBuffer waits for the run to stop within a wall-clock
#   deadline that the instrumented build misses;
# - four live upload tests (UploadIntegrationTests) retry 4 times within 20-200 ms while the instrumented server still
#   holds the first attempt's idempotency key ("409 upload with this key in progress"), and give up;
#   stallTimeout counts attempts against a 1 s stall timeout that the instrumented build trips an extra time.
skip='aConsumerThatStopsReadingStopsTheRunWithABoundedBuffer'
skip+="|UploadIntegrationTests/(storesExactBytes|droppedConnectionIsRetried|progressIsMonotonic|concurrentUploads|stallTimeout)"

echo "==> swift build --build-tests --sanitize=$sanitizer (scratch path $scratch)"
Scripts/swift-build-quiet.sh "${build[@]}" --build-tests

echo "==> swift test --sanitize=$sanitizer (skipping: $skip)"
exec swift test --skip-build "${build[@]}" --skip "$skip" ${test_args[@]+"${test_args[@]}"}
