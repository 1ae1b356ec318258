#!/usr/bin/env bash
# One large file to nginx (issue 12): `attache upload` against `curl -H Expect: -F` (the anchor), both
# posting the same random file to nginx on 127.0.0.1, which reads the whole body into memory before it
# answers (Tests/IntegrationTests/Tools/nginx-sink.sh --body-in-memory) and costs less CPU per byte than
# either client, so the figures are the clients' own. Tools alternate run by run, so drift hits all alike.
# Normally started by Scripts/bench.sh, which builds the binaries and exports ATTACHE_BIN.
#
# Environment:
#   RUNS=5                  runs per tool (medians are reported, with the range)
#   SIZE=1G                 file size (K/M/G are powers of 1024)
#   ATTACHE_BASELINE_BIN    a folder holding another build's `attache` (say, the
#                           transport before a change): run as well, with the ratio new/baseline
#   BENCH_TMPDIR=/var/tmp   where the test file and nginx's prefix go (/tmp is often in RAM)
#
# Tools: curl (plaintext), attache with --scheme none --no-transform (plaintext, like curl), attache with
# --no-transform and the default stream-gcm seal; the same two for the baseline when given.
# The bars are rows nginx-upload.* of Scripts/bench/thresholds.tsv, checked at the end (bench_check).
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
size=${SIZE:-1G}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}
baseline=${ATTACHE_BASELINE_BIN:-}

bench_positive runs
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
command -v curl >/dev/null || bench_die "curl not found"
if [[ -n "$baseline" ]]; then
    [[ -x "$baseline/attache" ]] \
        || bench_die "ATTACHE_BASELINE_BIN=$baseline does not hold an executable attache"
fi
bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bench_die "bad SIZE '$size'"
((bytes > 0)) || bench_die "SIZE '$size' is empty"

mkdir -p "$tmp_parent"
avail=$(df --output=avail -B1 "$tmp_parent" | tail -n 1 | tr -d ' ')
((avail > bytes + 256 * 1024 * 1024)) \
    || bench_die "$tmp_parent has $(numfmt --to=iec "$avail")B free, needs $(numfmt --to=iec $((bytes + 256 * 1024 * 1024)))B"

work=$(mktemp -d "$tmp_parent/attache-bench-nginx-upload.XXXXXX")
bench_on_exit "rm -rf '$work'"
# Room for the body, the multipart framing and the seal's tags.
bench_start_nginx "$work/nginx" --body-in-memory $((bytes + bytes / 16 + 16 * 1024 * 1024))
url=$BENCH_NGINX_HTTP
access_log="$work/nginx/access.log"

bench_log "creating a ${size}iB file of random bytes"
file="$work/file.bin"
head -c "$bytes" /dev/urandom >"$file"

tools=(curl attache-plain attache-gcm)
[[ -n "$baseline" ]] && tools+=(baseline-plain baseline-gcm)

# The command line of each tool, as an array named cmd.
command_of() {
    local bin=$ATTACHE_BIN
    case "$1" in
        curl) cmd=(curl -sS -o /dev/null -w '%{http_code}' -H 'Expect:' -F "file=@$file" "$url"); return ;;
        baseline-*) bin=$baseline/attache ;;
    esac
    case "$1" in
        *-plain) cmd=("$bin" upload "$file" --url "$url" --scheme none --no-transform) ;;
        *-gcm) cmd=("$bin" upload "$file" --url "$url" --no-transform) ;;
    esac
}

# nginx's first gigabyte is memory it has never touched; one untimed upload makes every measured one alike.
bench_log "warm-up: one untimed curl upload"
curl -sS -o /dev/null -H 'Expect:' -F "file=@$file" "$url" || bench_die "the warm-up upload to nginx failed"

declare -A secs=() rss=() cpu=() server_cpu=()
for ((run = 1; run <= runs; run++)); do
    for tool in "${tools[@]}"; do
        command_of "$tool"
        lines_before=$(wc -l <"$access_log")
        nginx_before=$(bench_cpu_seconds "$BENCH_NGINX_PID")
        figures=$(BENCH_STDOUT="$work/out" bench_measure_cpu "${cmd[@]}" 2>"$work/err") && status=0 || status=$?
        nginx_after=$(bench_cpu_seconds "$BENCH_NGINX_PID")
        if ((status != 0)) || { [[ "$tool" == curl ]] && [[ "$(cat "$work/out")" != 200 ]]; }; then
            tail -n 20 "$work/err" >&2
            bench_die "$tool failed (exit $status): ${cmd[*]}"
        fi
        # The upload counts only if nginx logged one request that carried the whole file.
        read -r logged length < <(awk -v from="$lines_before" 'NR > from { n++; l = $7 } END { print n + 0, l + 0 }' "$access_log")
        ((logged == 1 && length >= bytes)) \
            || bench_die "$tool: nginx logged $logged requests, last of $length bytes (file: $bytes)"
        read -r s k c <<<"$figures"
        secs[$tool]+="$s "
        rss[$tool]+="$k "
        cpu[$tool]+="$c "
        server_cpu[$tool]+="$(awk -v a="$nginx_before" -v b="$nginx_after" 'BEGIN { printf "%.2f", b - a }') "
        bench_log "run $run/$runs $tool: ${s}s, peak RSS ${k} KiB, CPU ${c}s, nginx CPU $(awk -v a="$nginx_before" -v b="$nginx_after" 'BEGIN { printf "%.2f", b - a }')s"
    done
done

# --- Results ---------------------------------------------------------------------------------------------

min_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | head -n 1; }
max_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | tail -n 1; }

printf '\n%siB to nginx on 127.0.0.1 (reads the whole body, then answers), median of %s runs\n' "$size" "$runs"
printf '(MB = 10^6 bytes; RSS in MiB; CPU = user + sys seconds of the client and of nginx in the same run)\n'
for tool in "${tools[@]}"; do
    command_of "$tool"
    printf '  %-15s %s\n' "$tool:" "${cmd[*]}"
done
printf '\n%-15s %9s %17s %9s %10s %10s %8s %10s\n' tool seconds 'range' 'MB/s' 'RSS med' 'RSS max' 'CPU s' 'nginx CPU'
declare -A mbps=() rss_max=()
for tool in "${tools[@]}"; do
    read -r -a s_list <<<"${secs[$tool]}"
    read -r -a k_list <<<"${rss[$tool]}"
    read -r -a c_list <<<"${cpu[$tool]}"
    read -r -a n_list <<<"${server_cpu[$tool]}"
    median_s=$(bench_median "${s_list[@]}")
    mbps[$tool]=$(awk -v b="$bytes" -v s="$median_s" 'BEGIN { printf "%.1f", b / 1e6 / s }')
    rss_max[$tool]=$(max_of "${k_list[@]}")
    printf '%-15s %9.3f %8.3f-%-8.3f %9s %10.1f %10.1f %8.2f %10.2f\n' "$tool" "$median_s" \
        "$(min_of "${s_list[@]}")" "$(max_of "${s_list[@]}")" "${mbps[$tool]}" \
        "$(awk -v k="$(bench_median "${k_list[@]}")" 'BEGIN { print k / 1024 }')" \
        "$(awk -v k="${rss_max[$tool]}" 'BEGIN { print k / 1024 }')" \
        "$(bench_median "${c_list[@]}")" "$(bench_median "${n_list[@]}")"
done

printf '\nthroughput attache/curl: plaintext %sx, stream-gcm %sx\n' \
    "$(bench_ratio "${mbps[attache-plain]}" "${mbps[curl]}")" "$(bench_ratio "${mbps[attache-gcm]}" "${mbps[curl]}")"
printf 'peak RSS of attache upload (max over runs): plaintext %s MB, stream-gcm %s MB\n' \
    "$(awk -v k="${rss_max[attache-plain]}" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')" \
    "$(awk -v k="${rss_max[attache-gcm]}" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')"
if [[ -n "$baseline" ]]; then
    printf 'baseline attache/curl: plaintext %sx, stream-gcm %sx; this build/baseline: plaintext %sx, stream-gcm %sx\n' \
        "$(bench_ratio "${mbps[baseline-plain]}" "${mbps[curl]}")" "$(bench_ratio "${mbps[baseline-gcm]}" "${mbps[curl]}")" \
        "$(bench_ratio "${mbps[attache-plain]}" "${mbps[baseline-plain]}")" \
        "$(bench_ratio "${mbps[attache-gcm]}" "${mbps[baseline-gcm]}")"
    printf 'peak RSS of the baseline (max over runs): plaintext %s MB, stream-gcm %s MB\n' \
        "$(awk -v k="${rss_max[baseline-plain]}" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')" \
        "$(awk -v k="${rss_max[baseline-gcm]}" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')"
fi

printf '\n'
bench_check nginx-upload.plain "$(bench_ratio "${mbps[attache-plain]}" "${mbps[curl]}")"
bench_check nginx-upload.gcm "$(bench_ratio "${mbps[attache-gcm]}" "${mbps[curl]}")"
bench_check nginx-upload.rss "$(awk -v a="${rss_max[attache-plain]}" -v b="${rss_max[attache-gcm]}" \
    'BEGIN { printf "%.1f", (a > b ? a : b) * 1024 / 1e6 }')"
if [[ -n "$baseline" ]]; then
    bench_check nginx-upload.plain.baseline "$(bench_ratio "${mbps[attache-plain]}" "${mbps[baseline-plain]}")"
    bench_check nginx-upload.gcm.baseline "$(bench_ratio "${mbps[attache-gcm]}" "${mbps[baseline-gcm]}")"
fi
