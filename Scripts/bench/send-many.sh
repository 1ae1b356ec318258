#!/usr/bin/env bash
# A burst of small attachments in one process (issue 13): COUNT files of SIZE bytes sent all at once
# through one AttachmentPipeline (the library, default seal: a fresh stream-gcm key per file) to nginx on
# 127.0.0.1 (Tests/IntegrationTests/Tools/nginx-sink.sh, POST /upload). Reports files/s (first send to
# last receipt, the driver's own clock) and the peak RSS of the whole process, median of RUNS. With
# ATTACHE_BASELINE_BIN (a folder holding another build's attache-send-many-bench) both builds run in the
# same benchmark, alternating run by run, and the CPU ratio is reported as row send-many.cpu.baseline
# of Scripts/bench/thresholds.tsv (no bar).
# Normally started by Scripts/bench.sh, which builds the release binaries and exports ATTACHE_BIN.
#
# Environment:
#   RUNS=5            runs per build
#   COUNT=1000        files per run (all in flight at once)
#   SIZE=4096         bytes per file
#   ATTACHE_SEND_MANY_BENCH_BIN   the driver (default: attache-send-many-bench in ATTACHE_BENCH_DRIVERS, the
#                                 release folder of the Scripts/Benchmarks package, which Scripts/bench.sh builds)
#   ATTACHE_BASELINE_BIN          a folder with another build's attache-send-many-bench
set -euo pipefail
# shellcheck source=Scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

runs=${RUNS:-5}
count=${COUNT:-1000}
size=${SIZE:-4096}
bench_positive runs count size
[[ -n "${ATTACHE_BIN:-}" && -x "$ATTACHE_BIN" ]] \
    || bench_die "ATTACHE_BIN is not set to an executable (run through Scripts/bench.sh)"
driver=${ATTACHE_SEND_MANY_BENCH_BIN:-${ATTACHE_BENCH_DRIVERS:-$(dirname "$ATTACHE_BIN")}/attache-send-many-bench}
[[ -x "$driver" ]] || bench_die "$driver not found (swift build -c release --static-swift-stdlib --package-path Scripts/Benchmarks)"
baseline=${ATTACHE_BASELINE_BIN:-}
if [[ -n "$baseline" ]]; then
    [[ -x "$baseline/attache-send-many-bench" ]] \
        || bench_die "ATTACHE_BASELINE_BIN=$baseline does not hold an executable attache-send-many-bench"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-send-many.XXXXXX")
bench_on_exit "rm -rf '$work'"
bench_start_nginx "$work/nginx"
url=$BENCH_NGINX_HTTP

mkdir "$work/files"
python3 - "$work/files" "$count" "$size" <<'PY'
import os, sys
folder, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(count):
    with open(os.path.join(folder, f"note-{i:05d}.bin"), "wb") as handle:
        handle.write(os.urandom(size))
PY

tools=(library)
[[ -n "$baseline" ]] && tools+=(baseline)
command_of() {
    case "$1" in
        library) cmd=("$driver" "$url" "$work/files") ;;
        baseline) cmd=("$baseline/attache-send-many-bench" "$url" "$work/files") ;;
    esac
}

bench_log "warm-up: one untimed run of each"
for tool in "${tools[@]}"; do
    command_of "$tool"
    "${cmd[@]}" >/dev/null 2>"$work/err" || { tail -n 20 "$work/err" >&2; bench_die "$tool failed: ${cmd[*]}"; }
done

declare -A fps=() rss=() cpu=()
for ((run = 1; run <= runs; run++)); do
    for tool in "${tools[@]}"; do
        command_of "$tool"
        figures=$(BENCH_STDOUT="$work/out" bench_measure_cpu "${cmd[@]}" 2>"$work/err") && status=0 || status=$?
        if ((status != 0)); then
            tail -n 20 "$work/err" >&2
            bench_die "$tool failed (exit $status): ${cmd[*]}"
        fi
        read -r sent seconds < <(awk '{ print $2, $4 }' "$work/out")
        ((sent == count)) || bench_die "$tool: $sent of $count files stored"
        read -r _ k c <<<"$figures"
        rate=$(awk -v n="$count" -v s="$seconds" 'BEGIN { printf "%.0f", n / s }')
        fps[$tool]+="$rate "
        rss[$tool]+="$k "
        cpu[$tool]+="$c "
        bench_log "run $run/$runs $tool: $rate files/s, peak RSS ${k} KiB, CPU ${c}s"
    done
done

printf '\n%s files of %s bytes at once through one pipeline (stream-gcm), nginx on 127.0.0.1; median of %s runs\n' \
    "$count" "$size" "$runs"
for tool in "${tools[@]}"; do
    command_of "$tool"
    printf '  %-9s %s\n' "$tool:" "${cmd[*]}"
done
printf '\n%-9s %9s %19s %9s %9s\n' build 'files/s' '(range)' 'RSS MiB' 'CPU s'
for tool in "${tools[@]}"; do
    read -r -a f_list <<<"${fps[$tool]}"
    read -r -a k_list <<<"${rss[$tool]}"
    read -r -a c_list <<<"${cpu[$tool]}"
    sorted=$(printf '%s\n' "${f_list[@]}" | LC_ALL=C sort -g | tr '\n' ' ')
    printf '%-9s %9s %19s %9.1f %9.2f\n' "$tool" "$(bench_median "${f_list[@]}")" \
        "$(awk '{ print $1 "-" $NF }' <<<"$sorted")" \
        "$(awk -v k="$(bench_median "${k_list[@]}")" 'BEGIN { print k / 1024 }')" "$(bench_median "${c_list[@]}")"
done
if [[ -n "$baseline" ]]; then
    read -r -a a <<<"${fps[library]}"
    read -r -a b <<<"${fps[baseline]}"
    printf '\nfiles/s this build/baseline: %sx\n' "$(bench_ratio "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")")"
    read -r -a a <<<"${cpu[library]}"
    read -r -a b <<<"${cpu[baseline]}"
    bench_check send-many.cpu.baseline "$(bench_ratio "$(bench_median "${a[@]}")" "$(bench_median "${b[@]}")")"
fi
