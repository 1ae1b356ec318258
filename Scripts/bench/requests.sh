#!/usr/bin/env bash
# Small requests (issue 14), against nginx on 127.0.0.1 (Tests/IntegrationTests/Tools/nginx-sink.sh,
# POST /answer200: reads the whole body, answers 200 bytes of JSON):
#   (a) COUNT JSON POSTs over reused connections, PARALLEL in flight: the library (the
#       attache-request-bench executable: one RequestClient, a task group) against
#       `curl --parallel --parallel-max PARALLEL --config FILE` sending the same requests. Both are timed
#       as whole processes (start-up included), tools alternating run by run.
#   (b) one process start and one request: `attache request POST URL --json-field text=hello` against
#       `curl` posting the same JSON, with hyperfine.
# The ratios are checked against rows requests.* of Scripts/bench/thresholds.tsv ((b)'s bar is retired).
# Normally started by Scripts/bench.sh, which builds the release binaries and exports ATTACHE_BIN.
#
# Environment:
#   RUNS=5          runs of (a) per tool (medians reported, with the range)
#   COUNT=5000      requests per run of (a)
#   PARALLEL=8      requests in flight in (a)
#   ATTACHE_REQUEST_BENCH_BIN   the library's driver (default: attache-request-bench in ATTACHE_BENCH_DRIVERS,
#                               the release folder of the Scripts/Benchmarks package, which Scripts/bench.sh builds)
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
count=${COUNT:-5000}
parallel=${PARALLEL:-8}
bench_positive runs count parallel
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
driver=${ATTACHE_REQUEST_BENCH_BIN:-${ATTACHE_BENCH_DRIVERS:-$(dirname "$ATTACHE_BIN")}/attache-request-bench}
[[ -x "$driver" ]] || bench_die "$driver not found (swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks)"
command -v curl >/dev/null || bench_die "curl not found"
command -v hyperfine >/dev/null || bench_die "hyperfine not found (Scripts/bootstrap.sh --with-bench)"

work=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-requests.XXXXXX")
bench_on_exit "rm -rf '$work'"
bench_start_nginx "$work/nginx"
url=${BENCH_NGINX_HTTP%/upload}/answer200

# The body the library's driver sends: RequestBody.json writes compact JSON with sorted keys.
body='{"n":1,"text":"hello","to":"ann"}'
{
    printf 'silent\nshow-error\nno-progress-meter\nheader = "Content-Type: application/json"\n'
    printf 'data-raw = "%s"\n' "${body//\"/\\\"}"
    printf 'write-out = "%%{http_code} %%{size_download}\\n"\n'
    for ((i = 0; i < count; i++)); do printf 'url = "%s"\noutput = "/dev/null"\n' "$url"; done
} >"$work/curl.config"

tools=(curl library)
command_of() {
    case "$1" in
        curl) cmd=(curl --parallel --parallel-max "$parallel" --config "$work/curl.config") ;;
        library) cmd=("$driver" "$url" "$count" "$parallel" 200) ;;
    esac
}

bench_log "warm-up: one untimed run of each"
for tool in "${tools[@]}"; do
    command_of "$tool"
    "${cmd[@]}" >/dev/null 2>"$work/err" || { tail -n 20 "$work/err" >&2; bench_die "$tool failed: ${cmd[*]}"; }
done

declare -A secs=() rss=() cpu=()
inproc=""
for ((run = 1; run <= runs; run++)); do
    for tool in "${tools[@]}"; do
        command_of "$tool"
        figures=$(BENCH_STDOUT="$work/out" bench_measure_cpu "${cmd[@]}" 2>"$work/err") && status=0 || status=$?
        if ((status != 0)); then
            tail -n 20 "$work/err" >&2
            bench_die "$tool failed (exit $status): ${cmd[*]}"
        fi
        # Every request must have been answered in full: curl writes one "200 200" line per request.
        if [[ "$tool" == curl ]]; then
            good=$(grep -c '^200 200$' "$work/out" || true)
            ((good == count)) || bench_die "curl: $good of $count requests got the 200-byte answer"
        else
            # The driver's own clock: from the first request to the last answer, start-up excluded.
            inproc+="$(awk '{ for (i = 1; i < NF; i++) if ($i == "seconds") print $(i + 1) }' "$work/out") "
        fi
        read -r s k c <<<"$figures"
        secs[$tool]+="$s "
        rss[$tool]+="$k "
        cpu[$tool]+="$c "
        bench_log "run $run/$runs $tool: ${s}s ($(awk -v n="$count" -v s="$s" 'BEGIN { printf "%.0f", n / s }') requests/s), peak RSS ${k} KiB, CPU ${c}s"
    done
done

min_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | head -n 1; }
max_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | tail -n 1; }

printf '\n(a) %s JSON POSTs, %s in flight, 200-byte answers, nginx on 127.0.0.1; whole process, median of %s runs\n' \
    "$count" "$parallel" "$runs"
for tool in "${tools[@]}"; do
    command_of "$tool"
    printf '  %-8s %s\n' "$tool:" "${cmd[*]}"
done
printf '\n%-8s %9s %17s %12s %9s %8s\n' tool seconds range 'requests/s' 'RSS MiB' 'CPU s'
declare -A rps=()
for tool in "${tools[@]}"; do
    read -r -a s_list <<<"${secs[$tool]}"
    read -r -a k_list <<<"${rss[$tool]}"
    read -r -a c_list <<<"${cpu[$tool]}"
    median_s=$(bench_median "${s_list[@]}")
    rps[$tool]=$(awk -v n="$count" -v s="$median_s" 'BEGIN { printf "%.0f", n / s }')
    printf '%-8s %9.3f %8.3f-%-8.3f %12s %9.1f %8.2f\n' "$tool" "$median_s" "$(min_of "${s_list[@]}")" \
        "$(max_of "${s_list[@]}")" "${rps[$tool]}" "$(awk -v k="$(bench_median "${k_list[@]}")" 'BEGIN { print k / 1024 }')" \
        "$(bench_median "${c_list[@]}")"
done
printf '\nrequests/s library/curl: %sx\n' "$(bench_ratio "${rps[library]}" "${rps[curl]}")"
read -r -a i_list <<<"$inproc"
inproc_rps=$(awk -v n="$count" -v s="$(bench_median "${i_list[@]}")" 'BEGIN { printf "%.0f", n / s }')
printf 'library in process (first request to last answer, start-up excluded): %s requests/s, %sx curl'"'"'s whole process\n' \
    "$inproc_rps" "$(bench_ratio "$inproc_rps" "${rps[curl]}")"

printf '\n(b) process start + one JSON POST (hyperfine -N, medians)\n'
hyperfine -N --warmup 5 --min-runs 40 --export-json "$work/hyperfine.json" \
    -n "attache request" "$ATTACHE_BIN request POST $url --json-field text=hello" \
    -n "curl" "curl -sS -H 'Content-Type: application/json' --data-raw '{\"text\":\"hello\"}' $url" \
    2>/dev/null | grep -vE '^\s*$' || true
one_shot=$(python3 - "$work/hyperfine.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
curl = results["curl"]["median"]
for name in ("attache request", "curl"):
    r = results[name]
    print(f"  {name:26s} median {r['median']*1000:7.2f} ms  (min {r['min']*1000:.2f}, max {r['max']*1000:.2f})")
a = results["attache request"]["median"]
print(f"attache request / curl: {a / curl:.2f}x")
PY
)
printf '%s\n' "$one_shot"

printf '\n'
bench_check requests.throughput "$(bench_ratio "${rps[library]}" "${rps[curl]}")"
bench_check requests.one-shot "$(sed -n 's/^attache request \/ curl: \([0-9.]*\)x$/\1/p' <<<"$one_shot")"
