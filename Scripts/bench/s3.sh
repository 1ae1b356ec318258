#!/usr/bin/env bash
# Benchmark of `attache upload --url s3://` against `aws s3 cp` (AWS CLI v1 from PyPI), both uploading to
# moto's S3 server on 127.0.0.1, alternating runs, medians. Called as `Scripts/bench.sh s3`, or directly.
#
#   BENCH_BIG_MB     size of the large plaintext file in MiB (default 2048)
#   BENCH_SMALL      number of small files (default 200), BENCH_SMALL_MB each (default 5)
#   RUNS             runs per tool and case (default 5)
#   BENCH_DIR        work folder (default $TMPDIR/attache-bench-s3)
#   ATTACHE_BIN      the attache binary (Scripts/bench.sh exports a release build)
#
# Both tools send plaintext (attache --scheme none --no-transform) with 16 MiB parts, 4 in flight
# (aws: multipart_chunksize 16MB, max_concurrent_requests 4), so the wire work is the same. Prints per run
# wall time, client CPU (user+sys) and peak RSS (GNU time), the medians' ratios attache/aws, and those
# against their bars (rows s3.* of Scripts/bench/thresholds.tsv). Needs:
# python3 with moto (Scripts/bootstrap.sh) and the AWS CLI in $XDG_CACHE_HOME/attache/awscli-venv
# (made here when missing).
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
# bench_check only: this script keeps its own EXIT trap.
. Scripts/bench/lib.sh --thresholds-only
BIG_MB=${BENCH_BIG_MB:-2048}
SMALL=${BENCH_SMALL:-200}
SMALL_MB=${BENCH_SMALL_MB:-5}
RUNS=${RUNS:-5}
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-s3}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/attache
PY=$CACHE/s3-venv/bin/python3
AWS_VENV=$CACHE/awscli-venv
ATTACHE=${ATTACHE_BIN:-$ROOT/.build/release/attache}

[ -x /usr/bin/time ] || { echo "bench s3: GNU time (/usr/bin/time) is required" >&2; exit 69; }
"$PY" -c 'import moto.server' 2>/dev/null || { echo "bench s3: $PY cannot import moto (run Scripts/bootstrap.sh)" >&2; exit 69; }
if ! "$AWS_VENV/bin/aws" --version >/dev/null 2>&1; then
    /usr/bin/python3 -m venv "$AWS_VENV"
    "$AWS_VENV/bin/python3" -m pip install -q "awscli==1.46.2"
fi
[ -x "$ATTACHE" ] || { echo "bench s3: no attache binary at $ATTACHE (set ATTACHE_BIN)" >&2; exit 69; }

mkdir -p "$WORK/small"
[ -f "$WORK/big.bin" ] && [ "$(stat -c %s "$WORK/big.bin")" = $((BIG_MB << 20)) ] \
    || head -c $((BIG_MB << 20)) /dev/urandom > "$WORK/big.bin"
if [ "$(ls "$WORK/small" | wc -l)" != "$SMALL" ]; then
    rm -f "$WORK/small"/*
    for i in $(seq 1 "$SMALL"); do head -c $((SMALL_MB << 20)) /dev/urandom > "$WORK/small/f$i.bin"; done
fi

export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE=$WORK/aws-config AWS_SHARED_CREDENTIALS_FILE=$WORK/no-credentials
cat > "$AWS_CONFIG_FILE" <<CONFIG
[default]
s3 =
  multipart_threshold = 64MB
  multipart_chunksize = 16MB
  max_concurrent_requests = 4
CONFIG

port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PY" -m moto.server -H 127.0.0.1 -p "$port" >"$WORK/moto.log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "Running on" "$WORK/moto.log" && break; sleep 0.1; done
ENDPOINT=http://127.0.0.1:$port
"$AWS_VENV/bin/aws" --endpoint-url "$ENDPOINT" s3 mb s3://bench >/dev/null

measure() { # label, command...: prints "wall cpu rss_kb"
    # GNU time writes its line to a file of its own (-o): the command's stderr goes to err.
    /usr/bin/time -o "$WORK/time" -f '%e %U %S %M' "${@:2}" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    tail -1 "$WORK/time" | awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}'
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

run_case() { # name, attache args..., --, aws args...
    local name=$1; shift
    local attache_args=() aws_args=()
    while [ "$1" != "--" ]; do attache_args+=("$1"); shift; done; shift
    aws_args=("$@")
    : > "$WORK/$name.attache"; : > "$WORK/$name.aws"
    for run in $(seq 1 "$RUNS"); do
        rm -f "$WORK"/journal.sqlite*
        measure attache "$ATTACHE" "${attache_args[@]}" >> "$WORK/$name.attache"
        measure aws "$AWS_VENV/bin/aws" --endpoint-url "$ENDPOINT" "${aws_args[@]}" >> "$WORK/$name.aws"
        printf '%s run %s: attache %s | aws %s\n' "$name" "$run" "$(tail -1 "$WORK/$name.attache")" "$(tail -1 "$WORK/$name.aws")"
    done
    for tool in attache aws; do
        read -r wall cpu rss <<<"$(for c in 1 2 3; do cut -d' ' -f$c "$WORK/$name.$tool" | median; done | paste -sd' ')"
        printf '%s %s median: wall %ss cpu %ss peak RSS %s MB\n' "$name" "$tool" "$wall" "$cpu" "$((${rss%.*} / 1024))"
        eval "${tool}_wall=$wall ${tool}_cpu=$cpu ${tool}_rss=$((${rss%.*} / 1024))"
    done
    awk -v aw="$attache_wall" -v bw="$aws_wall" -v ac="$attache_cpu" -v bc="$aws_cpu" -v n="$name" \
        'BEGIN {printf "%s ratio attache/aws: wall %.2fx, cpu %.2fx\n", n, aw / bw, ac / bc}'
    bench_check "s3.$name.wall" "$(awk -v a="$attache_wall" -v b="$aws_wall" 'BEGIN { printf "%.2f", a / b }')"
    bench_check "s3.$name.cpu" "$(awk -v a="$attache_cpu" -v b="$aws_cpu" 'BEGIN { printf "%.2f", a / b }')"
    bench_check "s3.$name.rss" "$attache_rss"
}

common=(--s3-endpoint "$ENDPOINT" --scheme none --no-transform --no-progress --part-size 16M --parts-in-flight 4
    --concurrency 4)
run_case big upload "$WORK/big.bin" --url s3://bench/a/ "${common[@]}" -- s3 cp "$WORK/big.bin" s3://bench/b/big.bin --quiet
run_case small batch "$WORK/small" --url s3://bench/sa/ --journal "$WORK/journal.sqlite" "${common[@]}" \
    -- s3 cp "$WORK/small" s3://bench/sb/ --recursive --quiet
