#!/usr/bin/env bash
# Upload throughput and peak memory: `attache upload` against `curl -F` (the anchor), both posting the same
# random file to the reference server on 127.0.0.1, alternating run by run so drift hits both alike.
# Normally started by Scripts/bench.sh, which builds the binaries and exports ATTACHE_BIN and
# ATTACHE_SERVER_BIN.
#
# Environment:
#   RUNS=5                 runs per tool and size (the median is reported)
#   SIZES="10M 1G"         file sizes (K/M/G are powers of 1024)
#   TOOLS="attache curl"   which uploaders to run
#   ATTACHE_UPLOAD_ARGS    extra arguments for attache upload, e.g. "--scheme none"
#   BENCH_TMPDIR=/var/tmp  where the test files and the server's store go (/tmp is often in RAM)
#   BENCH_URL              post to this server instead of starting attache-server (nothing is cleaned
#                          up on that server between runs)
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
sizes=${SIZES:-"10M 1G"}
tools=${TOOLS:-"attache curl"}
read -r -a attache_args <<<"${ATTACHE_UPLOAD_ARGS:-}"
tmp_parent=${BENCH_TMPDIR:-/var/tmp}

bench_positive runs
for tool in $tools; do
    case "$tool" in
        attache)
            [[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
                || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
            ;;
        curl) command -v curl >/dev/null || bench_die "curl not found" ;;
        *) bench_die "unknown tool '$tool' in TOOLS (known: attache curl)" ;;
    esac
done

# "10M" means 10 MiB to numfmt and head, so the labels say so.
label() {
    if [[ "$1" =~ ^[0-9]+[KMGT]$ ]]; then printf '%siB' "$1"; else printf '%s B' "$1"; fi
}

declare -A bytes_of=()
total=0
largest=0
for size in $sizes; do
    b=$(numfmt --from=iec "$size" 2>/dev/null) || bench_die "bad size '$size' in SIZES"
    ((b > 0)) || bench_die "size '$size' is empty"
    bytes_of[$size]=$b
    total=$((total + b))
    if ((b > largest)); then largest=$b; fi
done

# The test files, plus one stored copy of the largest, plus slack.
mkdir -p "$tmp_parent"
avail=$(df --output=avail -B1 "$tmp_parent" | tail -n 1 | tr -d ' ')
need=$((total + largest + 256 * 1024 * 1024))
((avail > need)) || bench_die "$tmp_parent has $(numfmt --to=iec "$avail")B free, needs $(numfmt --to=iec "$need")B"

work=$(mktemp -d "$tmp_parent/attache-bench-upload.XXXXXX")
bench_on_exit "rm -rf '$work'"

store=""
if [[ -z "${BENCH_URL:-}" ]]; then
    store="$work/store"
    bench_start_server "$store"
else
    bench_log "posting to the given server $BENCH_URL (not started or cleaned by this script)"
fi
upload_url="$BENCH_URL/upload"

for size in $sizes; do
    bench_log "creating a $(label "$size") file of random bytes"
    head -c "${bytes_of[$size]}" /dev/urandom >"$work/file-$size"
done

# seconds and RSS per (tool, size), as space-separated lists
declare -A secs=() rss=()

# Removes stored uploads but keeps the server's own folder layout (it keeps files/, tmp/ and so on open).
clear_store() {
    [[ -n "$store" && -d "$store" ]] && find "$store" -mindepth 1 ! -type d -delete
    return 0
}

run_attache() {
    local file=$1 err="$work/attache.err" figures status
    figures=$(bench_measure "$ATTACHE_BIN" upload "$file" --url "$upload_url" "${attache_args[@]}" \
        2>"$err") && status=0 || status=$?
    if ((status != 0)); then
        tail -n 20 "$err" >&2
        bench_die "attache upload failed (exit $status): $ATTACHE_BIN upload $file --url $upload_url ${attache_args[*]}"
    fi
    printf '%s\n' "$figures"
}

run_curl() {
    local file=$1 err="$work/curl.err" figures status code
    figures=$(BENCH_STDOUT="$work/curl.code" bench_measure \
        curl -sS -o /dev/null -w '%{http_code}' -H 'Expect:' -F "file=@$file" "$upload_url" 2>"$err") \
        && status=0 || status=$?
    code=$(cat "$work/curl.code" 2>/dev/null || true)
    if ((status != 0)) || [[ "$code" != 2* ]]; then
        tail -n 20 "$err" >&2
        bench_die "curl upload failed (exit $status, HTTP ${code:-none})"
    fi
    printf '%s\n' "$figures"
}

for size in $sizes; do
    file="$work/file-$size"
    for ((run = 1; run <= runs; run++)); do
        for tool in $tools; do
            clear_store
            figures=$("run_$tool" "$file")
            read -r s k <<<"$figures"
            secs[$tool,$size]+="$s "
            rss[$tool,$size]+="$k "
            bench_log "run $run/$runs $tool $(label "$size"): ${s}s, peak RSS ${k} KiB"
        done
    done
    rm -f "$file"
    clear_store
done

# --- Results ---------------------------------------------------------------------------------------------

printf '\nUpload to %s, median of %s runs (MB = 10^6 bytes, RSS in MiB)\n' \
    "$([[ -n "$store" ]] && echo "attache-server on 127.0.0.1" || echo "$BENCH_URL")" "$runs"
[[ " $tools " == *" attache "* ]] \
    && printf '  attache: %s upload FILE --url URL/upload %s\n' "$ATTACHE_BIN" "${attache_args[*]}"
[[ " $tools " == *" curl "* ]] && printf '  curl:    curl -sS -o /dev/null -H Expect: -F file=@FILE URL/upload\n'
printf '\n'
printf '%-8s %8s %10s %10s %12s\n' tool size seconds 'MB/s' 'peak RSS'
declare -A mbps_median=() rss_median=()
for size in $sizes; do
    for tool in $tools; do
        read -r -a s_list <<<"${secs[$tool,$size]}"
        read -r -a k_list <<<"${rss[$tool,$size]}"
        rates=()
        for s in "${s_list[@]}"; do
            rates+=("$(awk -v b="${bytes_of[$size]}" -v s="$s" 'BEGIN { printf "%.3f", b / 1e6 / s }')")
        done
        median_s=$(bench_median "${s_list[@]}")
        median_rate=$(bench_median "${rates[@]}")
        median_kib=$(bench_median "${k_list[@]}")
        mbps_median[$tool,$size]=$median_rate
        rss_median[$tool,$size]=$median_kib
        printf '%-8s %8s %10.3f %10.1f %8.1f MiB\n' "$tool" "$(label "$size")" "$median_s" "$median_rate" \
            "$(awk -v k="$median_kib" 'BEGIN { print k / 1024 }')"
    done
done

if [[ " $tools " == *" attache "* && " $tools " == *" curl "* ]]; then
    printf '\n'
    for size in $sizes; do
        printf 'attache/curl at %s: throughput %sx, peak RSS %sx\n' "$(label "$size")" \
            "$(bench_ratio "${mbps_median[attache,$size]}" "${mbps_median[curl,$size]}")" \
            "$(bench_ratio "${rss_median[attache,$size]}" "${rss_median[curl,$size]}")"
    done
fi
# The bars (Scripts/bench/thresholds.tsv) are for the largest size.
for size in $sizes; do
    ((bytes_of[$size] == largest)) || continue
    [[ " $tools " == *" attache "* ]] || break
    [[ " $tools " == *" curl "* ]] \
        && bench_check upload.throughput "$(bench_ratio "${mbps_median[attache,$size]}" "${mbps_median[curl,$size]}")"
    bench_check upload.rss "$(awk -v k="${rss_median[attache,$size]}" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }')"
    break
done
