#!/usr/bin/env bash
# Fuzzes every parser that reads hostile input with libFuzzer (plus AddressSanitizer): the detector
# (detect), unsealing and base64 (unseal), the server's answers (interpret), the image decoders
# (image), the HEIC/HEIF/AVIF decoder (heif), the request layer's property-list and sealed-form
# readers (requests) and the stream-gcm range reader (sealed-range);
# Sources/AttacheFuzzTargets says what each target does and checks.
#
# Usage: Scripts/fuzz.sh [SECONDS] [TARGET...] [-- extra libFuzzer flags...]
#   SECONDS (default 600) is the total: split evenly over the targets run (each gets at least 10 s).
#   TARGET names the targets to run (default: all).
#
# Builds attache-fuzz with -sanitize=fuzzer,address into its own scratch path (.build-fuzz), replays
# each seed corpus (Tests/FuzzCorpus/<target>/) once, then fuzzes each target with its seeds plus
# the inputs earlier runs found interesting (.build-fuzz/corpus/<target>/, never the seeds folder).
# A crash, a sanitizer report, a broken invariant, a timeout (10 s) or an out-of-memory input (2 GB)
# is a finding: the input is kept in fuzz-findings/<target>/ (git-ignored), every other target still
# runs, and the script exits 1. Replay a finding with a normal build:
#   swift build --product attache-fuzz && .build/debug/attache-fuzz unseal fuzz-findings/unseal/crash-<sha1>
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=600
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then seconds="$1"; shift; fi
all_targets=(detect unseal interpret image heif requests sealed-range)
targets=()
while (($#)); do
    if [[ "$1" == "--" ]]; then shift; break; fi
    targets+=("$1")
    shift
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for target in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $target "* ]] || {
        printf 'fuzz.sh: unknown target %s (targets: %s)\n' "$target" "${all_targets[*]}" >&2
        exit 64
    }
done
each=$((seconds / ${#targets[@]}))
((each >= 10)) || each=10

# The longest input each target is given: a detection head, two stream-gcm segments, a server answer
# within the interpreter's cap (kept short: longer bodies add no new paths), an image small enough to
# decode in milliseconds, a property list or sealed form answer.
declare -A max_len=([detect]=65536 [unseal]=140000 [interpret]=16384 [image]=65536 [heif]=16384 [requests]=16384 [sealed-range]=64)

scratch=.build-fuzz
findings=fuzz-findings
# lld, because GNU gold (the default here) crashes in its own error reporting on the sanitizer build.
# Our own C (libjpeg's streaming decoder and the resampler, the base64 encoder) is instrumented too.
swift build -c release --scratch-path "$scratch" --product attache-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING -Xswiftc -use-ld=lld \
    -Xcc -fsanitize=fuzzer-no-link,address
binary="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/attache-fuzz"

# Leaks in system libraries that are not ours to fix, each with its reason.
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$PWD/Scripts/sanitizers/lsan.supp:print_suppressions=0}"

failed=()
for target in "${targets[@]}"; do
    mkdir -p "$scratch/corpus/$target" "$findings/$target"
    echo "==> $target: $each s (seeds: Tests/FuzzCorpus/$target)"
    start=$SECONDS
    if "$binary" "$target" "$scratch/corpus/$target" "Tests/FuzzCorpus/$target" \
        -max_total_time="$each" -max_len="${max_len[$target]}" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$findings/$target/" -print_final_stats=1 "$@" 2> "$scratch/$target.log"; then
        result=ok
    else
        result=FAILED
        failed+=("$target")
        tail -n 40 "$scratch/$target.log" >&2
    fi
    runs=$(grep -o '^stat::number_of_executed_units: *[0-9]*' "$scratch/$target.log" | grep -o '[0-9]*$' || echo "?")
    echo "    $result: $runs runs in $((SECONDS - start)) s (log: $scratch/$target.log)"
done

if ((${#failed[@]})); then
    printf 'fuzz.sh: findings in %s: %s\n' "$findings" "$(ls "${failed[@]/#/$findings/}" 2>/dev/null | tr '\n' ' ')" >&2
    exit 1
fi
echo "fuzz.sh: no findings"
