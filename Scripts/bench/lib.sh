# Shared functions for the benchmark scripts in Scripts/bench/. Source it, do not run it:
#   . "$(dirname "$0")/lib.sh"
#
# Functions:
#   bench_median N...                 median of the numbers (mean of the middle two for an even count)
#   bench_peak_rss_kb CMD...          run CMD, print its peak RSS in KiB; returns CMD's exit status
#   bench_measure CMD...              run CMD, print "SECONDS PEAK_RSS_KIB"; returns CMD's exit status
#                                     (both send CMD's stdout to $BENCH_STDOUT, default /dev/null, so
#                                     only the figures reach the caller; CMD's stderr is left alone)
#   bench_ratio A B                   A/B with two decimals ("n/a" when B is zero or empty)
#   bench_free_port                   a TCP port on 127.0.0.1 that nothing listens on right now
#   bench_start_server STORE [ARG...] start $ATTACHE_SERVER_BIN on port 0, export BENCH_URL and
#                                     BENCH_SERVER_PID; the server is stopped when the script exits
#   bench_start_nginx PREFIX [--body-in-memory SIZE]
#                                     start nginx as an upload sink (Tests/IntegrationTests/Tools/
#                                     nginx-sink.sh) on two free ports, export BENCH_NGINX_HTTP and
#                                     BENCH_NGINX_HTTPS (the /upload URLs), BENCH_NGINX_PID,
#                                     BENCH_NGINX_CERT; stopped when the script exits
#   bench_cpu_seconds PID             user + system CPU seconds PID has used so far (from /proc)
#   bench_measure_cpu CMD...          like bench_measure, printing "SECONDS PEAK_RSS_KIB CPU_SECONDS"
#   bench_stop_process PID            SIGTERM, then SIGKILL if PID is still alive after 10 s
#   bench_on_exit CMD                 run CMD (a string for eval) when the script exits, last added first
#   bench_die MSG                     print MSG on stderr and exit 1
#   bench_positive NAME[=SHOWN]...    exit with a message unless each variable NAME holds a positive
#                                     integer (the message calls it SHOWN, default NAME upper-cased)
#   bench_log MSG                     print MSG on stderr (progress lines, kept out of the result tables)
#   bench_check NAME VALUE            compare VALUE with the bar of row NAME of thresholds.tsv and print
#                                     one line: "PASS NAME VALUE (bar >= X)", "FAIL ...", "INFO ..." for a
#                                     row without a bar, "SKIP ..." when VALUE is not a number
#   bench_thresholds_lint             check thresholds.tsv's rows; prints each bad line, returns 1 if any
#
# `. lib.sh --thresholds-only` defines bench_die, bench_log, bench_positive, bench_check and
# bench_thresholds_lint and stops there: no check for /usr/bin/time and no traps. For scripts that keep
# their own EXIT trap, and for trying bench_check by hand:
#   bash -c '. Scripts/bench/lib.sh --thresholds-only; bench_check nginx-upload.gcm 0.85'

bench_die() {
    printf 'bench: error: %s\n' "$*" >&2
    exit 1
}

bench_log() {
    printf 'bench: %s\n' "$*" >&2
}

# bench_positive NAME[=SHOWN]...: each variable NAME must hold a positive integer; SHOWN is the name in the
# message (the environment variable the user sets), NAME upper-cased by default.
bench_positive() {
    local spec name shown
    for spec in "$@"; do
        name=${spec%%=*}
        shown=${spec#*=}
        [[ "$spec" == *=* ]] || shown=${name^^}
        [[ "${!name}" =~ ^[1-9][0-9]*$ ]] || bench_die "$shown must be a positive integer, not '${!name}'"
    done
}

# --- Thresholds ------------------------------------------------------------------------------------------
# The bars of the benchmarks are data: Scripts/bench/thresholds.tsv, one row per checked figure, five
# tab-separated fields: name, metric, comparison (>= or <=, "-" for a figure reported without a bar), bar
# ("-" likewise), note. Lines starting with # are comments. docs/BENCHMARKS.md lists the same rows with
# the latest figures. BENCH_THRESHOLDS names another file (for trying a bar out).

bench_thresholds_file=${BENCH_THRESHOLDS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/thresholds.tsv}

# Prints "metric<TAB>comparison<TAB>bar<TAB>note" of row NAME; returns 1 when there is no such row.
_bench_threshold_row() {
    [[ -r "$bench_thresholds_file" ]] || return 1
    awk -F '\t' -v name="$1" '
        $0 !~ /^#/ && $1 == name { print $2 "\t" $3 "\t" $4 "\t" $5; found = 1; exit }
        END { exit !found }' "$bench_thresholds_file"
}

# bench_check NAME VALUE: one line on stdout saying how VALUE stands against row NAME's bar. VALUE may end
# in "x" or "%" (as the scripts print ratios and shares); it is compared as a number. It never fails the
# calling script: a benchmark reports, and the line says PASS or FAIL.
bench_check() {
    local name=${1:?bench_check: NAME required} value=${2:-} row metric op bar note
    value=${value%[x%]}
    if ! row=$(_bench_threshold_row "$name"); then
        bench_log "warning: no row '$name' in $bench_thresholds_file"
        printf 'FAIL %s %s (no row %s in thresholds.tsv)\n' "$name" "${value:-n/a}" "$name"
        return 0
    fi
    IFS=$'\t' read -r metric op bar note <<<"$row"
    if [[ "$op" == - || "$bar" == - ]]; then
        printf 'INFO %s %s (no bar: %s)\n' "$name" "${value:-n/a}" "$metric"
        return 0
    fi
    if ! [[ "$value" =~ ^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$ ]]; then
        printf 'SKIP %s %s (bar %s %s)\n' "$name" "${value:-n/a}" "$op" "$bar"
        return 0
    fi
    if awk -v v="$value" -v b="$bar" -v op="$op" \
        'BEGIN { exit !(op == ">=" ? v + 0 >= b + 0 : v + 0 <= b + 0) }'; then
        printf 'PASS %s %s (bar %s %s)\n' "$name" "$value" "$op" "$bar"
    else
        printf 'FAIL %s %s (bar %s %s)\n' "$name" "$value" "$op" "$bar"
    fi
}

# bench_thresholds_lint: every row has five fields, a name used once, a comparison of >=, <= or -, and a
# numeric bar (or - with -). Prints each bad line with its number; returns 1 if there was one.
bench_thresholds_lint() {
    [[ -r "$bench_thresholds_file" ]] || { printf '%s: not readable\n' "$bench_thresholds_file"; return 1; }
    awk -F '\t' '
        /^#/ || /^[[:space:]]*$/ { next }
        {
            why = ""
            if (NF != 5) why = "has " NF " fields, not 5"
            else if (seen[$1]++) why = "repeats the name " $1
            else if ($3 == "-" || $4 == "-") { if ($3 != $4) why = "a comparison of - goes with a bar of -" }
            else if ($3 != ">=" && $3 != "<=") why = "comparison " $3 " is not >=, <= or -"
            else if ($4 !~ /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)$/) why = "bar " $4 " is not a number"
            else for (i = 1; i <= 5; i++) if ($i == "") why = "field " i " is empty"
            if (why != "") { printf "%s:%d: %s\n", FILENAME, NR, why; bad = 1 }
        }
        END { exit bad }' "$bench_thresholds_file"
}

# Scripts that manage their own traps take the functions above and stop here.
[[ "${1:-}" == --thresholds-only ]] && return 0

[[ -x /usr/bin/time ]] || bench_die "/usr/bin/time not found (package 'time'; run Scripts/bootstrap.sh)"

# --- Exit hooks: one EXIT trap for every function that needs cleaning up -------------------------------

_bench_exit_hooks=()

bench_on_exit() {
    _bench_exit_hooks+=("$1")
}

_bench_run_exit_hooks() {
    local i
    for ((i = ${#_bench_exit_hooks[@]} - 1; i >= 0; i--)); do
        eval "${_bench_exit_hooks[$i]}" || true
    done
    _bench_exit_hooks=()
}

trap _bench_run_exit_hooks EXIT
# An interrupted run still stops its server and removes its gigabyte files.
trap 'exit 130' INT
trap 'exit 143' TERM

# --- Statistics ------------------------------------------------------------------------------------------

bench_median() {
    (($# > 0)) || { echo "n/a"; return; }
    printf '%s\n' "$@" | LC_ALL=C sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
            s = sprintf("%.6f", m); sub(/0+$/, "", s); sub(/\.$/, "", s); print s
        }'
}

bench_ratio() {
    awk -v a="${1:-}" -v b="${2:-}" 'BEGIN {
        if (b == "" || a == "" || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# --- Measuring one command -------------------------------------------------------------------------------

bench_peak_rss_kb() {
    local out status
    out=$(mktemp)
    /usr/bin/time -f '%M' -o "$out" "$@" >"${BENCH_STDOUT:-/dev/null}" && status=0 || status=$?
    tail -n 1 "$out"
    rm -f "$out"
    return "$status"
}

# Wall time comes from the shell's microsecond clock rather than time's %e, whose 10 ms steps are too
# coarse for the small files; /usr/bin/time still supplies the peak RSS of the measured process.
bench_measure() {
    local out status start end rss
    out=$(mktemp)
    start=$EPOCHREALTIME
    /usr/bin/time -f '%M' -o "$out" "$@" >"${BENCH_STDOUT:-/dev/null}" && status=0 || status=$?
    end=$EPOCHREALTIME
    rss=$(tail -n 1 "$out")
    rm -f "$out"
    awk -v s="$start" -v e="$end" -v r="$rss" 'BEGIN { printf "%.6f %s\n", e - s, r }'
    return "$status"
}

# The same with the command's user + system CPU seconds, to the microsecond (Scripts/bench/measure.py:
# GNU time's 10 ms steps are 7 % of a 0.14 s run). The wall time is taken around the command alone.
bench_measure_cpu() {
    local out status
    out=$(mktemp)
    /usr/bin/python3 "$(dirname "${BASH_SOURCE[0]}")/measure.py" "$out" "$@" && status=0 || status=$?
    awk 'END { printf "%.6f %s %.4f\n", $1, $2, $3 }' "$out"
    rm -f "$out"
    return "$status"
}

bench_cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' "/proc/$1/stat"
}

# --- Network ---------------------------------------------------------------------------------------------

bench_free_port() {
    # Binding to port 0 lets the kernel pick; the port is free when printed (another process could still
    # take it before the caller binds, which is why bench_start_server uses --port 0 instead).
    /usr/bin/python3 -c '
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

# Asks a process to stop (SIGTERM), and kills it if it is still there after 10 s: a server whose graceful
# shutdown waits on an upload that was cut off must not hang the benchmark's exit.
bench_stop_process() {
    local pid=$1 i
    kill "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        bench_log "process $pid did not stop within 10 s of SIGTERM; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Starts the reference server on a kernel-chosen port and waits for its first stdout line,
#   attache-server listening on http://HOST:PORT
# then keeps draining its output into a log so a chatty server never blocks on a full pipe.
bench_start_server() {
    local store=${1:?bench_start_server: store directory required}
    shift
    [[ -n "${ATTACHE_SERVER_BIN:-}" && -x "${ATTACHE_SERVER_BIN}" ]] \
        || bench_die "ATTACHE_SERVER_BIN is not set to an executable (run through Scripts/bench.sh)"
    mkdir -p "$store"

    local log fd line pid
    log=$(mktemp "${TMPDIR:-/tmp}/attache-server.XXXXXX")
    exec {fd}< <(exec "$ATTACHE_SERVER_BIN" --host 127.0.0.1 --port 0 --store "$store" "$@" 2>"$log.err")
    pid=$!
    BENCH_SERVER_PID=$pid
    export BENCH_SERVER_PID
    bench_on_exit "bench_stop_process $pid; rm -f '$log' '$log.err'"

    if ! IFS= read -r -t 60 -u "$fd" line; then
        tail -n 20 "$log.err" >&2 2>/dev/null || true
        bench_die "attache-server did not print its listening line within 60 s (or exited)"
    fi
    if [[ "$line" =~ ^attache-server\ listening\ on\ (https?://[^[:space:]]+) ]]; then
        BENCH_URL=${BASH_REMATCH[1]%/}
        export BENCH_URL
    else
        bench_die "unexpected first line from attache-server: $line"
    fi
    cat <&"$fd" >"$log" &
    exec {fd}<&-
    bench_log "attache-server (pid $pid) listening on $BENCH_URL, log: $log"
}

# Starts nginx as the upload sink of the integration tests (see the header of nginx-sink.sh: it reads the
# whole body before it answers). nginx cannot report a port it chose itself, so two free ports are picked
# and tried; a port taken in between is retried on new ones. Ready once it has printed its last startup
# notice, which follows the binding of its sockets.
bench_start_nginx() {
    local prefix=${1:?bench_start_nginx: prefix required}
    shift
    local sink="${ATTACHE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}/Tests/IntegrationTests/Tools/nginx-sink.sh"
    [[ -x "$sink" ]] || bench_die "$sink not found"
    command -v nginx >/dev/null || bench_die "nginx not found (run Scripts/bootstrap.sh)"
    local attempt http https pid i
    for attempt in 1 2 3; do
        http=$(bench_free_port)
        https=$(bench_free_port)
        [[ "$http" != "$https" ]] || continue
        "$sink" "$@" "$prefix" "$http" "$https" 2>"$prefix.log" &
        pid=$!
        for ((i = 0; i < 300; i++)); do
            grep -q 'getrlimit(RLIMIT_NOFILE)' "$prefix.log" 2>/dev/null && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if grep -q 'getrlimit(RLIMIT_NOFILE)' "$prefix.log" 2>/dev/null; then
            BENCH_NGINX_PID=$pid
            BENCH_NGINX_HTTP="http://127.0.0.1:$http/upload"
            BENCH_NGINX_HTTPS="https://127.0.0.1:$https/upload"
            BENCH_NGINX_CERT="$prefix/cert.pem"
            export BENCH_NGINX_PID BENCH_NGINX_HTTP BENCH_NGINX_HTTPS BENCH_NGINX_CERT
            bench_on_exit "bench_stop_process $pid"
            bench_log "nginx (pid $pid) listening on $BENCH_NGINX_HTTP and $BENCH_NGINX_HTTPS, prefix $prefix"
            return 0
        fi
        bench_stop_process "$pid"
        grep -q 'Address already in use' "$prefix.log" 2>/dev/null || break
    done
    tail -n 20 "$prefix.log" >&2 2>/dev/null || true
    bench_die "nginx did not start"
}
