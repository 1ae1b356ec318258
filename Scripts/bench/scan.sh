#!/usr/bin/env bash
# Benchmark of the Scan stage: `attache scan` against `clamdscan --fdpass --multiscan` on the same files
# and the same clamd, `attache batch` with and without scanning (with the cheapest pipeline and with
# the default one), and the client's peak RSS while it streams a 2 GiB file to clamd; then each figure
# against its bar (rows scan.* of Scripts/bench/thresholds.tsv). Called as `Scripts/bench.sh scan`, or
# directly.
#
# clamd is started here on a private UNIX socket with a database this script writes (the EICAR test
# string as a body signature, clamav-testfiles' clam.exe by its MD5), as the tests do: no freshclam, no
# network. The figures therefore measure the protocol, the file handling and clamd's parsers of the
# formats in the set, not a full signature database.
#   BENCH_FILES     number of files (default 2000: text, binary, archives, PDFs, photos; 1 in 100 infected)
#   BENCH_DIR       work folder (default $TMPDIR/attache-bench-scan)
#   BENCH_BIG_MB    size of the large file streamed for the RSS figure (default 2048)
#   BENCH_CONCURRENCY  attache scan/batch --concurrency (default 8)
#   RUNS            repetitions, medians reported (default 5)
#   ATTACHE_BIN, ATTACHE_SERVER_BIN  binaries to use (Scripts/bench.sh exports them); built here otherwise
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
. Scripts/bench/lib.sh
N=${BENCH_FILES:-2000}
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-scan}
BIG_MB=${BENCH_BIG_MB:-2048}
CONCURRENCY=${BENCH_CONCURRENCY:-8}
RUNS=${RUNS:-5}
bench_positive N=BENCH_FILES BIG_MB=BENCH_BIG_MB CONCURRENCY=BENCH_CONCURRENCY RUNS
for tool in clamd clamdscan; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || bench_die "$tool not found (run Scripts/bootstrap.sh)"
done
CLAMD=$(command -v clamd || echo /usr/sbin/clamd)
TESTFILES=/usr/share/clamav-testfiles
[ -f "$TESTFILES/clam.exe" ] || bench_die "clamav-testfiles not installed (run Scripts/bootstrap.sh)"

if [ -n "${ATTACHE_BIN:-}" ] && [ -n "${ATTACHE_SERVER_BIN:-}" ]; then
    ATTACHE=$ATTACHE_BIN
else
    swift build -c release --static-swift-stdlib --product attache >&2
    swift build -c release --static-swift-stdlib --product attache-server >&2
    BIN=$(swift build -c release --static-swift-stdlib --show-bin-path)
    ATTACHE=$BIN/attache
    ATTACHE_SERVER_BIN=$BIN/attache-server
    export ATTACHE_SERVER_BIN
fi

# --- clamd on a private socket --------------------------------------------------------------------------
DAEMON=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-clamd.XXXXXX")
bench_on_exit "rm -rf '$DAEMON'"
mkdir -p "$DAEMON/db"
eicar='X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR'
eicar+='-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*'
printf 'Attache.Test.EICAR:0:*:%s\n' "$(printf '%s' "$eicar" | od -An -tx1 | tr -d ' \n')" >"$DAEMON/db/attache.ndb"
printf '%s:%s:Attache.Test.ClamExe\n' "$(md5sum <"$TESTFILES/clam.exe" | cut -d' ' -f1)" \
    "$(stat -c %s "$TESTFILES/clam.exe")" >"$DAEMON/db/attache.hdb"
cat >"$DAEMON/clamd.conf" <<CONF
LocalSocket $DAEMON/clamd.sock
Foreground yes
DatabaseDirectory $DAEMON/db
LogFile $DAEMON/clamd.log
StreamMaxLength 4000M
MaxFileSize 4000M
MaxScanSize 4000M
MaxThreads 12
MaxQueue 200
Bytecode no
CONF
"$CLAMD" -c "$DAEMON/clamd.conf" >/dev/null 2>&1 &
CLAMD_PID=$!
bench_on_exit "bench_stop_process $CLAMD_PID"
for _ in $(seq 1 600); do [ -S "$DAEMON/clamd.sock" ] && break; sleep 0.1; done
[ -S "$DAEMON/clamd.sock" ] || { tail -n 20 "$DAEMON/clamd.log" >&2; bench_die "clamd did not start"; }
sleep 0.5
SOCKET="unix:$DAEMON/clamd.sock"

# --- The file set (made once and reused) ----------------------------------------------------------------
FILES=$WORK/files-$N
if [ ! -d "$FILES" ]; then
    bench_log "making $N files in $FILES"
    rm -rf "$FILES.tmp" && mkdir -p "$FILES.tmp"
    samples=("$ROOT"/Samples/*.*)
    infected=("$TESTFILES/clam.exe" "$TESTFILES/clam.zip" "$TESTFILES/clam.7z" "$TESTFILES/clam.pdf" "$TESTFILES/clam.tar.gz")
    for i in $(seq 1 "$N"); do
        case $((i % 5)) in
            0) head -c $((1024 + (i * 977) % 8192)) /dev/urandom >"$FILES.tmp/f$i.bin" ;;
            1) seq 1 $((50 + i % 400)) | sed "s/^/line $i: /" >"$FILES.tmp/f$i.txt" ;;
            2) head -c $((4096 + (i * 7919) % 262144)) /dev/urandom >"$FILES.tmp/f$i.dat" ;;
            3) s=${samples[$((i % ${#samples[@]}))]}; cp "$s" "$FILES.tmp/f$i.${s##*.}" ;;
            4) printf 'note %d\n' "$i" >"$FILES.tmp/f$i.note" ;;
        esac
        if ((i % 100 == 0)); then
            if ((i % 200 == 0)); then printf '%s' "$eicar" >"$FILES.tmp/x$i.com"
            else s=${infected[$((i / 100 % ${#infected[@]}))]}; cp "$s" "$FILES.tmp/x$i.${s##*.}"; fi
        fi
    done
    mv "$FILES.tmp" "$FILES"
fi
COUNT=$(find "$FILES" -type f | wc -l)

# --- 1. Scan throughput: attache scan vs clamdscan --fdpass --multiscan ----------------------------------
declare -a t_clamdscan=() t_attache=() t_stream=()
for run in $(seq 1 "$RUNS"); do
    read -r s _ < <(bench_measure clamdscan --config-file="$DAEMON/clamd.conf" --fdpass --multiscan --no-summary "$FILES" || true)
    t_clamdscan+=("$s")
    read -r s _ < <(bench_measure "$ATTACHE" scan --clamd "$SOCKET" --concurrency "$CONCURRENCY" --no-summary "$FILES" || true)
    t_attache+=("$s")
    read -r s _ < <(bench_measure "$ATTACHE" scan --clamd "$SOCKET" --clamd-transfer stream --concurrency "$CONCURRENCY" --no-summary "$FILES" || true)
    t_stream+=("$s")
    bench_log "scan run $run: clamdscan ${t_clamdscan[-1]} s, attache ${t_attache[-1]} s, attache (stream) ${t_stream[-1]} s"
done
m_clamdscan=$(bench_median "${t_clamdscan[@]}")
m_attache=$(bench_median "${t_attache[@]}")
m_stream=$(bench_median "${t_stream[@]}")
fps() { awk -v n="$COUNT" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }

# --- 2. Batch with and without scanning -----------------------------------------------------------------
STORE=$WORK/store
rm -rf "$STORE"
bench_on_exit "rm -rf '$STORE'"
bench_start_server "$STORE"
# Twice: with the cheapest pipeline (no seal, no Transform: the least client work beside clamd's, the
# hardest case for the ratio), and with the default one (a fresh key per file, Transform on).
declare -a t_plain=() t_scanned=() t_dplain=() t_dscanned=()
batch_run() { # JOURNAL-NAME [ARG...]
    local journal=$1
    shift
    bench_measure "$ATTACHE" batch "$FILES" --url "$BENCH_URL/upload" --concurrency "$CONCURRENCY" \
        --journal "$WORK/journal-$journal.sqlite" "$@" || true
}
for run in $(seq 1 "$RUNS"); do
    # A new journal is a new set of idempotency keys: the server stores every file again.
    rm -f "$WORK"/journal-*.sqlite*
    read -r s _ < <(batch_run plain --scheme none --no-transform)
    t_plain+=("$s")
    read -r s _ < <(batch_run scan --scheme none --no-transform --clamd "$SOCKET")
    t_scanned+=("$s")
    read -r s _ < <(batch_run default-plain)
    t_dplain+=("$s")
    read -r s _ < <(batch_run default-scan --clamd "$SOCKET")
    t_dscanned+=("$s")
    bench_log "batch run $run: cheapest pipeline without scanning ${t_plain[-1]} s, with ${t_scanned[-1]} s;" \
        "default pipeline without ${t_dplain[-1]} s, with ${t_dscanned[-1]} s"
done
m_plain=$(bench_median "${t_plain[@]}")
m_scanned=$(bench_median "${t_scanned[@]}")
m_dplain=$(bench_median "${t_dplain[@]}")
m_dscanned=$(bench_median "${t_dscanned[@]}")
slower() { awk -v a="$1" -v b="$m_clamdscan" 'BEGIN { print (a > b ? a : b) }'; }

# --- 3. Peak RSS of a large scan ------------------------------------------------------------------------
BIG=$WORK/big-$BIG_MB.bin
[ -f "$BIG" ] || head -c $((BIG_MB << 20)) /dev/urandom >"$BIG"
read -r s_big rss_stream < <(bench_measure "$ATTACHE" scan --clamd "$SOCKET" --clamd-transfer stream --scan-timeout 3600 "$BIG" || true)
read -r s_fd rss_fd < <(bench_measure "$ATTACHE" scan --clamd "$SOCKET" --clamd-transfer descriptor --scan-timeout 3600 "$BIG" || true)

printf '\n%-52s %10s %10s %8s\n' "scan, $COUNT files (median of $RUNS)" "seconds" "files/s" "ratio"
printf '%-52s %10s %10s %8s\n' "clamdscan --fdpass --multiscan" "$m_clamdscan" "$(fps "$m_clamdscan")" "1.00"
printf '%-52s %10s %10s %8s\n' "attache scan (descriptors, --concurrency $CONCURRENCY)" "$m_attache" "$(fps "$m_attache")" "$(bench_ratio "$m_clamdscan" "$m_attache")"
printf '%-52s %10s %10s %8s\n' "attache scan --clamd-transfer stream" "$m_stream" "$(fps "$m_stream")" "$(bench_ratio "$m_clamdscan" "$m_stream")"
printf '\n%-52s %10s %10s %8s\n' "batch, $COUNT files (median of $RUNS)" "seconds" "files/s" "ratio"
printf '%-52s %10s %10s %8s\n' "attache batch --scheme none --no-transform" "$m_plain" "$(fps "$m_plain")" ""
printf '%-52s %10s %10s %8s\n' "  the same --clamd" "$m_scanned" "$(fps "$m_scanned")" "$(bench_ratio "$(slower "$m_plain")" "$m_scanned")"
printf '%-52s %10s %10s %8s\n' "attache batch (default pipeline)" "$m_dplain" "$(fps "$m_dplain")" ""
printf '%-52s %10s %10s %8s\n' "  the same --clamd" "$m_dscanned" "$(fps "$m_dscanned")" "$(bench_ratio "$(slower "$m_dplain")" "$m_dscanned")"
printf '%-52s\n' "  (ratio: files/s against the slower of batch without scanning and clamdscan alone)"
printf '\n%-52s %10s %10s\n' "one $BIG_MB MiB file" "seconds" "peak RSS"
printf '%-52s %10s %7s MB\n' "attache scan --clamd-transfer stream" "$s_big" "$((rss_stream / 1024))"
printf '%-52s %10s %7s MB\n' "attache scan --clamd-transfer descriptor" "$s_fd" "$((rss_fd / 1024))"

printf '\n'
bench_check scan.descriptor "$(bench_ratio "$m_clamdscan" "$m_attache")"
bench_check scan.batch-cheapest "$(bench_ratio "$(slower "$m_plain")" "$m_scanned")"
bench_check scan.batch-default "$(bench_ratio "$(slower "$m_dplain")" "$m_dscanned")"
bench_check scan.stream.rss "$((rss_stream / 1024))"
