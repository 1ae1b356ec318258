#!/usr/bin/env bash
# Benchmarks the Detect stage against libmagic, in the same run:
#   1. whole process: `attache detect FILES` vs `file --mime-type FILES` over the same few hundred
#      files (the labelled corpus, copied to N files), timed with hyperfine; prints the ratio; and
#      `attache detect` over ten times as many, for the cost per file apart from start-up;
#   2. in process: MIMEDetector.detect(prefix:) on 4 KiB buffers per second (attache-fuzz --bench,
#      five runs: minimum, median, maximum);
#   3. accuracy: the labelled corpus, expected type vs each tool's answer;
# then each figure against its bar (rows detect.* of Scripts/bench/thresholds.tsv).
# Usage: [STATIC=1] Scripts/bench/detect.sh [COPIES]   (default 4 copies of the ~100-file corpus)
set -euo pipefail
cd "$(dirname "$0")/../.."
# bench_check only: this script keeps its own EXIT trap.
. Scripts/bench/lib.sh --thresholds-only
copies="${1:-4}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The Swift runtime is linked statically, as Scripts/bench.sh builds it: the process starts much faster,
# which is most of the whole-process time over a few hundred files.
build=(swift build -c release --static-swift-stdlib)
"${build[@]}" --product attache > /dev/null
"${build[@]}" --product attache-fuzz > /dev/null
bin="$("${build[@]}" --show-bin-path)"

Scripts/bench/detect-corpus.sh "$work/corpus" > /dev/null 2>&1
# Ten times as many files as compared with file(1), to take the per-file cost apart from start-up.
mkdir -p "$work/many"
for ((i = 0; i < copies * 10; i++)); do
    for f in "$work/corpus"/*; do
        name="$(basename "$f")"
        [[ "$name" == labels.tsv ]] && continue
        cp "$f" "$work/many/$i-$name"
    done
done
# Relative names run from inside the folder: hyperfine -N passes the command as one argument, and
# 4 000 absolute paths would pass the kernel's limit on the length of one argument.
cd "$work/many"
few=()
for ((i = 0; i < copies; i++)); do few+=("$i"-*); done
all=(*)
count="${#few[@]}"
echo "== whole process over $count files (file $(file --version | head -1 | cut -d- -f2)); per file from ${#all[@]} files"
hyperfine --warmup 3 --min-runs 20 -N --export-json "$work/hyperfine.json" \
    -n "attache detect" "$bin/attache detect ${few[*]}" \
    -n "file --mime-type" "file --mime-type ${few[*]}" \
    -n "attache detect (${#all[@]} files)" "$bin/attache detect ${all[*]}" 2>/dev/null | grep -vE '^\s*$' || true
cd - > /dev/null
whole=$(python3 - "$work/hyperfine.json" "$count" "${#all[@]}" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
few, many = int(sys.argv[2]), int(sys.argv[3])
a, f = results["attache detect"], results["file --mime-type"]
m = results[f"attache detect ({many} files)"]
print(f"median: attache detect {a['median']*1000:.2f} ms, file --mime-type {f['median']*1000:.2f} ms, "
      f"ratio {f['median']/a['median']:.1f}x faster")
per_file = (m["median"] - a["median"]) / (many - few)
print(f"attache detect per file: ({m['median']*1000:.2f} ms - {a['median']*1000:.2f} ms) / {many - few} = "
      f"{per_file*1e6:.2f} us; start-up and the rest: {(a['median'] - few * per_file)*1000:.2f} ms")
PY
)
printf '%s\n' "$whole"

echo "== in process, 4 KiB buffers (5 runs of 1 s)"
in_process=$("$bin/attache-fuzz" --bench --runs 5 "$work/corpus"/*)
printf '%s\n' "$in_process"

echo "== accuracy on the labelled corpus"
"$bin/attache" detect --json "$work/corpus"/* > "$work/attache.jsonl" || true
file --mime-type "$work/corpus"/* > "$work/file.txt" || true
accuracy=$(python3 - "$work/corpus" "$work/attache.jsonl" "$work/file.txt" <<'PY'
import json, os, sys
folder, ours, theirs = sys.argv[1:4]
labels = [l.rstrip("\n").split("\t") for l in open(os.path.join(folder, "labels.tsv"))]
attache = {os.path.basename(o["path"]): o for o in map(json.loads, open(ours))}
magic = {}
for line in open(theirs):
    path, _, mime = line.rstrip("\n").rpartition(": ")
    magic[os.path.basename(path)] = mime.strip()  # file(1) pads the type to align the columns
# Names libmagic uses for the same registered types; counted as right in the "alias" column.
aliases = {"audio/x-wav": "audio/wav", "image/x-ms-bmp": "image/bmp", "audio/x-hx-aac-adts": "audio/aac",
           "audio/x-flac": "audio/flac", "video/x-matroska": "video/matroska", "audio/x-m4a": "audio/mp4",
           "application/x-rar": "application/vnd.rar", "application/x-gzip": "application/gzip",
           "application/x-sqlite3": "application/vnd.sqlite3", "text/xml": "application/xml",
           "image/x-icon": "image/vnd.microsoft.icon", "audio/x-aiff": "audio/aiff", "inode/x-empty": "application/x-empty",
           "application/x-dosexec": "application/vnd.microsoft.portable-executable", "text/x-shellscript": "text/x-shellscript",
           "application/x-zstd": "application/zstd", "audio/x-mp4a-latm": "audio/mp4", "video/x-ms-asf": "video/x-ms-asf",
           "application/x-wine-extension-ini": "text/plain", "image/svg": "image/svg+xml"}
rows, ours_ok, ours_kind, magic_ok, magic_alias = [], 0, 0, 0, 0
for name, mime, kind in labels:
    a = attache.get(name, {})
    m = magic.get(name, "?")
    ok = a.get("mime") == mime
    kind_ok = a.get("kind") == kind
    ours_ok += ok; ours_kind += kind_ok
    magic_ok += m == mime
    magic_alias += aliases.get(m, m) == mime
    rows.append((name, mime, a.get("mime", a.get("error", "?")), m, "ok" if ok and kind_ok else "WRONG", "ok" if aliases.get(m, m) == mime else "wrong"))
w = [max(len(r[i]) for r in rows) for i in range(4)]
print(f"{'file':<{w[0]}}  {'expected':<{w[1]}}  {'attache':<{w[2]}}  {'file(1)':<{w[3]}}  attache  file(1)")
for r in rows:
    print(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]:<{w[3]}}  {r[4]:<7}  {r[5]}")
n = len(rows)
print(f"\nattache: type {ours_ok}/{n}, type+kind {sum(1 for r in rows if r[4] == 'ok')}/{n}; "
      f"file --mime-type: exact {magic_ok}/{n}, counting its aliases {magic_alias}/{n}")
PY
)
printf '%s\n' "$accuracy"

echo "== bars"
# "median: ... ratio 29.0x faster", "per_second min=... median=1520000 max=...", "type+kind 101/101"
bench_check detect.whole-process "$(sed -n 's/^median: .*, ratio \([0-9.]*\)x faster$/\1/p' <<<"$whole")"
bench_check detect.in-process "$(sed -n 's/^per_second .*median=\([0-9]*\) .*$/\1/p' <<<"$in_process")"
bench_check detect.accuracy "$(sed -n 's|^attache: .*type+kind \([0-9]*\)/\([0-9]*\);.*$|\1 \2|p' <<<"$accuracy" \
    | awk '$2 > 0 { printf "%.3f", $1 / $2 }')"
