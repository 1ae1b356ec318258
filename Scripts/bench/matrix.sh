#!/usr/bin/env bash
# Benchmark of `attache batch --matrix` against matrix-nio's own AsyncClient.upload(encrypt=True), both storing
# the same photos on the same Synapse (Tests/IntegrationTests/Tools/synapse_server.py, 127.0.0.1, SQLite),
# 8 uploads at once, alternating runs, medians. Called as `Scripts/bench.sh matrix`, or directly.
#
#   BENCH_FILES   number of photos (default 200): copies of Samples/photo.jpg and Samples/sticker.webp
#                 with a few bytes of their own appended, so that no two are the same file
#   RUNS          runs per tool (default 5)
#   BENCH_DIR     work folder (default $TMPDIR/attache-bench-matrix)
#   ATTACHE_BIN   the attache binary (Scripts/bench.sh exports a release build)
#
# attache runs with --no-transform (the bytes go as they are, sealed with the matrix scheme, as nio seals
# them) and --concurrency 8; Synapse is started with room for 64 reservations without content, and
# --matrix-pending-uploads 8, so that both tools have 8 uploads in flight. Prints per run wall time and
# client CPU (user+sys, GNU time), then files/s and CPU ratios attache/nio against the rows matrix.* of
# Scripts/bench/thresholds.tsv. Synapse's own CPU is not counted; on two cores it is the bottleneck, and
# attache's two requests per file (the reservation, then the bytes) are twice its work: the same batch with
# --matrix-no-reserve (one request, as nio makes) is reported beside it (matrix.speed.no-reserve, no bar).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
. Scripts/bench/lib.sh
FILES=${BENCH_FILES:-200}
RUNS=${RUNS:-5}
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-matrix}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/attache
NIO_PY=$CACHE/s3-venv/bin/python3
ATTACHE=${ATTACHE_BIN:-$ROOT/.build/release/attache}
TOOLS=$ROOT/Tests/IntegrationTests/Tools

[ -x /usr/bin/time ] || bench_die "GNU time (/usr/bin/time) is required"
"$NIO_PY" -c 'import nio' 2>/dev/null || bench_die "$NIO_PY cannot import nio (run Scripts/bootstrap.sh)"
[ -x "$ATTACHE" ] || bench_die "no attache binary at $ATTACHE (set ATTACHE_BIN)"

rm -rf "$WORK" && mkdir -p "$WORK/photos"
for i in $(seq 1 "$FILES"); do
    if ((i % 5 == 0)); then source=$ROOT/Samples/sticker.webp; ext=webp; else source=$ROOT/Samples/photo.jpg; ext=jpg; fi
    { cat "$source"; printf 'attache-bench-%06d' "$i"; } > "$WORK/photos/p$i.$ext"
done

python3 "$TOOLS/synapse_server.py" --data "$WORK/synapse" --max-pending-media-uploads 64 \
    --media-rate-per-second 1000 --media-burst 1000 > "$WORK/synapse.out" 2> "$WORK/synapse.log" &
SYNAPSE_PID=$!
bench_on_exit "kill -9 $SYNAPSE_PID 2>/dev/null || true"
for _ in $(seq 1 600); do grep -q '^listening ' "$WORK/synapse.out" && break; sleep 0.1; done
PORT=$(awk '/^listening /{print $2; exit}' "$WORK/synapse.out")
[ -n "$PORT" ] || bench_die "Synapse did not start: $(tail -5 "$WORK/synapse.log")"
HS=http://127.0.0.1:$PORT
register() { "$NIO_PY" "$TOOLS/matrix_client.py" register --homeserver "$HS" --shared-secret attache-test-shared-secret --user "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'; }
ATTACHE_TOKEN=$(register attache)
NIO_TOKEN=$(register nio)

measure() {  # measure NAME CMD...: "WALL CPU" on stdout
    local out=$WORK/time.$1
    /usr/bin/time -f '%e %U %S' -o "$out" "${@:2}" > /dev/null 2> "$WORK/last.err" || { cat "$WORK/last.err" >&2; bench_die "$1 failed"; }
    awk '{printf "%s %.2f\n", $1, $2 + $3}' "$out"
}

attache_walls=() attache_cpus=() nio_walls=() nio_cpus=() post_walls=() post_cpus=()
for run in $(seq 1 "$RUNS"); do
    read -r wall cpu < <(MATRIX_TOKEN=$ATTACHE_TOKEN measure attache "$ATTACHE" batch "$WORK/photos" --matrix "$HS" \
        --bearer-env MATRIX_TOKEN --matrix-pending-uploads 8 --no-transform --concurrency 8 --no-progress \
        --journal "$WORK/journal-$run.sqlite")
    attache_walls+=("$wall") attache_cpus+=("$cpu")
    read -r nwall ncpu < <(measure nio "$NIO_PY" "$TOOLS/matrix_client.py" upload-many --homeserver "$HS" --token "$NIO_TOKEN" \
        --concurrency 8 --encrypt --files "$WORK"/photos/*)
    nio_walls+=("$nwall") nio_cpus+=("$ncpu")
    # The same without reservations: one request per file, as nio makes, for what the second one costs.
    read -r pwall pcpu < <(MATRIX_TOKEN=$ATTACHE_TOKEN measure attache-post "$ATTACHE" batch "$WORK/photos" --matrix "$HS" \
        --bearer-env MATRIX_TOKEN --matrix-no-reserve --no-transform --concurrency 8 --no-progress \
        --journal "$WORK/journal-post-$run.sqlite")
    post_walls+=("$pwall") post_cpus+=("$pcpu")
    bench_log "run $run: attache ${wall} s ${cpu} CPU-s; matrix-nio ${nwall} s ${ncpu} CPU-s; attache --matrix-no-reserve ${pwall} s ${pcpu} CPU-s ($FILES files each)"
done
aw=$(bench_median "${attache_walls[@]}") ac=$(bench_median "${attache_cpus[@]}")
nw=$(bench_median "${nio_walls[@]}") nc=$(bench_median "${nio_cpus[@]}")
speed=$(python3 -c "print(f'{$nw / $aw:.2f}')")
cpu=$(bench_ratio "$ac" "$nc")
printf 'matrix: %s files; attache %s s (%s files/s), %s CPU-s; matrix-nio %s s (%s files/s), %s CPU-s\n' \
    "$FILES" "$aw" "$(python3 -c "print(f'{$FILES / $aw:.1f}')")" "$ac" "$nw" "$(python3 -c "print(f'{$FILES / $nw:.1f}')")" "$nc"
pw=$(bench_median "${post_walls[@]}")
bench_check matrix.speed "$speed"
bench_check matrix.cpu "$cpu"
bench_check matrix.speed.no-reserve "$(python3 -c "print(f'{$nw / $pw:.2f}')")"
