#!/usr/bin/env bash
# Chat-native outputs (issue 31): what the placeholders cost next to a 12 MP JPEG recompress, and the
# `matrix` seal scheme against `openssl speed` on the same machine, in the same run.
#   Scripts/bench.sh chat            (1 GiB)
#   SIZE_MB=256 RUNS=3 Scripts/bench/chat.sh
# Prints the placeholder cost (medians of in-process thread CPU, `attache recompress --measure-placeholders`),
# matrix encrypt throughput (best of RUNS, file to file) with its ratio to `openssl speed -evp aes-256-ctr`
# and to `openssl speed -evp sha256` (the format hashes every ciphertext byte), and the encrypt's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."

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
"$BIN" recompress "$WORK/photo.jpg" -o /dev/null --measure-placeholders "$REPEATS" | sed 's/^/  /'

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
best=""
for _ in $(seq "$RUNS"); do
    rm -f "$WORK/out" "$WORK/info.json"
    sync
    start=$(date +%s.%N)
    "$BIN" encrypt "$WORK/plain" -o "$WORK/out" --key-file "$WORK/key" --scheme matrix --file-info "$WORK/info.json" >/dev/null
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc -l)
    if [[ -z $best ]] || (($(echo "$t < $best" | bc -l))); then best=$t; fi
done
ctr=$(speed_gbps aes-256-ctr)
sha=$(speed_gbps sha256)
gbps=$(echo "scale=3; $BYTES / $best / 1000000000" | bc -l)
rm -f "$WORK/out" "$WORK/info.json"
rss=$(/usr/bin/time -f %M "$BIN" encrypt "$WORK/plain" -o "$WORK/out" --key-file "$WORK/key" --scheme matrix 2>&1 >/dev/null | tail -1)
printf '  %-46s %7.3f GB/s\n' "attache encrypt --scheme matrix (best of $RUNS)" "$gbps"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "openssl speed -evp aes-256-ctr (16 KiB)" "$ctr" "$(echo "$gbps / $ctr" | bc -l)"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "openssl speed -evp sha256 (16 KiB)" "$sha" "$(echo "$gbps / $sha" | bc -l)"
printf '  %-46s %7.3f GB/s  -> %.2fx\n' "both in series, 1/(1/ctr + 1/sha)" "$(echo "1 / (1 / $ctr + 1 / $sha)" | bc -l)" \
    "$(echo "$gbps * (1 / $ctr + 1 / $sha)" | bc -l)"
printf '  %-46s %7.1f MB\n' "peak RSS, attache encrypt --scheme matrix" "$(echo "$rss / 1000" | bc -l)"
