#!/usr/bin/env bash
# Resumable uploads: `attache upload --resumable tus|ietf` against one multipart POST of the same file to
# the reference server on 127.0.0.1 (the anchor), alternating run by run; then the bytes a resumed upload
# sends after the server cuts its connection at 50 % of the file (from the server's resumable log, not
# the client's counters). Each figure is then checked against its bar (rows resumable.* of
# Scripts/bench/thresholds.tsv). Normally started by Scripts/bench.sh, which builds the binaries and
# exports ATTACHE_BIN and ATTACHE_SERVER_BIN.
#
# Environment:
#   RUNS=3                          runs per mode (the median is reported)
#   SIZE=1G                         the file size (K/M/G are powers of 1024)
#   MODES="multipart tus tus-nochecksum ietf"
#   BENCH_TMPDIR=/var/tmp           where the file and the server's store go (/tmp is often in RAM)
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-3}
size=${SIZE:-1G}
modes=${MODES:-"multipart tus tus-nochecksum ietf"}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}

bench_positive runs
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
bytes=$(numfmt --from=iec "$size" 2>/dev/null) || bench_die "bad SIZE '$size'"
for mode in $modes; do
    case "$mode" in multipart | tus | tus-nochecksum | ietf) ;; *) bench_die "unknown mode '$mode' in MODES" ;; esac
done

mkdir -p "$tmp_parent"
avail=$(df --output=avail -B1 "$tmp_parent" | tail -n 1 | tr -d ' ')
need=$((3 * bytes + 256 * 1024 * 1024))
((avail > need)) || bench_die "$tmp_parent has $(numfmt --to=iec "$avail")B free, needs $(numfmt --to=iec "$need")B"

work=$(mktemp -d "$tmp_parent/attache-bench-resumable.XXXXXX")
bench_on_exit "rm -rf '$work'"
bench_log "creating a ${size}iB file of random bytes"
head -c "$bytes" /dev/urandom >"$work/file"

store="$work/store"
bench_start_server "$store"
upload_url="$BENCH_URL/upload"

clear_store() {
    find "$store" -mindepth 1 ! -type d -delete
}

mode_args() {
    case "$1" in
        multipart) ;;
        tus) printf '%s\n' --resumable tus --resumable-threshold 0 ;;
        tus-nochecksum) printf '%s\n' --resumable tus --resumable-threshold 0 --no-resumable-checksums ;;
        ietf) printf '%s\n' --resumable ietf --resumable-threshold 0 ;;
    esac
}

declare -A secs=()
for ((run = 1; run <= runs; run++)); do
    for mode in $modes; do
        clear_store
        mapfile -t extra < <(mode_args "$mode")
        figures=$(bench_measure "$ATTACHE_BIN" upload "$work/file" --url "$upload_url" --no-progress "${extra[@]}" \
            2>"$work/err") || { tail -n 20 "$work/err" >&2; bench_die "attache upload ($mode) failed"; }
        read -r s _ <<<"$figures"
        secs[$mode]+="$s "
        bench_log "run $run/$runs $mode: ${s}s"
    done
done
clear_store
bench_stop_process "$BENCH_SERVER_PID"

# The resume: the server cuts the append that crosses 50 % of the sealed body and keeps what it received.
sealed=$((bytes + 60 + 16 * ((bytes + 65535) / 65536)))
cut=$((sealed / 2))
log="$work/resumable.log"
bench_start_server "$work/store-cut" --append-fault "cut:at=$cut" --resumable-log "$log"
"$ATTACHE_BIN" upload "$work/file" --url "$BENCH_URL/upload" --no-progress --resumable tus --resumable-threshold 0 \
    >/dev/null 2>"$work/err" || { tail -n 20 "$work/err" >&2; bench_die "the cut upload failed"; }
read -r total after cuts < <(python3 - "$log" "$cut" <<'EOF'
import json, sys
total = after = cuts = 0
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event.get("event") != "append":
        continue
    received = event.get("received", 0)
    total += received
    if event.get("offset", 0) >= int(sys.argv[2]):
        after += received
    if event.get("status") == "dropped":
        cuts += 1
print(total, after, cuts)
EOF
)

printf '\nResumable uploads to attache-server on 127.0.0.1, %siB file, median of %s runs (MB = 10^6 bytes)\n' "$size" "$runs"
printf '  %s upload FILE --url URL/upload [--resumable tus|ietf --resumable-threshold 0 [--no-resumable-checksums]]\n\n' "$ATTACHE_BIN"
printf '%-16s %10s %10s %12s\n' mode seconds 'MB/s' 'vs multipart'
declare -A rate=()
for mode in $modes; do
    read -r -a list <<<"${secs[$mode]}"
    median=$(bench_median "${list[@]}")
    rate[$mode]=$(awk -v b="$bytes" -v s="$median" 'BEGIN { printf "%.1f", b / 1e6 / s }')
done
for mode in $modes; do
    read -r -a list <<<"${secs[$mode]}"
    ratio=-
    [[ -n "${rate[multipart]:-}" ]] && ratio="$(bench_ratio "${rate[$mode]}" "${rate[multipart]}")x"
    printf '%-16s %10.3f %10s %12s\n' "$mode" "$(bench_median "${list[@]}")" "${rate[$mode]}" "$ratio"
done
printf '\nCut at 50 %% (byte %s of %s sealed, --append-fault cut:at=%s), resumed by the same process:\n' "$cut" "$sealed" "$cut"
printf '  cuts: %s; bytes received in all: %s (%s of the sealed body)\n' "$cuts" "$total" \
    "$(awk -v a="$total" -v b="$sealed" 'BEGIN { printf "%.4f", a / b }')"
printf '  sent again after the cut: %s bytes = %s %% of the sealed body\n' "$after" \
    "$(awk -v a="$after" -v b="$sealed" 'BEGIN { printf "%.2f", 100 * a / b }')"

printf '\n'
if [[ -n "${rate[multipart]:-}" ]]; then
    for mode in $modes; do
        [[ "$mode" == multipart ]] || bench_check "resumable.$mode" "$(bench_ratio "${rate[$mode]}" "${rate[multipart]}")"
    done
fi
bench_check resumable.resent "$(awk -v a="$after" -v b="$sealed" 'BEGIN { printf "%.2f", 100 * a / b }')"
