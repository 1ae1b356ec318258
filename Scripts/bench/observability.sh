#!/usr/bin/env bash
# The cost of exporting telemetry: the same release binaries with Prometheus + OTLP export on
# (`--metrics-listen 127.0.0.1:0 --otlp-endpoint URL`; `upload` has OTLP only) and off, alternating run by
# run so that drift hits both alike, against the reference server on 127.0.0.1. The OTLP collector is
# Tests/IntegrationTests/Tools/otlp_receiver.py --discard (answers, decodes nothing), so that it costs the
# client's two cores next to nothing.
#   (a) `attache batch` of FILES small files: files/s on ÷ off
#   (b) `attache upload` of a SIZE random file (stream-gcm, the default seal): client CPU seconds
#       on ÷ off
#   (c) COUNT JSON POSTs through one RequestClient, PARALLEL in flight (the attache-request-bench driver of
#       Scripts/Benchmarks, against nginx's /answer200 as in Scripts/bench/requests.sh); export on is the
#       driver with ATTACHE_BENCH_EXPORT=COLLECTOR, which bootstraps the same backends as the executable:
#       requests/s (first request to last answer) on ÷ off
#   (d) the same POSTs against a server that takes DELAY_MS per answer (attache-server's /answer): the
#       telemetry's share of a request that waits on its server, requests/s on ÷ off
# Every part also prints CPU seconds per file (request) of the whole process, which the other work on a
# busy machine disturbs less than the wall clock. With perf(1) (linux-perf), the base and off modes of (a)
# and (c) also count the instructions the process retired in user space, which the machine's noise
# scatters far less than time: nothing bootstrapped against hooks taken out.
# With BASELINE_BIN (and BASELINE_REQUEST_BENCH_BIN for (c)), a third mode runs in each round: that build
# with nothing bootstrapped, the baseline of "no backend" (export off) ÷ base. The
# baseline is meant to be the same source with the telemetry hooks taken out
# (Scripts/bench/telemetry-bypass.py edits a checkout so). The bars of each ratio are rows
# observability.* of Scripts/bench/thresholds.tsv, checked under each table.
# Normally started by Scripts/bench.sh, which builds the release binaries and exports ATTACHE_BIN and
# ATTACHE_SERVER_BIN.
#
# Environment:
#   RUNS=5                 runs per mode and part (medians reported)
#   FILES=2000             files in (a)
#   SIZE=1G                the file of (b) (K/M/G are powers of 1024)
#   CONCURRENCY=8          attache batch --concurrency
#   COUNT=5000             requests in (c)
#   PARALLEL=8             requests in flight in (c)
#   DELAY_MS=1             the server's time per answer in (d)
#   PARTS="a b c d"        the parts to run
#   ATTACHE_REQUEST_BENCH_BIN   the driver of (c) (default: attache-request-bench in ATTACHE_BENCH_DRIVERS)
#   BASELINE_BIN, BASELINE_REQUEST_BENCH_BIN   the "base" mode's attache and driver (optional)
#   BENCH_TMPDIR=/var/tmp  where the files and the server's store go
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
files=${FILES:-2000}
concurrency=${CONCURRENCY:-8}
size=${SIZE:-1G}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}
count=${COUNT:-5000}
parallel=${PARALLEL:-8}
delay_ms=${DELAY_MS:-1}
parts=" ${PARTS:-a b c d} "
bench_positive runs files concurrency count parallel delay_ms
bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bench_die "bad SIZE '$size'"
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${XDG_CACHE_HOME:-$HOME/.cache}/attache/s3-venv/bin/python3
[[ -x "$python" ]] || python=python3
"$python" -c 'import opentelemetry.proto' 2>/dev/null \
    || bench_die "no python3 imports opentelemetry.proto (run Scripts/bootstrap.sh)"

modes="off on"
if [[ -n "${BASELINE_BIN:-}" ]]; then
    [[ -x "$BASELINE_BIN" ]] || bench_die "BASELINE_BIN $BASELINE_BIN is not an executable"
    if [[ $parts == *" c "* || $parts == *" d "* ]]; then
        [[ -x "${BASELINE_REQUEST_BENCH_BIN:-}" ]] || bench_die "BASELINE_BIN with part c or d needs BASELINE_REQUEST_BENCH_BIN"
    fi
    modes="base off on"
fi
if [[ $parts == *" c "* || $parts == *" d "* ]]; then
    driver=${ATTACHE_REQUEST_BENCH_BIN:-${ATTACHE_BENCH_DRIVERS:-$(dirname "$ATTACHE_BIN")}/attache-request-bench}
    [[ -x "$driver" ]] \
        || bench_die "$driver not found (swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks)"
fi

mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-observability.XXXXXX")
bench_on_exit "rm -rf '$work'"
store="$work/store"
bench_start_server "$store"
url="$BENCH_URL/upload"
if [[ $parts == *" c "* ]]; then
    bench_start_nginx "$work/nginx"
    answer_url=${BENCH_NGINX_HTTP%/upload}/answer200
fi

# The collector: a sink on a free port, stopped when the script exits.
exec {sink_fd}< <(exec "$python" "$root/Tests/IntegrationTests/Tools/otlp_receiver.py" --discard 2>"$work/sink.err")
sink_pid=$!
bench_on_exit "bench_stop_process $sink_pid"
IFS= read -r -t 60 -u "$sink_fd" line || bench_die "the OTLP sink did not start: $(cat "$work/sink.err")"
collector="http://127.0.0.1:${line#listening }"
bench_log "OTLP sink (pid $sink_pid) on $collector"

if [[ $parts == *" a "* ]]; then
    bench_log "making $files small files"
    mkdir -p "$work/files"
    for ((i = 0; i < files; i++)); do printf 'attache observability bench, file %d\n' "$i" >"$work/files/f$i.txt"; done
fi
if [[ $parts == *" b "* ]]; then
    bench_log "making a $size file"
    head -c "$bytes" /dev/urandom >"$work/big.bin"
fi

# The length of attache-server's /answer body ({"errorCode":0,"data":{"fileId":"a1"}}), which the driver
# checks on every answer.
answer_bytes=38

clear_store() { find "$store" -mindepth 1 ! -type d -delete; }

declare -A rate=() cpu=() upload_wall=() batch_cpu=() rps=() request_cpu=() slow_rps=() batch_instr=() request_instr=()
# Instructions in user space, counted by perf for the base and off modes when it is installed.
counting=()
if command -v perf >/dev/null && perf stat -x, -e instructions:u -o /dev/null true 2>/dev/null; then counting=(yes); fi
instructions_of() { awk -F, '$3 ~ /^instructions/ { printf "%.0f", $1 / 1e6 }' "$work/perf"; }
for ((run = 1; run <= runs; run++)); do
    for mode in $modes; do
        batch_export=() upload_export=() driver_export=""
        bin=$ATTACHE_BIN mode_driver=${driver:-}
        if [[ $mode == base ]]; then bin=$BASELINE_BIN mode_driver=${BASELINE_REQUEST_BENCH_BIN:-}; fi
        perf_prefix=()
        if [[ -n ${counting[*]} && $mode != on && $modes == base* ]]; then
            perf_prefix=(perf stat -x, -e instructions:u -o "$work/perf" --)
        fi
        if [[ $mode == on ]]; then
            batch_export=(--metrics-listen 127.0.0.1:0 --metrics-linger 0 --otlp-endpoint "$collector")
            upload_export=(--otlp-endpoint "$collector")
            driver_export=$collector
        fi
        if [[ $parts == *" a "* ]]; then
            clear_store
            rm -f "$work/journal.sqlite"*
            figures=$(bench_measure_cpu "${perf_prefix[@]}" "$bin" batch "$work/files" --url "$url" --journal "$work/journal.sqlite" \
                --concurrency "$concurrency" --no-progress "${batch_export[@]}" 2>"$work/err") \
                || { tail -n 20 "$work/err" >&2; bench_die "attache batch failed ($mode)"; }
            read -r s _ c <<<"$figures"
            r=$(awk -v n="$files" -v s="$s" 'BEGIN { printf "%.1f", n / s }')
            rate[$mode]+="$r "
            batch_cpu[$mode]+="$(awk -v n="$files" -v c="$c" 'BEGIN { printf "%.4f", c * 1000 / n }') "
            [[ ${#perf_prefix[@]} -eq 0 ]] || batch_instr[$mode]+="$(instructions_of) "
            bench_log "run $run/$runs export $mode: batch of $files in ${s}s ($r files/s), CPU ${c}s"
        fi

        if [[ $parts == *" b "* ]]; then
            clear_store
            figures=$(bench_measure_cpu "$bin" upload "$work/big.bin" --url "$url" "${upload_export[@]}" 2>"$work/err") \
                || { tail -n 20 "$work/err" >&2; bench_die "attache upload failed ($mode)"; }
            read -r s _ c <<<"$figures"
            cpu[$mode]+="$c "
            upload_wall[$mode]+="$s "
            bench_log "run $run/$runs export $mode: upload of $size in ${s}s, client CPU ${c}s"
        fi

        if [[ $parts == *" c "* ]]; then
            figures=$(ATTACHE_BENCH_EXPORT=$driver_export BENCH_STDOUT="$work/out" \
                bench_measure_cpu "${perf_prefix[@]}" "$mode_driver" "$answer_url" "$count" "$parallel" 200 2>"$work/err") \
                || { tail -n 20 "$work/err" >&2; bench_die "attache-request-bench failed ($mode)"; }
            [[ ${#perf_prefix[@]} -eq 0 ]] || request_instr[$mode]+="$(instructions_of) "
            read -r _ _ c <<<"$figures"
            # The driver's own clock: from the first request to the last answer (start-up and the final
            # flush excluded); CPU is the whole process's.
            r=$(awk '{ for (i = 1; i < NF; i++) if ($i == "rps") printf "%.0f", $(i + 1) }' "$work/out")
            rps[$mode]+="$r "
            request_cpu[$mode]+="$(awk -v n="$count" -v c="$c" 'BEGIN { printf "%.4f", c * 1000 / n }') "
            bench_log "run $run/$runs export $mode: $count requests, $r requests/s, CPU ${c}s"
        fi

        if [[ $parts == *" d "* ]]; then
            figures=$(ATTACHE_BENCH_EXPORT=$driver_export BENCH_STDOUT="$work/out" \
                bench_measure_cpu "$mode_driver" "$BENCH_URL/answer?delay-ms=$delay_ms" "$count" "$parallel" \
                    "$answer_bytes" 2>"$work/err") \
                || { tail -n 20 "$work/err" >&2; bench_die "attache-request-bench failed against /answer ($mode)"; }
            r=$(awk '{ for (i = 1; i < NF; i++) if ($i == "rps") printf "%.0f", $(i + 1) }' "$work/out")
            slow_rps[$mode]+="$r "
            bench_log "run $run/$runs export $mode: $count requests to a ${delay_ms} ms server, $r requests/s"
        fi
    done
done

median_of() { local -a list; read -r -a list <<<"$1"; bench_median "${list[@]}"; }
printf '\nTelemetry export on (Prometheus + OTLP/HTTP to a discarding sink) vs off; attache-server on 127.0.0.1;\n'
printf 'median of %s runs, alternating\n\n' "$runs"
printf '%-48s %10s %10s %8s\n' measure off on 'on/off'
checks=()
row() { # label, first mode's list, second mode's list, the row of thresholds.tsv for the ratio ('' for none)
    local off on
    off=$(median_of "$2") on=$(median_of "$3")
    printf '%-48s %10s %10s %8s\n' "$1" "$off" "$on" "$(bench_ratio "$on" "$off")"
    [[ -z "$4" ]] || checks+=("$(bench_check "$4" "$(bench_ratio "$on" "$off")")")
}
# The table of one mode against another (the second over the first), then the ratios against their bars:
# rows PREFIX.batch, PREFIX.upload and PREFIX.requests of thresholds.tsv.
rows() { # mode, mode, prefix
    checks=()
    if [[ $parts == *" a "* ]]; then
        row "(a) batch of $files small files, files/s" "${rate[$1]}" "${rate[$2]}" "$3.batch"
        # Export's bar on CPU per file is its own row (observability.batch.cpu); the base mode has none.
        row "    CPU ms per file (whole process)" "${batch_cpu[$1]}" "${batch_cpu[$2]}" \
            "$([[ $3 == observability ]] && echo observability.batch.cpu)"
    fi
    if [[ $parts == *" b "* ]]; then
        row "(b) upload of $size stream-gcm, client CPU s" "${cpu[$1]}" "${cpu[$2]}" "$3.upload"
        row "    upload wall s" "${upload_wall[$1]}" "${upload_wall[$2]}" ''
    fi
    if [[ $parts == *" c "* ]]; then
        row "(c) $count RequestClient POSTs, requests/s" "${rps[$1]}" "${rps[$2]}" "$3.requests"
        row "    CPU ms per request (whole process)" "${request_cpu[$1]}" "${request_cpu[$2]}" ''
        if [[ $3 == observability ]]; then
            # What the telemetry itself costs a request: the medians' difference, in microseconds.
            local spent
            spent=$(awk -v on="$(median_of "${request_cpu[$2]}")" -v off="$(median_of "${request_cpu[$1]}")" \
                'BEGIN { printf "%.1f", (on - off) * 1000 }')
            printf '%-48s %10s %10s %8s\n' "    telemetry CPU µs per request (on - off)" "" "" "$spent"
            checks+=("$(bench_check observability.requests.telemetry-us "$spent")")
        fi
    fi
    if [[ $parts == *" d "* ]]; then
        row "(d) the POSTs to a ${delay_ms} ms server, requests/s" "${slow_rps[$1]}" "${slow_rps[$2]}" \
            "$([[ $3 == observability ]] && echo observability.requests.slow-server)"
    fi
    if [[ $1 == base && -n ${counting[*]} ]]; then
        [[ $parts != *" a "* ]] || row "(a) batch, million instructions (user)" "${batch_instr[base]}" "${batch_instr[off]}" observability.base.batch-instructions
        [[ $parts != *" c "* ]] || row "(c) POSTs, million instructions (user)" "${request_instr[base]}" "${request_instr[off]}" observability.base.requests-instructions
    fi
    printf '\n'
    printf '%s\n' "${checks[@]}"
}
rows off on observability
if [[ $modes == base* ]]; then
    printf '\nNo backend bootstrapped (export off) vs the baseline build (BASELINE_BIN), same rounds\n\n'
    printf '%-48s %10s %10s %8s\n' measure base off 'off/base'
    rows base off observability.base
fi
