#!/usr/bin/env bash
# Benchmark of `attache batch` against an `xargs -P2 curl -F` loop over the same files, both posting to
# the reference server on 127.0.0.1. Called as `Scripts/bench.sh batch`, or directly.
#
# The file set (made once and reused): mostly small photos and voice notes, some large files.
#   BENCH_FILES     number of files (default 2000)
#   BENCH_DIR       work folder (default $TMPDIR/attache-bench-batch)
#   BENCH_CONCURRENCY  attache --concurrency (default 8)
#   BENCH_LARGE_MB  size of each large file in MB (default 40); 1 in 200 files is large
#   BENCH_STORE     where the server stores uploads (default /dev/shm/attache-bench-store when /dev/shm is
#                   a writable tmpfs, else $BENCH_DIR/store). On ext4, creating thousands of files right
#                   after deleting the previous run's thousands costs the server seconds of inode search
#                   (recently_deleted in the kernel), which would be measured as the client's time.
#   ATTACHE_BIN, ATTACHE_SERVER_BIN  binaries to use (Scripts/bench.sh exports them); built here otherwise
#
# Prints, per run: wall time, files/s, MB/s, CPU utilisation of the client (user+sys / wall; 200 % =
# both cores), peak RSS of the client, and the ratio to the curl loop; then each figure against its bar
# (rows batch.* of Scripts/bench/thresholds.tsv). Needs: swift, curl, ImageMagick (convert), sox, GNU
# time (/usr/bin/time).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
# bench_check only: this script keeps its own EXIT trap.
. Scripts/bench/lib.sh --thresholds-only
N=${BENCH_FILES:-2000}
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-batch}
CONCURRENCY=${BENCH_CONCURRENCY:-8}
LARGE_MB=${BENCH_LARGE_MB:-40}
FILES=$WORK/files-$N
if [ -n "${BENCH_STORE:-}" ]; then
    STORE=$BENCH_STORE
elif [ -d /dev/shm ] && [ -w /dev/shm ]; then
    STORE=/dev/shm/attache-bench-store
else
    STORE=$WORK/store
fi

need() { command -v "$1" >/dev/null || { echo "bench batch: $1 is required" >&2; exit 69; }; }
need curl; need convert; need sox
[ -x /usr/bin/time ] || { echo "bench batch: GNU time (/usr/bin/time) is required (apt-get install time)" >&2; exit 69; }

if [ -n "${ATTACHE_BIN:-}" ] && [ -n "${ATTACHE_SERVER_BIN:-}" ]; then
    ATTACHE=$ATTACHE_BIN
    SERVER=$ATTACHE_SERVER_BIN
else
    swift build -c release --static-swift-stdlib --product attache >&2
    swift build -c release --static-swift-stdlib --product attache-server >&2
    BIN=$(swift build -c release --static-swift-stdlib --show-bin-path)
    ATTACHE=$BIN/attache
    SERVER=$BIN/attache-server
fi

# --- The file set -----------------------------------------------------------------------------------
make_files() {
    local seeds=$WORK/seeds
    rm -rf "$FILES.tmp" && mkdir -p "$FILES.tmp"/{photos,voice,files,large} "$seeds"
    echo "bench batch: making $N files in $FILES" >&2
    # A few distinct photos (noise + gradients compress like photos do, not like flat colour), sized as
    # chat clients send them: 0.7 to 2 megapixels, half of them over the 1280 px the pipeline scales to.
    for i in $(seq 1 12); do
        local w=$((600 + i * 110)) h=$((450 + i * 82))
        [ -f "$seeds/photo$i.jpg" ] || convert -size ${w}x${h} plasma:fractal -seed $i -quality 85 "$seeds/photo$i.jpg"
    done
    for i in $(seq 1 6); do
        [ -f "$seeds/voice$i.ogg" ] || sox -n -r 16000 -c 1 "$seeds/voice$i.ogg" synth $((3 + i * 4)) sine $((200 + i * 50)) vol 0.5
    done
    for i in $(seq 1 4); do
        [ -f "$seeds/doc$i.bin" ] || head -c $((20000 * i)) /dev/urandom > "$seeds/doc$i.bin"
    done
    # Each file is a seed plus a unique tail, so that no two files are the same bytes.
    for i in $(seq 1 "$N"); do
        local tail="attache-bench-$i"
        if [ $((i % 200)) -eq 0 ]; then
            head -c $((LARGE_MB * 1000000)) /dev/urandom > "$FILES.tmp/large/big$i.bin"
        elif [ $((i % 10)) -lt 6 ]; then
            { cat "$seeds/photo$((i % 12 + 1)).jpg"; printf '%s' "$tail"; } > "$FILES.tmp/photos/img$i.jpg"
        elif [ $((i % 10)) -lt 9 ]; then
            { cat "$seeds/voice$((i % 6 + 1)).ogg"; printf '%s' "$tail"; } > "$FILES.tmp/voice/note$i.ogg"
        else
            { cat "$seeds/doc$((i % 4 + 1)).bin"; printf '%s' "$tail"; } > "$FILES.tmp/files/doc$i.bin"
        fi
    done
    mv "$FILES.tmp" "$FILES"
}
[ -d "$FILES" ] || make_files
TOTAL_BYTES=$(find "$FILES" -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
COUNT=$(find "$FILES" -type f | wc -l)
echo "bench batch: $COUNT files, $((TOTAL_BYTES / 1000000)) MB, concurrency $CONCURRENCY, $(nproc) cores, server store $STORE" >&2

# --- The server ---------------------------------------------------------------------------------------
SERVER_PID=
start_server() {
    rm -rf "$STORE"
    local out=$WORK/server.out
    "$SERVER" --port 0 --store "$STORE" --log-level warning > "$out" 2> "$WORK/server.err" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        if grep -q 'listening on' "$out" 2>/dev/null; then break; fi
        sleep 0.1
    done
    URL="$(sed -n 's/^attache-server listening on //p' "$out" | head -1)/upload"
    [ "$URL" != /upload ] || { echo "bench batch: the server did not start" >&2; cat "$WORK/server.err" >&2; exit 69; }
}
# CPU seconds the server has used so far (user + sys, from /proc).
SERVER_CPU=0
stop_server() {
    if [ -n "$SERVER_PID" ] && [ -r "/proc/$SERVER_PID/stat" ]; then
        SERVER_CPU=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$SERVER_PID/stat")
    fi
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    SERVER_PID=
}
trap 'stop_server; rm -rf "$STORE"' EXIT

# --- Measuring ------------------------------------------------------------------------------------
# Runs "$@" under GNU time; prints "wall user sys maxrss_kb".
measure() {
    local t=$WORK/time.out
    /usr/bin/time -f '%e %U %S %M' -o "$t" "$@" > "$WORK/run.out" 2> "$WORK/run.err" || {
        echo "bench batch: '$1' failed:" >&2; tail -5 "$WORK/run.err" >&2; }
    cat "$t" | tail -1
}

report() { # name wall user sys rss baseline_files_per_s   (server CPU from the last stop_server)
    awk -v name="$1" -v wall="$2" -v user="$3" -v sys="$4" -v rss="$5" -v base="$6" -v n="$COUNT" -v bytes="$TOTAL_BYTES" \
        -v server="$SERVER_CPU" '
        BEGIN {
            fps = n / wall; mbs = bytes / wall / 1e6; cpu = (user + sys) / wall * 100
            ratio = base > 0 ? sprintf("%.2fx", fps / base) : (base < 0 ? "-" : "1.00x")
            printf "%-34s %8.2f s %9.1f files/s %8.1f MB/s %6.0f %% CPU %7.1f MiB RSS %8s %7.0f %%\n", name, wall, fps, mbs, cpu, rss / 1024, ratio, server / wall * 100
        }'
}

files_per_second() { awk -v wall="$1" -v n="$COUNT" 'BEGIN { printf "%.3f", n / wall }'; }
# The figures the bars name, from the last measured run (wall user sys rss): printed after the table.
checks=()
ratio_to_curl() { awk -v wall="$wall" -v n="$COUNT" -v base="$BASE" 'BEGIN { printf "%.2f", n / wall / base }'; }
rss_mb() { awk -v k="$rss" 'BEGIN { printf "%.1f", k * 1024 / 1e6 }'; }

# CPU = the client's user + sys over wall time (200 % = both cores); server = the reference server's, same
# run (the two share the machine's two cores).
printf '%-34s %10s %15s %13s %10s %15s %8s %8s\n' run wall files/s MB/s CPU "peak RSS" "vs curl" server

# Baseline: two curl processes at a time, one per file.
start_server
read -r wall user sys rss < <(measure sh -c "find '$FILES' -type f -print0 | xargs -0 -P2 -I{} curl -sS -o /dev/null -F 'file=@{}' '$URL'")
stop_server
BASE=$(files_per_second "$wall")
report "xargs -P2 curl -F" "$wall" "$user" "$sys" "$rss" 0

run_batch() { # name extra-args...
    local name=$1; shift
    start_server
    rm -f "$WORK/journal.sqlite"*
    read -r wall user sys rss < <(measure "$ATTACHE" batch "$FILES" --url "$URL" --journal "$WORK/journal.sqlite" \
        --concurrency "$CONCURRENCY" --no-progress "$@")
    stop_server
    report "$name" "$wall" "$user" "$sys" "$rss" "$BASE"
    tail -3 "$WORK/run.out" | sed 's/^/    /' >&2
}

# Transforms off, when this build has a switch for them; the full pipeline otherwise.
# (The help is captured first: `grep -q` closing the pipe early would fail the pipeline under pipefail.)
batch_help=$("$ATTACHE" batch --help 2>&1 || true)
if grep -q -- '--no-transform' <<< "$batch_help"; then
    run_batch "attache batch (transforms off)" --no-transform
    checks+=("$(bench_check batch.transforms-off "$(ratio_to_curl)")")
    run_batch "attache batch (full pipeline)"
    checks+=("$(bench_check batch.full-pipeline "$(ratio_to_curl)")" "$(bench_check batch.rss "$(rss_mb)")")
else
    run_batch "attache batch (pipeline as built)"
    checks+=("$(bench_check batch.full-pipeline "$(ratio_to_curl)")" "$(bench_check batch.rss "$(rss_mb)")")
    echo "note: this build has no --no-transform switch; one run only" >&2
fi

# CPU-bound: the photos alone through the full pipeline (decode, orient, resize, re-encode, thumbnails,
# seal), where the client has work for both cores all the time; this is the run for the CPU utilisation
# bar. (In the mixed set, the tail of the run is the large files' upload, which waits on the network.)
if grep -q -- '--no-transform' <<< "$batch_help"; then
    PHOTOS=$FILES/photos
    start_server
    rm -f "$WORK/journal-photos.sqlite"*
    read -r wall user sys rss < <(measure "$ATTACHE" batch "$PHOTOS" --url "$URL" --journal "$WORK/journal-photos.sqlite" \
        --concurrency "$CONCURRENCY" --no-progress)
    stop_server
    COUNT=$(find "$PHOTOS" -type f | wc -l) TOTAL_BYTES=$(find "$PHOTOS" -type f -printf '%s\n' | awk '{s+=$1} END {print s}') \
        report "attache batch (photos only, CPU-bound)" "$wall" "$user" "$sys" "$rss" -1
    checks+=("$(bench_check batch.cpu-bound "$(awk -v w="$wall" -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", (u + s) / w * 100 }')")")
fi

# Resume cost: the same run again, everything already done (hash + journal lookup only).
start_server
read -r wall user sys rss < <(measure "$ATTACHE" batch "$FILES" --url "$URL" --journal "$WORK/journal.sqlite" \
    --concurrency "$CONCURRENCY" --no-progress)
stop_server
report "attache batch (re-run, all done)" "$wall" "$user" "$sys" "$rss" "$BASE"

printf '\n'
printf '%s\n' "${checks[@]}"
