#!/usr/bin/env bash
# Chat-native outputs (issue 31): what the placeholders cost next to a 12 MP JPEG recompress, and the
# `matrix` seal scheme against `openssl speed` on the same machine, in the same run.
#   Scripts/bench.sh chat            (1 GiB)
#   SIZE_MB=256 RUNS=3 Scripts/bench/chat.sh
# Prints the placeholder cost (medians of in-process thread CPU, `attache recompress --measure-placeholders`),
# matrix encrypt throughput (best of RUNS, file to file, per user-CPU second as openssl speed counts) with its ratio to `openssl speed -evp aes-256-ctr`
# and to `openssl speed -evp sha256` (the format hashes every ciphertext byte), and the encrypt's peak RSS;
# then each figure against its bar (rows chat.* of Scripts/bench/thresholds.tsv).
set -euo pipefail
cd "$(dirname "$0")/../.."
# bench_check only: this script keeps its own EXIT trap.
. Scripts/bench/lib.sh --thresholds-only

SIZE_MB=${SIZE_MB:-1024}
RUNS=${RUNS:-3}
REPEATS=${REPEATS:-15}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-chat.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if [ -n "${ATTACHE_BIN:-}" ]; then
    BIN=$ATTACHE_BIN
else
    echo "== building attache (release)"
    swift build -c release --static-swift-stdlib --product attache >/dev/null
    BIN=$(swift build -c release --static-swift-stdlib --show-bin-path)/attache
fi

echo "== placeholders: a 12 MP photo (the images benchmark's), $REPEATS runs of each variant"
convert -size 4000x3000 -seed 7 plasma:fractal -blur 0x1 +noise Gaussian -attenuate 0.3 \
    -quality 90 -sampling-factor 2x2 "$WORK/photo.jpg"
placeholders=$("$BIN" recompress "$WORK/photo.jpg" -o /dev/null --measure-placeholders "$REPEATS")
printf '%s\n' "$placeholders" | sed 's/^/  /'
# "placeholder step alone: 0.17 ms = 0.15 % of the recompress"
step_share=$(printf '%s\n' "$placeholders" | sed -n 's/^placeholder step alone: .* = \(-\{0,1\}[0-9.]*\) % of the recompress$/\1/p')

echo "== matrix seal: $SIZE_MB MiB of random data"
head -c $((SIZE_MB * 1024 * 1024)) /dev/urandom >"$WORK/plain"
BYTES=$(stat -c %s "$WORK/plain")
"$BIN" encrypt "$WORK/plain" -o "$WORK/warm" --key-file "$WORK/key" --new-key --scheme matrix >/dev/null
rm -f "$WORK/warm"

# openssl speed reports k bytes per second (1000s) per block size; the 16384-byte column, in GB/s.
speed_gbps() {
    local k
    k=$(openssl speed -evp "$1" -seconds 2 -bytes 16384 2>/dev/null | awk 'NF > 1 && $1 !~ /^(type|Doing|version|built|options|compiler|CPUINFO)/ {v=$NF} END {sub("k","",v); print v}')
    echo "scale=3; $k * 1000 / 1000000000" | bc -l
}
# Each run: wall seconds, user and system CPU seconds and peak RSS (GNU time). `openssl speed` reports
# bytes per user-CPU second, so the ratios below are per CPU second too (wall time on a busy machine
# measures the machine); the wall-clock figure is printed beside them.
best_wall="" best_cpu="" best_user=""
for _ in $(seq "$RUNS"); do
    rm -f "$WORK/out" "$WORK/info.json"
    sync
    read -r wall user sys rss < <(/usr/bin/time -f '%e %U %S %M' "$BIN" encrypt "$WORK/plain" -o "$WORK/out" \
        --key-file "$WORK/key" --scheme matrix --file-info "$WORK/info.json" 2>&1 >/dev/null | tail -1)
    cpu=$(echo "$user + $sys" | bc -l)
    if [[ -z $best_cpu ]] || (($(echo "$cpu < $best_cpu" | bc -l))); then best_cpu=$cpu; best_user=$user; fi
    if [[ -z $best_wall ]] || (($(echo "$wall < $best_wall" | bc -l))); then best_wall=$wall; fi
done
ctr=$(speed_gbps aes-256-ctr)
sha=$(speed_gbps sha256)
gbps=$(echo "scale=3; $BYTES / $best_user / 1000000000" | bc -l)
cpu_gbps=$(echo "scale=3; $BYTES / $best_cpu / 1000000000" | bc -l)
wall_gbps=$(echo "scale=3; $BYTES / $best_wall / 1000000000" | bc -l)
rm -f "$WORK/out" "$WORK/info.json"
rss=$(/usr/bin/time -f %M "$BIN" encrypt "$WORK/plain" -o "$WORK/out" --key-file "$WORK/key" --scheme matrix 2>&1 >/dev/null | tail -1)
head -c 1024 /dev/urandom >"$WORK/small"
rss_small=$(/usr/bin/time -f %M "$BIN" encrypt "$WORK/small" -o "$WORK/out-small" --key-file "$WORK/key" --scheme matrix 2>&1 >/dev/null | tail -1)
printf '  %-46s %7.3f GB/s per user-CPU second (%.3f per user+sys, %.3f wall)\n' \
    "attache encrypt --scheme matrix (best of $RUNS)" "$gbps" "$cpu_gbps" "$wall_gbps"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "openssl speed -evp aes-256-ctr (16 KiB)" "$ctr" "$(echo "$gbps / $ctr" | bc -l)"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "openssl speed -evp sha256 (16 KiB)" "$sha" "$(echo "$gbps / $sha" | bc -l)"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "both in series, 1/(1/ctr + 1/sha)" "$(echo "1 / (1 / $ctr + 1 / $sha)" | bc -l)" \
    "$(echo "$gbps * (1 / $ctr + 1 / $sha)" | bc -l)"
printf '  %-46s %7.1f MB (%.1f MB for 1 KiB)\n' "peak RSS, attache encrypt --scheme matrix" \
    "$(echo "$rss / 1000" | bc -l)" "$(echo "$rss_small / 1000" | bc -l)"

echo "== bars"
bench_check chat.placeholders "${step_share:-n/a}"
bench_check chat.matrix "$(printf '%.2f' "$(echo "$gbps / $ctr" | bc -l)")"
bench_check chat.matrix.rss "$(printf '%.1f' "$(echo "$rss / 1000" | bc -l)")"
