#!/usr/bin/env bash
# Fuzzes the Detect stage with libFuzzer: every content sniffer and header parser behind
# MIMEDetector. Builds attache-fuzz with -sanitize=fuzzer (plus the address sanitizer) into its own
# scratch path, seeds the corpus with the detection corpus, and runs for SECONDS (default 600).
# Crashers are written to .build-fuzz/crashes/; replay one with a normal build:
#   swift run attache-fuzz .build-fuzz/crashes/crash-<sha1>
# Usage: Scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
scratch=.build-fuzz
mkdir -p "$scratch/corpus" "$scratch/crashes"

# lld, because GNU gold (the default here) crashes in its own error reporting on the sanitizer build.
swift build -c release --scratch-path "$scratch" --product attache-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING -Xswiftc -use-ld=lld

if [[ -z "$(ls -A "$scratch/corpus")" ]]; then
    seeds="$(mktemp -d)"
    if Scripts/bench/detect-corpus.sh "$seeds" > /dev/null 2>&1; then
        # Seeds larger than the head size only slow the fuzzer down; keep their first 64 KiB.
        for f in "$seeds"/*; do head -c 65536 "$f" > "$scratch/corpus/$(basename "$f")"; done
    else
        printf 'RIFF\0\0\0\0WEBPVP8 ' > "$scratch/corpus/seed"
    fi
    rm -rf "$seeds"
fi

binary="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/attache-fuzz"
"$binary" "$scratch/corpus" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$scratch/crashes/" -print_final_stats=1 "$@"
