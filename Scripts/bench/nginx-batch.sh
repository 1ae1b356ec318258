#!/usr/bin/env bash
# Many small files to nginx (issue 12): `attache batch --concurrency 8` over 2,000 files of 1-4 KB
# posted to nginx on 127.0.0.1 (Tests/IntegrationTests/Tools/nginx-sink.sh: reads each body whole, then
# answers), over plain HTTP/1.1 and over HTTPS (HTTP/2 when the client offers it). What it measures is the
# transport's cost per request: connection reuse, TLS handshakes, threads. Normally started by
# Scripts/bench.sh, which builds the binaries and exports ATTACHE_BIN.
#
# Environment:
#   RUNS=5                  runs per build and scheme (medians are reported, with the range)
#   BENCH_FILES=2000        number of files
#   BENCH_CONCURRENCY=8     --concurrency
#   BENCH_SCHEMES="http https"
#   ATTACHE_BASELINE_BIN    a folder holding another build's `attache` (say, the
#                           transport before a change): run in the same benchmark, alternating with this
#                           build, with the ratio this build/baseline (bars: rows nginx-batch.* of
#                           Scripts/bench/thresholds.tsv)
#   BENCH_TMPDIR=/var/tmp   where the files, the journals and nginx's prefix go
#
# Each run starts with no journal, uses the default pipeline (stream-gcm seal; random bytes are not
# transformed) and must end with exit 0 and one logged request per file. Also printed: the connections
# nginx saw per run (its $connection).
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
count=${BENCH_FILES:-2000}
concurrency=${BENCH_CONCURRENCY:-8}
schemes=${BENCH_SCHEMES:-"http https"}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}
baseline=${ATTACHE_BASELINE_BIN:-}

bench_positive runs count=BENCH_FILES
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
if [[ -n "$baseline" ]]; then
    [[ -x "$baseline/attache" ]] \
        || bench_die "ATTACHE_BASELINE_BIN=$baseline does not hold an executable attache"
fi
for scheme in $schemes; do
    [[ "$scheme" == http || "$scheme" == https ]] || bench_die "unknown scheme '$scheme' in BENCH_SCHEMES"
done

mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-nginx-batch.XXXXXX")
bench_on_exit "rm -rf '$work'"
bench_start_nginx "$work/nginx"
access_log="$work/nginx/access.log"

bench_log "creating $count files of 1-4 KB random bytes"
mkdir -p "$work/files"
/usr/bin/python3 - "$work/files" "$count" <<'EOF'
import os, random, sys
folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    with open(os.path.join(folder, f"{i:05d}.bin"), "wb") as f:
        f.write(os.urandom(random.randint(1000, 4000)))
EOF

builds=(this)
[[ -n "$baseline" ]] && builds+=(baseline)
bin_of() { if [[ "$1" == baseline ]]; then printf '%s/attache' "$baseline"; else printf '%s' "$ATTACHE_BIN"; fi; }
url_of() { if [[ "$1" == https ]]; then printf '%s' "$BENCH_NGINX_HTTPS"; else printf '%s' "$BENCH_NGINX_HTTP"; fi; }

# Warm-up: the page cache holds the files, nginx has served requests.
bench_log "warm-up: one untimed run"
"$ATTACHE_BIN" batch "$work/files" --url "$BENCH_NGINX_HTTP" --concurrency "$concurrency" \
    --journal "$work/warmup.sqlite" --no-progress >/dev/null 2>"$work/err" \
    || { tail -n 20 "$work/err" >&2; bench_die "the warm-up run failed"; }

declare -A fps=() secs=() rss=() cpu=() conns=()
for ((run = 1; run <= runs; run++)); do
    for scheme in $schemes; do
        for build in "${builds[@]}"; do
            rm -f "$work/journal.sqlite"*
            cmd=("$(bin_of "$build")" batch "$work/files" --url "$(url_of "$scheme")" --concurrency "$concurrency"
                --journal "$work/journal.sqlite" --no-progress)
            [[ "$scheme" == https ]] && cmd+=(--ca-file "$BENCH_NGINX_CERT")
            lines_before=$(wc -l <"$access_log")
            figures=$(bench_measure_cpu "${cmd[@]}" 2>"$work/err") && status=0 || status=$?
            if ((status != 0)); then
                tail -n 20 "$work/err" >&2
                bench_die "$build over $scheme failed (exit $status): ${cmd[*]}"
            fi
            read -r logged connections < <(awk -v from="$lines_before" \
                'NR > from && $5 == "/upload" { n++; if (!seen[$1]++) c++ } END { print n + 0, c + 0 }' "$access_log")
            ((logged == count)) || bench_die "$build over $scheme: nginx logged $logged requests for $count files"
            read -r s k c <<<"$figures"
            key="$build,$scheme"
            secs[$key]+="$s "
            fps[$key]+="$(awk -v n="$count" -v s="$s" 'BEGIN { printf "%.1f", n / s }') "
            rss[$key]+="$k "
            cpu[$key]+="$c "
            conns[$key]+="$connections "
            bench_log "run $run/$runs $build $scheme: ${s}s, $(awk -v n="$count" -v s="$s" 'BEGIN { printf "%.0f", n / s }') files/s, CPU ${c}s, peak RSS ${k} KiB, $connections connections"
        done
    done
done

# --- Results ---------------------------------------------------------------------------------------------

min_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | head -n 1; }
max_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | tail -n 1; }

printf '\n%s files of 1-4 KB to nginx on 127.0.0.1, --concurrency %s, median of %s runs\n' "$count" "$concurrency" "$runs"
for build in "${builds[@]}"; do
    printf '  %-9s %s batch FILES --url URL --concurrency %s --journal NEW [--ca-file CERT] --no-progress\n' \
        "$build:" "$(bin_of "$build")" "$concurrency"
done
printf '\n%-9s %-6s %9s %17s %8s %9s %10s %12s\n' build scheme files/s 'range' seconds 'CPU s' 'RSS MiB' connections
declare -A median_fps=()
for scheme in $schemes; do
    for build in "${builds[@]}"; do
        key="$build,$scheme"
        read -r -a f_list <<<"${fps[$key]}"
        read -r -a s_list <<<"${secs[$key]}"
        read -r -a k_list <<<"${rss[$key]}"
        read -r -a c_list <<<"${cpu[$key]}"
        read -r -a n_list <<<"${conns[$key]}"
        median_fps[$key]=$(bench_median "${f_list[@]}")
        printf '%-9s %-6s %9.1f %8.1f-%-8.1f %8.3f %9.2f %10.1f %12s\n' "$build" "$scheme" "${median_fps[$key]}" \
            "$(min_of "${f_list[@]}")" "$(max_of "${f_list[@]}")" "$(bench_median "${s_list[@]}")" \
            "$(bench_median "${c_list[@]}")" "$(awk -v k="$(bench_median "${k_list[@]}")" 'BEGIN { print k / 1024 }')" \
            "$(min_of "${n_list[@]}")-$(max_of "${n_list[@]}")"
    done
done
if [[ -n "$baseline" ]]; then
    printf '\n'
    for scheme in $schemes; do
        printf 'files/s this build/baseline over %s: %sx\n' "$scheme" \
            "$(bench_ratio "${median_fps[this,$scheme]}" "${median_fps[baseline,$scheme]}")"
    done
    for scheme in $schemes; do
        bench_check "nginx-batch.$scheme.baseline" "$(bench_ratio "${median_fps[this,$scheme]}" "${median_fps[baseline,$scheme]}")"
    done
fi
