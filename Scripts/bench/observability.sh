#!/usr/bin/env bash
# The cost of exporting telemetry: the same release binaries with Prometheus + OTLP export on
# (`--metrics-listen 127.0.0.1:0 --otlp-endpoint URL`; `upload` has OTLP only) and off, alternating run by
# run so that drift hits both alike, against the reference server on 127.0.0.1. The OTLP collector is
# Tests/IntegrationTests/Tools/otlp_receiver.py --discard (answers, decodes nothing), so that it costs the
# client's two cores next to nothing.
#   (a) `attache batch` of FILES small files: files/s on ÷ off, target >= 0.97
#   (b) `attache upload` of a SIZE random file (stream-gcm, the default seal): client CPU seconds
#       on ÷ off, target <= 1.02
# Normally started by Scripts/bench.sh, which builds the release binaries and exports ATTACHE_BIN and
# ATTACHE_SERVER_BIN.
#
# Environment:
#   RUNS=5                 runs per mode and part (medians reported)
#   FILES=2000             files in (a)
#   SIZE=1G                the file of (b) (K/M/G are powers of 1024)
#   CONCURRENCY=8          attache batch --concurrency
#   BENCH_TMPDIR=/var/tmp  where the files and the server's store go
#
# Not measured here: RequestClient POSTs with export on (Scripts/bench/requests.sh's driver bootstraps
# no backend; it would need swift-otel and swift-prometheus in Scripts/Benchmarks).
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
files=${FILES:-2000}
concurrency=${CONCURRENCY:-8}
size=${SIZE:-1G}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}
bench_positive runs files concurrency
bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bench_die "bad SIZE '$size'"
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${XDG_CACHE_HOME:-$HOME/.cache}/attache/s3-venv/bin/python3
[[ -x "$python" ]] || python=python3
"$python" -c 'import opentelemetry.proto' 2>/dev/null \
    || bench_die "no python3 imports opentelemetry.proto (run Scripts/bootstrap.sh)"

mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-observability.XXXXXX")
bench_on_exit "rm -rf '$work'"
store="$work/store"
bench_start_server "$store"
url="$BENCH_URL/upload"

# The collector: a sink on a free port, stopped when the script exits.
exec {sink_fd}< <(exec "$python" "$root/Tests/IntegrationTests/Tools/otlp_receiver.py" --discard 2>"$work/sink.err")
sink_pid=$!
bench_on_exit "bench_stop_process $sink_pid"
IFS= read -r -t 60 -u "$sink_fd" line || bench_die "the OTLP sink did not start: $(cat "$work/sink.err")"
collector="http://127.0.0.1:${line#listening }"
bench_log "OTLP sink (pid $sink_pid) on $collector"

bench_log "making $files small files and a $size file"
mkdir -p "$work/files"
for ((i = 0; i < files; i++)); do printf 'attache observability bench, file %d\n' "$i" >"$work/files/f$i.txt"; done
head -c "$bytes" /dev/urandom >"$work/big.bin"

clear_store() { find "$store" -mindepth 1 ! -type d -delete; }

declare -A rate=() cpu=()
for ((run = 1; run <= runs; run++)); do
    for mode in off on; do
        batch_export=() upload_export=()
        if [[ $mode == on ]]; then
            batch_export=(--metrics-listen 127.0.0.1:0 --metrics-linger 0 --otlp-endpoint "$collector")
            upload_export=(--otlp-endpoint "$collector")
        fi
        clear_store
        rm -f "$work/journal.sqlite"*
        figures=$(bench_measure_cpu "$ATTACHE_BIN" batch "$work/files" --url "$url" --journal "$work/journal.sqlite" \
            --concurrency "$concurrency" --no-progress "${batch_export[@]}" 2>"$work/err") \
            || { tail -n 20 "$work/err" >&2; bench_die "attache batch failed ($mode)"; }
        read -r s _ _ <<<"$figures"
        r=$(awk -v n="$files" -v s="$s" 'BEGIN { printf "%.1f", n / s }')
        rate[$mode]+="$r "
        bench_log "run $run/$runs export $mode: batch of $files in ${s}s ($r files/s)"

        clear_store
        figures=$(bench_measure_cpu "$ATTACHE_BIN" upload "$work/big.bin" --url "$url" "${upload_export[@]}" 2>"$work/err") \
            || { tail -n 20 "$work/err" >&2; bench_die "attache upload failed ($mode)"; }
        read -r s _ c <<<"$figures"
        cpu[$mode]+="$c "
        bench_log "run $run/$runs export $mode: upload of $size in ${s}s, client CPU ${c}s"
    done
done

median_of() { local -a list; read -r -a list <<<"$1"; bench_median "${list[@]}"; }
printf '\nTelemetry export on (Prometheus + OTLP/HTTP to a discarding sink) vs off; attache-server on 127.0.0.1;\n'
printf 'median of %s runs, alternating\n\n' "$runs"
printf '%-44s %10s %10s %8s %s\n' measure off on 'on/off' target
printf '%-44s %10s %10s %8s %s\n' "(a) batch of $files small files, files/s" "$(median_of "${rate[off]}")" \
    "$(median_of "${rate[on]}")" "$(bench_ratio "$(median_of "${rate[on]}")" "$(median_of "${rate[off]}")")" '>= 0.97'
printf '%-44s %10s %10s %8s %s\n' "(b) upload of $size stream-gcm, client CPU s" "$(median_of "${cpu[off]}")" \
    "$(median_of "${cpu[on]}")" "$(bench_ratio "$(median_of "${cpu[on]}")" "$(median_of "${cpu[off]}")")" '<= 1.02'
