#!/usr/bin/env bash
# Downloads (issue 15): `attache download` against the anchors, all from nginx on 127.0.0.1 serving static
# files (Tests/IntegrationTests/Tools/nginx-sink.sh, GET /files/NAME with sendfile).
#   1. many files: BENCH_FILES files of BENCH_FILE_MB MB with `attache download --from LIST -d DIR
#      --concurrency 8` (a fresh journal each run), `aria2c -j 8 -i LIST` and
#      `curl --parallel --parallel-max 8` with the same list: files/s, and attache's peak RSS;
#   2. one big file: BENCH_BIG_MB MB with `attache download URL -o OUT` and `curl -o OUT`: MB/s.
# Each run starts with an empty output folder and no dirty pages (`sync`, untimed: otherwise a run pays
# for the write-back of the previous one's gigabytes); every output is checked (count and total size)
# after the run; the figures are checked against their bars (rows downloads.* of
# Scripts/bench/thresholds.tsv). Normally started by Scripts/bench.sh, which builds the binaries and
# exports ATTACHE_BIN.
#
# Environment:
#   RUNS=5               runs per tool (medians reported, with the range); tools alternate within a run
#   BENCH_FILES=200      BENCH_FILE_MB=5      BENCH_BIG_MB=2048      BENCH_CONCURRENCY=8
#   BENCH_TMPDIR=/var/tmp   where nginx's prefix (the served files) and the downloads go
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
count=${BENCH_FILES:-200}
file_mb=${BENCH_FILE_MB:-5}
big_mb=${BENCH_BIG_MB:-2048}
concurrency=${BENCH_CONCURRENCY:-8}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}

for value in "$runs" "$count" "$file_mb" "$big_mb" "$concurrency"; do
    [[ "$value" =~ ^[1-9][0-9]*$ ]] || bench_die "RUNS, BENCH_FILES, BENCH_FILE_MB, BENCH_BIG_MB, BENCH_CONCURRENCY must be positive integers"
done
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
command -v aria2c >/dev/null || bench_die "aria2c not found (Scripts/bootstrap.sh --with-bench installs aria2)"
command -v curl >/dev/null || bench_die "curl not found"

mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-downloads.XXXXXX")
bench_on_exit "rm -rf '$work'"
bench_start_nginx "$work/nginx"
base=${BENCH_NGINX_HTTP%/upload}/files

bench_log "creating $count files of $file_mb MB and one of $big_mb MB (random bytes)"
for ((i = 0; i < count; i++)); do
    head -c $((file_mb * 1048576)) /dev/urandom >"$work/nginx/files/$(printf 'f%04d.bin' "$i")"
done
head -c $((big_mb * 1048576)) /dev/urandom >"$work/nginx/files/big.bin"
: >"$work/list"
: >"$work/curl.cfg"
for ((i = 0; i < count; i++)); do
    name=$(printf 'f%04d.bin' "$i")
    printf '%s/%s\n' "$base" "$name" >>"$work/list"
    printf 'url = "%s/%s"\noutput = "%s/out/%s"\n' "$base" "$name" "$work" "$name" >>"$work/curl.cfg"
done
many_bytes=$((count * file_mb * 1048576))

check_many() {
    local n total
    n=$(find "$work/out" -maxdepth 1 -name 'f*.bin' -type f | wc -l)
    total=$(find "$work/out" -maxdepth 1 -name 'f*.bin' -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    ((n == count && total == many_bytes)) || bench_die "$1: $n files, $total bytes in the output (expected $count, $many_bytes)"
}

many_cmd() {
    case "$1" in
        attache) printf '%s\0' "$ATTACHE_BIN" download --from "$work/list" -d "$work/out" --concurrency "$concurrency" \
            --journal "$work/journal.sqlite" --no-progress ;;
        aria2c) printf '%s\0' aria2c -j "$concurrency" -i "$work/list" -d "$work/out" -q --file-allocation=none \
            --allow-overwrite=true --auto-file-renaming=false ;;
        curl) printf '%s\0' curl -sS --fail --parallel --parallel-max "$concurrency" -K "$work/curl.cfg" ;;
    esac
}

big_cmd() {
    case "$1" in
        attache) printf '%s\0' "$ATTACHE_BIN" download "$base/big.bin" -o "$work/out/big.bin" --no-progress ;;
        curl) printf '%s\0' curl -sS --fail -o "$work/out/big.bin" "$base/big.bin" ;;
    esac
}

# Warm-up: the files are in the page cache and every tool has run once.
bench_log "warm-up"
for tool in attache aria2c curl; do
    rm -rf "$work/out" "$work/journal.sqlite"*; mkdir -p "$work/out"
    mapfile -d '' cmd < <(many_cmd "$tool")
    "${cmd[@]}" >/dev/null 2>"$work/err" || { tail -n 20 "$work/err" >&2; bench_die "$tool failed: ${cmd[*]}"; }
    check_many "$tool"
done

declare -A fps=() rss=() mbps=() big_rss=()
for ((run = 1; run <= runs; run++)); do
    for tool in attache aria2c curl; do
        rm -rf "$work/out" "$work/journal.sqlite"*; mkdir -p "$work/out"
        mapfile -d '' cmd < <(many_cmd "$tool")
        sync  # the previous run's dirty pages are written back before this one is timed
        figures=$(bench_measure "${cmd[@]}" 2>"$work/err") || { tail -n 20 "$work/err" >&2; bench_die "$tool failed"; }
        check_many "$tool"
        read -r s k <<<"$figures"
        fps[$tool]+="$(awk -v n="$count" -v s="$s" 'BEGIN { printf "%.2f", n / s }') "
        rss[$tool]+="$k "
        bench_log "run $run/$runs $tool: $count files in ${s}s, peak RSS ${k} KiB"
    done
    for tool in attache curl; do
        rm -rf "$work/out"; mkdir -p "$work/out"
        mapfile -d '' cmd < <(big_cmd "$tool")
        sync
        figures=$(bench_measure "${cmd[@]}" 2>"$work/err") || { tail -n 20 "$work/err" >&2; bench_die "$tool (big) failed"; }
        size=$(stat -c %s "$work/out/big.bin")
        ((size == big_mb * 1048576)) || bench_die "$tool (big): $size bytes"
        read -r s k <<<"$figures"
        mbps[$tool]+="$(awk -v m="$big_mb" -v s="$s" 'BEGIN { printf "%.1f", m / s }') "
        big_rss[$tool]+="$k "
        bench_log "run $run/$runs $tool: $big_mb MB in ${s}s, peak RSS ${k} KiB"
    done
done

min_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | head -n 1; }
max_of() { printf '%s\n' "$@" | LC_ALL=C sort -g | tail -n 1; }

printf '\n%s files of %s MB from nginx on 127.0.0.1, %s at a time, median of %s runs\n' "$count" "$file_mb" "$concurrency" "$runs"
printf '  attache: %s download --from LIST -d DIR --concurrency %s --journal NEW --no-progress\n' "$ATTACHE_BIN" "$concurrency"
printf '  aria2c:  aria2c -j %s -i LIST -d DIR -q --file-allocation=none --allow-overwrite=true\n' "$concurrency"
printf '  curl:    curl -sS --fail --parallel --parallel-max %s -K CONFIG (url/output pairs)\n' "$concurrency"
printf '%-8s %9s %15s %10s\n' tool files/s range 'RSS MiB'
declare -A median_fps=()
for tool in attache aria2c curl; do
    read -r -a f <<<"${fps[$tool]}"
    read -r -a k <<<"${rss[$tool]}"
    median_fps[$tool]=$(bench_median "${f[@]}")
    printf '%-8s %9.2f %7.2f-%-7.2f %10.1f\n' "$tool" "${median_fps[$tool]}" "$(min_of "${f[@]}")" "$(max_of "${f[@]}")" \
        "$(awk -v k="$(bench_median "${k[@]}")" 'BEGIN { print k / 1024 }')"
done
printf 'files/s attache/aria2c: %sx   attache/curl: %sx\n' \
    "$(bench_ratio "${median_fps[attache]}" "${median_fps[aria2c]}")" \
    "$(bench_ratio "${median_fps[attache]}" "${median_fps[curl]}")"
read -r -a k <<<"${rss[attache]}"
many_rss=$(awk -v k="$(bench_median "${k[@]}")" 'BEGIN { printf "%.1f", k / 1024 }')
printf 'attache peak RSS at concurrency %s: %s MiB\n' "$concurrency" "$many_rss"

printf '\none file of %s MB, median of %s runs\n' "$big_mb" "$runs"
printf '  attache: %s download URL -o OUT --no-progress\n  curl:    curl -sS --fail -o OUT URL\n' "$ATTACHE_BIN"
printf '%-8s %9s %15s %10s\n' tool MB/s range 'RSS MiB'
declare -A median_mbps=()
for tool in attache curl; do
    read -r -a m <<<"${mbps[$tool]}"
    read -r -a k <<<"${big_rss[$tool]}"
    median_mbps[$tool]=$(bench_median "${m[@]}")
    printf '%-8s %9.1f %7.1f-%-7.1f %10.1f\n' "$tool" "${median_mbps[$tool]}" "$(min_of "${m[@]}")" "$(max_of "${m[@]}")" \
        "$(awk -v k="$(bench_median "${k[@]}")" 'BEGIN { print k / 1024 }')"
done
printf 'MB/s attache/curl: %sx\n' "$(bench_ratio "${median_mbps[attache]}" "${median_mbps[curl]}")"

printf '\n'
bench_check downloads.many.curl "$(bench_ratio "${median_fps[attache]}" "${median_fps[curl]}")"
bench_check downloads.many.aria2c "$(bench_ratio "${median_fps[attache]}" "${median_fps[aria2c]}")"
bench_check downloads.rss "$many_rss"
bench_check downloads.big "$(bench_ratio "${median_mbps[attache]}" "${median_mbps[curl]}")"
