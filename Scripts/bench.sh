#!/usr/bin/env bash
# Runs the benchmarks in Scripts/bench/: Scripts/bench.sh [NAME...] runs Scripts/bench/NAME.sh for each
# name (default: every one present), after installing the benchmark anchors and building the release
# binaries once. Benchmarks are not tests: they print figures and ratios against anchors measured in the
# same run.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: Scripts/bench.sh [OPTIONS] [NAME...]

Runs Scripts/bench/NAME.sh for each NAME (default: all of them) and prints a header per benchmark.

Options:
  --list           list the available benchmarks and exit
  --no-bootstrap   do not run Scripts/bootstrap.sh --with-bench first
  --no-build       do not build; use ATTACHE_BIN and ATTACHE_SERVER_BIN from the environment
  -h, --help       show this help

Exported to every benchmark:
  ATTACHE_BIN, ATTACHE_SERVER_BIN   release binaries of attache and attache-server
  ATTACHE_ROOT                      the repository root
  ATTACHE_BENCH_DRIVERS             the release folder of Scripts/Benchmarks (the library's drivers)
Common knobs (read by the benchmarks that use them): RUNS (repetitions, default 5);
ATTACHE_BASELINE_BIN=DIR (nginx-upload, nginx-batch: also run DIR/attache, another build, and print
the ratio).

Exit status: 0 when every benchmark succeeded, otherwise the status of the first one that failed
(64 for bad usage).
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
bench_dir="$root/Scripts/bench"

available() {
    local f
    for f in "$bench_dir"/*.sh; do
        [[ -e "$f" ]] || continue
        f=${f##*/}
        [[ "$f" == lib.sh ]] && continue
        printf '%s\n' "${f%.sh}"
    done
}

bootstrap=1
build=1
names=()
for arg in "$@"; do
    case "$arg" in
        --list) available; exit 0 ;;
        --no-bootstrap) bootstrap=0 ;;
        --no-build) build=0 ;;
        -h | --help) usage; exit 0 ;;
        -*) printf 'bench: unknown option: %s\n' "$arg" >&2; usage >&2; exit 64 ;;
        *) names+=("${arg%.sh}") ;;
    esac
done

mapfile -t all < <(available)
((${#names[@]} > 0)) || names=("${all[@]}")
((${#names[@]} > 0)) || { printf 'bench: no benchmarks in Scripts/bench/\n' >&2; exit 1; }
for name in "${names[@]}"; do
    if [[ "$name" == lib || ! -f "$bench_dir/$name.sh" ]]; then
        printf 'bench: no benchmark named "%s"; available: %s\n' "$name" "${all[*]:-none}" >&2
        exit 64
    fi
done

if ((bootstrap)); then
    # Prebuilt binaries need no toolchain, so --no-build does not insist on one.
    if ((build)); then
        "$root/Scripts/bootstrap.sh" --with-bench
    else
        "$root/Scripts/bootstrap.sh" --with-bench --no-swift-check
    fi
fi

export ATTACHE_ROOT="$root"
if ((build)); then
    # The client is linked with the Swift runtime and Foundation statically, as for deployment: the
    # binaries are self-contained and map ~12 MB less of shared libraries. The library's drivers
    # (attache-request-bench for Scripts/bench/requests.sh, attache-send-many-bench for
    # Scripts/bench/send-many.sh) are a package of their own, Scripts/Benchmarks, which depends on this
    # checkout by path and is not part of the product. The reference server is built the ordinary way in
    # its own build folder (its memory is not measured).
    for product in attache; do
        printf 'bench: swift build -c release --static-swift-stdlib --product %s\n' "$product"
        (cd "$root" && swift build -c release --static-swift-stdlib --product "$product") \
            || { printf 'bench: error: release build of %s failed\n' "$product" >&2; exit 1; }
    done
    printf 'bench: swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks\n'
    (cd "$root" && swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks) \
        || { printf 'bench: error: release build of Scripts/Benchmarks failed\n' >&2; exit 1; }
    ATTACHE_BENCH_DRIVERS=$(cd "$root" && swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks --show-bin-path)
    export ATTACHE_BENCH_DRIVERS
    printf 'bench: swift build -c release --scratch-path .build-server --product attache-server\n'
    (cd "$root" && swift build -c release --scratch-path .build-server --product attache-server) \
        || { printf 'bench: error: release build of attache-server failed\n' >&2; exit 1; }
    bin_path=$(cd "$root" && swift build -c release --static-swift-stdlib --show-bin-path)
    export ATTACHE_BIN="$bin_path/attache"
    export ATTACHE_SERVER_BIN="$(cd "$root" && swift build -c release --scratch-path .build-server --show-bin-path)/attache-server"
fi
for var in ATTACHE_BIN ATTACHE_SERVER_BIN; do
    if [[ -z "${!var:-}" ]]; then
        printf 'bench: warning: %s is not set; benchmarks that need it will fail\n' "$var" >&2
    elif [[ ! -x "${!var}" ]]; then
        printf 'bench: warning: %s=%s is not executable\n' "$var" "${!var}" >&2
    fi
done

first_failure=0
summary=()
for name in "${names[@]}"; do
    printf '\n=== %s ===  (%s, %s cores, %s)\n' "$name" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)" \
        "$(uname -sr)"
    if bash "$bench_dir/$name.sh"; then
        summary+=("$name: ok")
    else
        status=$?
        summary+=("$name: failed (exit $status)")
        ((first_failure != 0)) || first_failure=$status
    fi
done

printf '\n=== summary ===\n'
printf '%s\n' "${summary[@]}"
exit "$first_failure"
