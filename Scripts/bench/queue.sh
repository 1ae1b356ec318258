#!/usr/bin/env bash
# Benchmark of the shared PostgreSQL queue (attache enqueue / worker). Called as `Scripts/bench.sh queue`,
# or directly with ATTACHE_BIN and ATTACHE_SERVER_BIN set.
#
# 1. The queue's own cost: claims + commits per second with 8 `attache worker --stub-uploads` processes
#    (--concurrency 16 --claim-batch 64 each; the pipeline replaced by a receipt made on the spot), over
#    QUEUE_ROWS rows (default 20000).
# 2. On one machine, against the reference server: 2 workers x --concurrency 4 against one
#    `attache batch --concurrency 8`, on the same BENCH_FILES files (default 2000, 2-64 KB each, sent as
#    they are: --no-transform, so the figure is the queue's cost and not the image codecs'). The queue
#    is timed twice: the workers alone, and enqueue + workers (the whole job, as batch's time is).
#
# PostgreSQL: a temporary cluster (Debian's postgresql package, Scripts/bootstrap.sh) on a free port in
# a temporary folder, run as the postgres user when this runs as root, with the server's default
# durability (fsync on, synchronous_commit on): the figures include a WAL flush per commit statement.
#   RUNS (default 3) repetitions of each; medians are printed, then checked against their bars (rows
#   queue.* of Scripts/bench/thresholds.tsv).
set -euo pipefail

. "$(dirname "$0")/lib.sh"

RUNS=${RUNS:-3}
ROWS=${QUEUE_ROWS:-20000}
N=${BENCH_FILES:-2000}
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-queue}
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x "$pg_bin/initdb" ]] || bench_die "PostgreSQL is not installed (package postgresql; run Scripts/bootstrap.sh)"

mkdir -p "$WORK"
# --- The cluster ---------------------------------------------------------------------------------------
cluster=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-pg.XXXXXX")
as_owner=()
if [[ $(id -u) -eq 0 ]]; then
    chown postgres: "$cluster"
    as_owner=(setpriv --reuid=postgres --regid=postgres --clear-groups --)
fi
password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s' "$password" >"$cluster/pw"
chmod 600 "$cluster/pw"
[[ $(id -u) -eq 0 ]] && chown postgres: "$cluster/pw"
"${as_owner[@]}" "$pg_bin/initdb" -D "$cluster/data" -U attache --pwfile="$cluster/pw" -A scram-sha-256 -E UTF8 \
    --locale=C >"$cluster/initdb.log" 2>&1 || { cat "$cluster/initdb.log" >&2; bench_die "initdb failed"; }
rm -f "$cluster/pw"
port=$(bench_free_port)
"${as_owner[@]}" "$pg_bin/postgres" -D "$cluster/data" -p "$port" -k "$cluster" -c listen_addresses=127.0.0.1 \
    -c max_connections=100 >"$cluster/server.log" 2>&1 &
pg_pid=$!
bench_on_exit "kill -INT $pg_pid 2>/dev/null; wait $pg_pid 2>/dev/null; rm -rf '$cluster'"
for ((i = 0; i < 100; i++)); do
    grep -q 'ready to accept connections' "$cluster/server.log" 2>/dev/null && break
    kill -0 "$pg_pid" 2>/dev/null || break
    sleep 0.1
done
grep -q 'ready to accept connections' "$cluster/server.log" || { tail "$cluster/server.log" >&2; bench_die "postgres did not start"; }
export PGPASSWORD=$password
bench_log "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') (pid $pg_pid) on 127.0.0.1:$port, cluster $cluster"

new_queue() { # NAME: prints the URL of a fresh database NAME, migrated
    local name=$1
    "$pg_bin/createdb" -h 127.0.0.1 -p "$port" -U attache "$name"
    local url="postgres://attache@127.0.0.1:$port/$name?sslmode=disable"
    "$ATTACHE_BIN" queue migrate --queue "$url" >/dev/null
    printf '%s\n' "$url"
}
psql_at() { "$pg_bin/psql" -h 127.0.0.1 -p "$port" -U attache -At "$@"; }

# --- The files -----------------------------------------------------------------------------------------
FILES=$WORK/files-$N
if [[ ! -d "$FILES" ]]; then
    bench_log "making $N files in $FILES"
    mkdir -p "$FILES.tmp"
    /usr/bin/python3 - "$FILES.tmp" "$N" <<'EOF'
import os, random, sys
folder, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(18)
for i in range(count):
    with open(os.path.join(folder, f"doc{i:05d}.bin"), "wb") as f:
        f.write(os.urandom(rng.randint(2048, 65536)))
EOF
    mv "$FILES.tmp" "$FILES"
fi
one_file=$WORK/one
mkdir -p "$one_file" && [[ -f "$one_file/seed.bin" ]] || head -c 1000 /dev/urandom >"$one_file/seed.bin"

# --- 1. Claims + commits per second, uploads stubbed ----------------------------------------------------
stub_rates=()
enqueue_rates=()
for ((run = 1; run <= RUNS; run++)); do
    url=$(new_queue "stub$run")
    db=${url##*/}; db=${db%%\?*}
    # One real row for valid seal material, then ROWS rows made from it by the database itself: the
    # workers parse each row's material as they would a real one.
    "$ATTACHE_BIN" enqueue "$one_file" --queue "$url" >/dev/null
    psql_at -d "$db" -c "INSERT INTO attache_file (path, size, mtime_ns, sha256, idempotency_key, seal_material, scheme)
        SELECT '/stub/' || g, 1000, 0, '', md5(g::text), f.seal_material, f.scheme
        FROM generate_series(1, $ROWS) g, (SELECT seal_material, scheme FROM attache_file LIMIT 1) f" >/dev/null
    start=$EPOCHREALTIME
    pids=()
    for w in 1 2 3 4 5 6 7 8; do
        "$ATTACHE_BIN" worker --queue "$url" --stub-uploads --drain --concurrency 16 --claim-batch 64 \
            --worker-id "stub$w" >/dev/null 2>"$WORK/stub$w.err" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || bench_die "a stub worker failed: $(cat "$WORK"/stub*.err)"; done
    end=$EPOCHREALTIME
    done_rows=$(psql_at -d "$db" -c "SELECT count(*) FROM attache_file WHERE state = 'done'")
    [[ "$done_rows" -eq $((ROWS + 1)) ]] || bench_die "stub run: $done_rows of $((ROWS + 1)) rows done"
    rate=$(awk -v n="$done_rows" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", n / (e - s) }')
    stub_rates+=("$rate")
    bench_log "stub run $run: $done_rows rows in $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }') s: $rate claims+commits/s"
done

# --- 2. Two workers x 4 against one batch at 8, same files -----------------------------------------------
batch_rates=()
queue_rates=()
whole_rates=()
# Client CPU seconds (user + system) of each side: the batch process, the two workers, the enqueue.
# Unlike wall time, they hardly depend on what else the machine runs. PostgreSQL's own are not counted.
batch_cpu=()
queue_cpu=()
enqueue_cpu=()
run_batch() {
    local store=$WORK/store-batch
    rm -rf "$store" "$WORK/journal.sqlite"*
    bench_start_server "$store" --log-level warning
    local start=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/batch.cpu" \
        "$ATTACHE_BIN" batch "$FILES" --url "$BENCH_URL/upload" --journal "$WORK/journal.sqlite" --concurrency 8 \
        --no-progress --no-transform >/dev/null 2>"$WORK/batch.err" || bench_die "batch failed: $(tail -3 "$WORK/batch.err")"
    local end=$EPOCHREALTIME
    bench_stop_process "$BENCH_SERVER_PID"
    batch_rates+=("$(awk -v n="$N" -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", n / (e - s) }')")
    batch_cpu+=("$(awk '{ printf "%.2f", $1 + $2 }' "$WORK/batch.cpu")")
}

run_queue() { # RUN
    local store=$WORK/store-queue url db whole_start start end done_rows pid w
    rm -rf "$store"
    bench_start_server "$store" --log-level warning
    url=$(new_queue "files$1")
    db=${url##*/}; db=${db%%\?*}
    whole_start=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/enqueue.cpu" "$ATTACHE_BIN" enqueue "$FILES" --queue "$url" >/dev/null
    start=$EPOCHREALTIME
    local pids=()
    for w in 1 2; do
        /usr/bin/time -f '%U %S' -o "$WORK/worker$w.cpu" \
            "$ATTACHE_BIN" worker --queue "$url" --url "$BENCH_URL/upload" --drain --concurrency 4 --no-transform \
            --worker-id "w$w" >/dev/null 2>"$WORK/worker$w.err" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || bench_die "a worker failed: $(tail -3 "$WORK"/worker*.err)"; done
    end=$EPOCHREALTIME
    bench_stop_process "$BENCH_SERVER_PID"
    done_rows=$(psql_at -d "$db" -c "SELECT count(*) FROM attache_file WHERE state = 'done'")
    [[ "$done_rows" -eq "$N" ]] || bench_die "queue run: $done_rows of $N files done"
    queue_rates+=("$(awk -v n="$N" -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", n / (e - s) }')")
    whole_rates+=("$(awk -v n="$N" -v s="$whole_start" -v e="$end" 'BEGIN { printf "%.1f", n / (e - s) }')")
    queue_cpu+=("$(cat "$WORK/worker1.cpu" "$WORK/worker2.cpu" | awk '{ s += $1 + $2 } END { printf "%.2f", s }')")
    enqueue_cpu+=("$(awk '{ printf "%.2f", $1 + $2 }' "$WORK/enqueue.cpu")")
}

# The two alternate which goes first, run by run, so that neither always meets the other's leftovers
# (the page cache, the server's store being deleted) or the machine's quieter moments.
for ((run = 1; run <= RUNS; run++)); do
    if ((run % 2)); then run_batch; run_queue "$run"; else run_queue "$run"; run_batch; fi
    bench_log "run $run: batch ${batch_rates[-1]} files/s (${batch_cpu[-1]} CPU s); queue workers ${queue_rates[-1]} files/s (${queue_cpu[-1]} CPU s), enqueue + workers ${whole_rates[-1]} files/s (enqueue ${enqueue_cpu[-1]} CPU s)"
done
rm -rf "$WORK/store-batch" "$WORK/store-queue"

stub=$(bench_median "${stub_rates[@]}")
batch=$(bench_median "${batch_rates[@]}")
queue=$(bench_median "${queue_rates[@]}")
whole=$(bench_median "${whole_rates[@]}")
printf '%-58s %12s\n' "run (median of $RUNS)" "figure"
printf '%-58s %12s\n' "8 stub workers: claims + commits per second ($ROWS rows)" "$stub/s"
printf '%-58s %12s\n' "attache batch --concurrency 8 ($N files, files/s)" "$batch"
printf '%-58s %12s  %sx batch\n' "2 workers x --concurrency 4 (files/s, workers only)" "$queue" "$(bench_ratio "$queue" "$batch")"
printf '%-58s %12s  %sx batch\n' "enqueue + 2 workers x 4 (files/s, the whole job)" "$whole" "$(bench_ratio "$whole" "$batch")"
cpu_b=$(bench_median "${batch_cpu[@]}")
cpu_q=$(bench_median "${queue_cpu[@]}")
cpu_e=$(bench_median "${enqueue_cpu[@]}")
printf '%-58s %12s\n' "client CPU seconds: attache batch" "$cpu_b"
printf '%-58s %12s  %sx batch\n' "client CPU seconds: the 2 workers" "$cpu_q" "$(bench_ratio "$cpu_q" "$cpu_b")"
printf '%-58s %12s\n' "client CPU seconds: attache enqueue" "$cpu_e"

printf '\n'
bench_check queue.claims "$stub"
bench_check queue.workers "$(bench_ratio "$queue" "$batch")"
bench_check queue.whole "$(bench_ratio "$whole" "$batch")"
