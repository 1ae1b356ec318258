#!/usr/bin/env bash
# Benchmark of dedup within a run: `attache batch` with the default pipeline over a set where 30 % of the
# files are copies, with --dedup run (the default) against --dedup off, the same binary, the reference
# server, alternating runs, medians. Called as `Scripts/bench.sh dedup`, or directly.
#
#   BENCH_FILES   files in the set (default 2000): 70 % distinct sources (photos made distinct by a few bytes
#                 of their own appended, screenshots, PDFs), 30 % copies: one sticker 100 times, one PDF 50
#                 times, one video (Samples/clip.mp4) 10 times, and photos forwarded 20 times each (the rest).
#                 The files are named in a shuffled order (seeded, the same every run), so that copies meet
#                 their sources at random moments, as forwarded media does: some in flight together, most
#                 later, when the output kept for later copies is what saves the work.
#   RUNS          runs per mode (default 5)
#   BENCH_DIR     work folder (default $TMPDIR/attache-bench-dedup)
#   ATTACHE_BIN   the attache binary (Scripts/bench.sh exports a release build)
#
# Prints files/s and client CPU (user+sys) of each mode, their ratios against dedup.speed and dedup.cpu in
# Scripts/bench/thresholds.tsv, and dedup.transforms: the transforms --dedup run ran (receipts of a kind the
# pipeline transforms whose transform was not reused) per distinct source among them, 1.00 when each
# distinct source was transformed once.
set -euo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
. Scripts/bench/lib.sh
FILES=${BENCH_FILES:-2000}
RUNS=${RUNS:-5}
bench_positive FILES=BENCH_FILES RUNS
WORK=${BENCH_DIR:-${TMPDIR:-/tmp}/attache-bench-dedup}
ATTACHE=${ATTACHE_BIN:-$ROOT/.build/release/attache}
[ -x "$ATTACHE" ] || bench_die "no attache binary at $ATTACHE (set ATTACHE_BIN)"

rm -rf "$WORK" && mkdir -p "$WORK/set"
python3 - "$ROOT/Samples" "$WORK/set" "$FILES" <<'EOF'
import os, shutil, sys
samples, out, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
copies = int(total * 0.3)
distinct = total - copies
sources = []
for i in range(distinct):
    name, ext = [("photo.jpg", "jpg"), ("photo.jpg", "jpg"), ("screenshot.png", "png"), ("document.pdf", "pdf")][i % 4]
    path = os.path.join(out, f"d{i:05d}.{ext}")
    with open(os.path.join(samples, name), "rb") as source, open(path, "wb") as target:
        target.write(source.read())
        target.write(b"attache-bench-%06d" % i)
    sources.append(path)
made = 0
def copy(source, ext):
    global made
    if made < copies:
        shutil.copyfile(source, os.path.join(out, f"c{made:05d}.{ext}"))
        made += 1
def shuffle_names():
    import random
    names = sorted(os.listdir(out))
    order = list(range(len(names)))
    random.Random(2026).shuffle(order)
    for name, position in zip(names, order):
        os.rename(os.path.join(out, name), os.path.join(out, f"f{position:05d}-{name}"))
for _ in range(100): copy(os.path.join(samples, "sticker.webp"), "webp")
for _ in range(50): copy(os.path.join(samples, "document.pdf"), "pdf")
for _ in range(10): copy(os.path.join(samples, "clip.mp4"), "mp4")
photos = [p for p in sources if p.endswith(".jpg")]
index = 0
while made < copies and photos:
    copy(photos[(index // 20) % len(photos)], "jpg")  # photos forwarded 20 times each
    index += 1
shuffle_names()
EOF
distinct_sources=$(sha256sum "$WORK"/set/* | awk '{print $1}' | sort -u | wc -l)
bench_log "set: $FILES files, $distinct_sources distinct sources"

bench_start_server "$WORK/store"
URL=$BENCH_URL/upload

run_mode() {  # run_mode MODE RUN: "WALL CPU TRANSFORMS" on stdout
    local journal=$WORK/journal-$1-$2.sqlite out=$WORK/receipts-$1-$2.jsonl
    /usr/bin/time -f '%e %U %S' -o "$WORK/time" "$ATTACHE" batch "$WORK/set" --url "$URL" --journal "$journal" \
        --json --dedup "$1" > "$out" 2> "$WORK/last.err" || { tail -5 "$WORK/last.err" >&2; bench_die "attache batch --dedup $1 failed"; }
    local ratio
    ratio=$(python3 - "$out" <<'PY'
import hashlib, json, sys
# Transforms run (receipts of a kind the pipeline transforms, not reused) over the distinct sources among them.
ran, sources = 0, set()
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event.get("event") != "succeeded":
        continue
    receipt = event["receipt"]
    if receipt.get("kind") == "file":
        continue
    sources.add(hashlib.sha256(open(receipt["path"], "rb").read()).hexdigest())
    if not receipt.get("transform", {}).get("reused"):
        ran += 1
print(f"{ran / max(1, len(sources)):.2f}")
PY
)
    awk -v t="$ratio" '{printf "%s %.2f %s\n", $1, $2 + $3, t}' "$WORK/time"
}

on_walls=() on_cpus=() off_walls=() off_cpus=() reuse_walls=()
for run in $(seq 1 "$RUNS"); do
    read -r wall cpu on_transforms < <(run_mode run "$run")
    on_walls+=("$wall") on_cpus+=("$cpu")
    read -r owall ocpu off_transforms < <(run_mode off "$run")
    off_walls+=("$owall") off_cpus+=("$ocpu")
    read -r rwall rcpu _ < <(run_mode reuse "$run")
    reuse_walls+=("$rwall")
    bench_log "run $run: --dedup run ${wall} s ${cpu} CPU-s ($on_transforms transforms per distinct source); --dedup off ${owall} s ${ocpu} CPU-s ($off_transforms); --dedup reuse ${rwall} s ${rcpu} CPU-s"
done

# What a user checks, on the last run of each mode: every file has a receipt, and every receipt's key
# opens the file the server holds (attache download --from with a key file per receipt, decrypting and
# verifying each). And --dedup reuse sent the distinct sources' sealed bytes, no more.
check=$(python3 - "$WORK" "$RUNS" "$FILES" "$URL" <<'PY'
import hashlib, json, os, sys
work, runs, files, url = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
keys = os.path.join(work, "keys")
os.makedirs(keys, mode=0o700, exist_ok=True)
sealed_by_source, reuse_sent, receipts, lines = {}, 0, 0, []
for mode in ("run", "reuse"):
    for line in open(os.path.join(work, f"receipts-{mode}-{runs}.jsonl")):
        event = json.loads(line)
        if event.get("event") != "succeeded":
            continue
        receipt = event["receipt"]
        receipts += 1
        digest = hashlib.sha256(open(receipt["path"], "rb").read()).hexdigest()
        if mode == "run":
            sealed_by_source[digest] = receipt["sentByteCount"]
        elif "dedup" not in receipt:
            reuse_sent += receipt["sentByteCount"]
        key_file = os.path.join(keys, f"{mode}-{receipts}")
        with open(os.open(key_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
            out.write(receipt["seal"]["key"])
        lines.append(json.dumps({"url": receipt["url"], "output": f"{mode}-{receipts}", "keyFile": key_file}))
with open(os.path.join(work, "downloads.list"), "w") as out:
    out.write("\n".join(lines) + "\n")
print(receipts, f"{reuse_sent / max(1, sum(sealed_by_source.values())):.2f}")
PY
)
read -r receipts reuse_bytes <<<"$check"
rm -rf "$WORK/opened"
if "$ATTACHE" download --from "$WORK/downloads.list" -d "$WORK/opened" --concurrency 8 > "$WORK/download.out" 2> "$WORK/download.err"; then
    opened=$(find "$WORK/opened" -type f ! -name '*.sqlite*' | wc -l)
else
    tail -5 "$WORK/download.err" >&2
    opened=0
fi
bench_log "receipts of the last run and reuse run: $receipts; opened with their keys: $opened"
on=$(bench_median "${on_walls[@]}") off=$(bench_median "${off_walls[@]}")
printf 'dedup: %s files (%s distinct sources); --dedup run %s s (%s files/s), %s CPU-s; --dedup off %s s (%s files/s), %s CPU-s\n' \
    "$FILES" "$distinct_sources" "$on" "$(python3 -c "print(f'{$FILES / $on:.1f}')")" "$(bench_median "${on_cpus[@]}")" \
    "$off" "$(python3 -c "print(f'{$FILES / $off:.1f}')")" "$(bench_median "${off_cpus[@]}")"
bench_check dedup.speed "$(python3 -c "print(f'{$off / $on:.2f}')")"
bench_check dedup.cpu "$(bench_ratio "$(bench_median "${on_cpus[@]}")" "$(bench_median "${off_cpus[@]}")")"
bench_check dedup.transforms "$on_transforms"
reuse=$(bench_median "${reuse_walls[@]}")
printf 'dedup: --dedup reuse %s s (%s files/s); sealed bytes sent / distinct sources sealed bytes %s\n' \
    "$reuse" "$(python3 -c "print(f'{$FILES / $reuse:.1f}')")" "$reuse_bytes"
bench_check dedup.reuse.speed "$(python3 -c "print(f'{$off / $reuse:.2f}')")"
bench_check dedup.reuse.bytes "$reuse_bytes"
bench_check dedup.opens "$(python3 -c "print(f'{$opened / (2 * $FILES):.2f}')")"
