#!/usr/bin/env bash
# This build against another one (issue 47's bar: the one-client work costs no more than 3 % of CPU). The
# same five workloads run with both builds, alternating run by run (the order swapped every run, so that
# a drift of the machine hits both alike), and the client's CPU seconds (user + system, GNU time) are
# compared as medians:
#   upload-plain   one 1 GiB file to nginx, `attache upload --scheme none --no-transform`
#   upload-gcm     the same with the default seal (stream-gcm, a fresh key)
#   batch          2,000 files of 1-4 KB to nginx, `attache batch --concurrency 8`, a new journal each run
#   batch-dedup-off  the same with `--dedup off` for this build (builds without `--dedup` send each file on
#                  its own, as `off` does): the batch without the content work that came after 5382cce
#   requests       5,000 JSON POSTs through one RequestClient, 8 in flight (the attache-request-bench driver
#                  of Scripts/Benchmarks, built at each commit), to nginx's /answer200
#   downloads      200 files of 5 MB from nginx, `attache download --from LIST --concurrency 8`
#   s3             one 2 GiB file to moto, `attache upload --url s3://` (16 MiB parts, 4 in flight)
# nginx (Tests/IntegrationTests/Tools/nginx-sink.sh) and moto (Scripts/bootstrap.sh's venv) run on
# 127.0.0.1. Rows builds.NAME.cpu of Scripts/bench/thresholds.tsv hold the bar (this / baseline <= 1.03).
#
# Environment:
#   ATTACHE_BASELINE_BIN=DIR   required: the other build's release folder, holding `attache`; its drivers
#                              are DIR/attache-request-bench unless ATTACHE_BASELINE_DRIVERS names a folder
#   ATTACHE_BIN, ATTACHE_BENCH_DRIVERS   this build (Scripts/bench.sh exports both)
#   RUNS=7                     runs of each workload per build
#   WORKLOADS="upload-plain upload-gcm batch batch-dedup-off requests downloads s3"   the ones to run
#   BENCH_TMPDIR=/var/tmp      where the files go (about 3.5 GiB; /tmp is often in RAM)
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-7}
workloads=${WORKLOADS:-upload-plain upload-gcm batch batch-dedup-off requests downloads s3}
tmp_parent=${BENCH_TMPDIR:-/var/tmp}
baseline=${ATTACHE_BASELINE_BIN:-}
bench_positive runs

[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
[[ -n "$baseline" && -x "$baseline/attache" ]] \
    || bench_die "ATTACHE_BASELINE_BIN must name a folder holding the other build's attache"
this_driver=${ATTACHE_BENCH_DRIVERS:-$(dirname "$ATTACHE_BIN")}/attache-request-bench
base_driver=${ATTACHE_BASELINE_DRIVERS:-$baseline}/attache-request-bench
for w in $workloads; do
    case "$w" in
        upload-plain | upload-gcm | batch | batch-dedup-off | downloads | s3) ;;
        requests)
            [[ -x "$this_driver" ]] || bench_die "$this_driver not found (ATTACHE_BENCH_DRIVERS)"
            [[ -x "$base_driver" ]] || bench_die "$base_driver not found (ATTACHE_BASELINE_DRIVERS)"
            ;;
        *) bench_die "unknown workload '$w' in WORKLOADS" ;;
    esac
done

mkdir -p "$tmp_parent"
work=$(mktemp -d "$tmp_parent/attache-bench-builds.XXXXXX")
bench_on_exit "rm -rf '$work'"
gib=$((1024 * 1024 * 1024))
bench_start_nginx "$work/nginx" --body-in-memory $((gib + gib / 16 + 16 * 1024 * 1024))
upload_url=$BENCH_NGINX_HTTP
access_log="$work/nginx/access.log"

needs() { [[ " $workloads " == *" $1 "* ]]; }

if needs upload-plain || needs upload-gcm; then
    bench_log "creating a 1 GiB file of random bytes"
    head -c "$gib" /dev/urandom >"$work/big.bin"
fi
if needs batch || needs batch-dedup-off; then
    bench_log "creating 2,000 files of 1-4 KB"
    mkdir -p "$work/small"
    /usr/bin/python3 - "$work/small" <<'EOF'
import os, random, sys
random.seed(47)
for i in range(2000):
    with open(os.path.join(sys.argv[1], f"{i:05d}.bin"), "wb") as f:
        f.write(os.urandom(random.randint(1000, 4000)))
EOF
fi
if needs downloads; then
    bench_log "creating 200 files of 5 MB to serve"
    mkdir -p "$work/nginx/files"
    : >"$work/list"
    for ((i = 0; i < 200; i++)); do
        name=$(printf 'f%04d.bin' "$i")
        head -c $((5 * 1048576)) /dev/urandom >"$work/nginx/files/$name"
        printf '%s/files/%s\n' "${upload_url%/upload}" "$name" >>"$work/list"
    done
fi
if needs s3; then
    py=${XDG_CACHE_HOME:-$HOME/.cache}/attache/s3-venv/bin/python3
    "$py" -c 'import moto.server, boto3' 2>/dev/null || bench_die "$py cannot import moto (run Scripts/bootstrap.sh)"
    bench_log "creating a 2 GiB file of random bytes"
    head -c $((2 * gib)) /dev/urandom >"$work/s3.bin"
    port=$(bench_free_port)
    "$py" -m moto.server -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
    moto=$!
    bench_on_exit "bench_stop_process $moto"
    for _ in $(seq 1 100); do grep -q "Running on" "$work/moto.log" && break; sleep 0.1; done
    s3_endpoint=http://127.0.0.1:$port
    export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_DEFAULT_REGION=us-east-1
    "$py" -c 'import boto3, sys
boto3.client("s3", endpoint_url=sys.argv[1]).create_bucket(Bucket="bench")' "$s3_endpoint" \
        || bench_die "could not make the bucket on moto"
fi

# The command line of workload $1 for build $2 (this or baseline), as an array named cmd.
command_of() {
    local bin=$ATTACHE_BIN driver=$this_driver
    if [[ "$2" == baseline ]]; then bin=$baseline/attache; driver=$base_driver; fi
    case "$1" in
        upload-plain) cmd=("$bin" upload "$work/big.bin" --url "$upload_url" --scheme none --no-transform --no-progress) ;;
        upload-gcm) cmd=("$bin" upload "$work/big.bin" --url "$upload_url" --no-transform --no-progress) ;;
        batch) cmd=("$bin" batch "$work/small" --url "$upload_url" --concurrency 8 --journal "$work/run/journal.sqlite"
            --no-progress) ;;
        batch-dedup-off) cmd=("$bin" batch "$work/small" --url "$upload_url" --concurrency 8
            --journal "$work/run/journal.sqlite" --no-progress)
            if [[ "$2" == this ]]; then cmd+=(--dedup off); fi ;;
        requests) cmd=("$driver" "${upload_url%/upload}/answer200" 5000 8 200) ;;
        downloads) cmd=("$bin" download --from "$work/list" -d "$work/run/out" --concurrency 8
            --journal "$work/run/journal.sqlite" --no-progress) ;;
        s3) cmd=("$bin" upload "$work/s3.bin" --url s3://bench/a/ --s3-endpoint "$s3_endpoint" --scheme none
            --no-transform --no-progress --part-size 16M --parts-in-flight 4) ;;
    esac
}

# What each run must have done, checked after it: nginx's log for the uploads, the files for downloads.
check_run() {
    local w=$1 before=$2 n
    case "$w" in
        upload-*) n=$(awk -v from="$before" 'NR > from && $7 >= 1073741824 { n++ } END { print n + 0 }' "$access_log")
            ((n == 1)) || bench_die "$w: nginx did not log one request carrying the whole file" ;;
        batch*) n=$(awk -v from="$before" 'NR > from { n++ } END { print n + 0 }' "$access_log")
            ((n >= 2000)) || bench_die "batch: nginx logged $n requests, not 2,000" ;;
        downloads) n=$(find "$work/run/out" -name 'f*.bin' -size 5120k | wc -l)
            ((n == 200)) || bench_die "downloads: $n of 200 files of 5 MB in the output" ;;
    esac
}

bench_log "warm-up: one untimed run of each workload with each build"
for w in $workloads; do
    for build in this baseline; do
        rm -rf "$work/run" && mkdir -p "$work/run"
        command_of "$w" "$build"
        XDG_STATE_HOME=$work/run "${cmd[@]}" >/dev/null 2>"$work/err" \
            || { tail -n 20 "$work/err" >&2; bench_die "$w ($build) failed: ${cmd[*]}"; }
    done
done

declare -A cpu=() secs=()
for ((run = 1; run <= runs; run++)); do
    order=(this baseline)
    ((run % 2 == 0)) && order=(baseline this)
    for w in $workloads; do
        for build in "${order[@]}"; do
            rm -rf "$work/run" && mkdir -p "$work/run"
            command_of "$w" "$build"
            before=$(wc -l <"$access_log")
            figures=$(XDG_STATE_HOME=$work/run bench_measure_cpu "${cmd[@]}" 2>"$work/err") && status=0 || status=$?
            if ((status != 0)); then
                tail -n 20 "$work/err" >&2
                bench_die "$w ($build) failed (exit $status): ${cmd[*]}"
            fi
            check_run "$w" "$before"
            read -r s _ c <<<"$figures"
            secs[$w.$build]+="$s "
            cpu[$w.$build]+="$c "
            bench_log "run $run/$runs $w $build: ${s}s, CPU ${c}s"
        done
    done
done

printf '\nThis build (%s) against %s, medians of %s runs alternating (client CPU = user + sys seconds)\n' \
    "$ATTACHE_BIN" "$baseline/attache" "$runs"
printf '%-13s %10s %10s %8s %10s %10s %8s\n' workload 'CPU this' 'CPU base' ratio 'wall this' 'wall base' ratio
declare -A ratio=()
for w in $workloads; do
    read -r -a ct <<<"${cpu[$w.this]}"
    read -r -a cb <<<"${cpu[$w.baseline]}"
    read -r -a st <<<"${secs[$w.this]}"
    read -r -a sb <<<"${secs[$w.baseline]}"
    mct=$(bench_median "${ct[@]}") mcb=$(bench_median "${cb[@]}")
    mst=$(bench_median "${st[@]}") msb=$(bench_median "${sb[@]}")
    ratio[$w]=$(awk -v a="$mct" -v b="$mcb" 'BEGIN { printf "%.3f", a / b }')
    printf '%-13s %10.2f %10.2f %8s %10.2f %10.2f %8s\n' "$w" "$mct" "$mcb" "${ratio[$w]}" "$mst" "$msb" \
        "$(awk -v a="$mst" -v b="$msb" 'BEGIN { printf "%.3f", a / b }')"
done
printf '\n'
for w in $workloads; do
    bench_check "builds.$w.cpu" "${ratio[$w]}"
done
