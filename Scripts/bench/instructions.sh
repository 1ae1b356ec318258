#!/usr/bin/env bash
# What the telemetry hooks cost a library user who bootstraps nothing, counted in instructions: this build
# against BASELINE_BIN, the same source with the hooks taken out (Scripts/bench/telemetry-bypass.py),
# both with no metrics or tracing backend. Rows observability.base.batch-instructions and
# .requests-instructions of Scripts/bench/thresholds.tsv (this / baseline <= 1.01).
#   batch      `attache batch` of FILES small files to attache-server, as observability.sh (a)
#   requests   COUNT JSON POSTs through one RequestClient (attache-request-bench), to nginx's /answer200
# Instructions, not time: the machine's noise scatters CPU seconds by more than the 1 % this measures.
# perf(1) would count them in hardware where the CPU exposes a counter; a virtual machine often does not
# (`perf stat -e instructions:u` says `<not supported>`), so this counts with valgrind's callgrind, whose
# count is exact and the same every run, at about 50 times the run's time (one run of each is enough).
#
# Environment:
#   BASELINE_BIN, BASELINE_REQUEST_BENCH_BIN   required: the bypass build's attache and request driver
#   ATTACHE_BIN, ATTACHE_SERVER_BIN, ATTACHE_BENCH_DRIVERS   this build (Scripts/bench.sh exports them)
#   FILES=2000   COUNT=5000   PARTS="batch requests"   BENCH_TMPDIR=/var/tmp
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

files=${FILES:-2000}
count=${COUNT:-5000}
parts=" ${PARTS:-batch requests} "
bench_positive files count
command -v valgrind >/dev/null || bench_die "valgrind not found (Scripts/bootstrap.sh --with-bench installs it)"
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] || bench_die "ATTACHE_BIN is not set to an executable"
[[ -n "${BASELINE_BIN:-}" && -x "$BASELINE_BIN" ]] || bench_die "BASELINE_BIN must name the bypass build's attache"
driver=${ATTACHE_REQUEST_BENCH_BIN:-${ATTACHE_BENCH_DRIVERS:-$(dirname "$ATTACHE_BIN")}/attache-request-bench}
base_driver=${BASELINE_REQUEST_BENCH_BIN:-$(dirname "$BASELINE_BIN")/attache-request-bench}
if [[ $parts == *" requests "* ]]; then
    [[ -x "$driver" ]] || bench_die "$driver not found (ATTACHE_REQUEST_BENCH_BIN)"
    [[ -x "$base_driver" ]] || bench_die "$base_driver not found (BASELINE_REQUEST_BENCH_BIN)"
fi

tmp_parent=${BENCH_TMPDIR:-/var/tmp}
mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-instructions.XXXXXX")
bench_on_exit "rm -rf '$work'"

# Instructions of one run under callgrind. valgrind cannot read the debug information the Swift compiler
# writes, so each binary is counted as a copy without it (the same code).
count_instructions() { # label, binary, arguments...
    local label=$1 binary=$2
    shift 2
    strip --strip-debug -o "$work/$label.bin" "$binary"
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/$label.bin" "$@" >/dev/null 2>"$work/$label.err" \
        || { tail -n 20 "$work/$label.err" >&2; bench_die "$label failed under callgrind"; }
    awk '/Collected :/ { print $NF }' "$work/$label.err"
}

checks=()
report() { # label, this, baseline, row
    local ratio
    ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.4f", a / b }')
    printf '%-44s %16s %16s %8s\n' "$1" "$2" "$3" "$ratio"
    checks+=("$(bench_check "$4" "$ratio")")
}

printf 'Instructions (callgrind), nothing bootstrapped: this build against the hooks taken out\n\n'
printf '%-44s %16s %16s %8s\n' measure this baseline ratio
if [[ $parts == *" batch "* ]]; then
    bench_start_server "$work/store" >/dev/null
    mkdir -p "$work/files"
    for ((i = 0; i < files; i++)); do printf 'attache observability bench, file %d\n' "$i" >"$work/files/f$i.txt"; done
    batch() { # label, binary
        find "$work/store" -mindepth 1 ! -type d -delete
        rm -f "$work/journal.sqlite"*
        count_instructions "$1" "$2" batch "$work/files" --url "$BENCH_URL/upload" --journal "$work/journal.sqlite" \
            --concurrency 8 --no-progress
    }
    this=$(batch batch-this "$ATTACHE_BIN")
    base=$(batch batch-base "$BASELINE_BIN")
    report "batch of $files small files" "$this" "$base" observability.base.batch-instructions
fi
if [[ $parts == *" requests "* ]]; then
    bench_start_nginx "$work/nginx" >/dev/null
    url=${BENCH_NGINX_HTTP%/upload}/answer200
    this=$(count_instructions requests-this "$driver" "$url" "$count" 8 200)
    base=$(count_instructions requests-base "$base_driver" "$url" "$count" 8 200)
    report "$count RequestClient POSTs" "$this" "$base" observability.base.requests-instructions
fi
printf '\n'
status=0
for line in "${checks[@]}"; do
    printf '%s\n' "$line"
    [[ $line != FAIL* ]] || status=1
done
exit "$status"
