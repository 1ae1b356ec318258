#!/usr/bin/env bash
# Image recompression benchmark: `attache recompress` against vipsthumbnail and ImageMagick, same run,
# same inputs, 12 MP → 1280 px at quality 80. Prints a Markdown table: median CPU time (user+sys), median
# wall time, median peak RSS, output size, and SSIM against one reference per input (ImageMagick Lanczos
# from a full decode, no JPEG step; alpha flattened onto white), then the acceptance ratios.
#
# Then the pixel cap: cap.png, an all-zero 10000×9999 RGB PNG (100 MP, ~291 KB), through `attache
# recompress` and vipsthumbnail, through `attache upload` and, eight copies, `attache batch` to the
# reference server on 127.0.0.1 (peak RSS of the client; the batch transforms as many images at once as
# the machine has cores, which is printed). Last, each figure against its bar (rows images.* of
# Scripts/bench/thresholds.tsv).
#
# The working set of an input is its peak RSS less the program's own floor (`attache detect` on a small
# text file), rows images.*.working-set.
#
# Usage: Scripts/bench/images.sh [RUNS]      (default 5 runs per tool and input)
# Needs: swift, ImageMagick (convert), vipsthumbnail, python3 with numpy and scipy, GNU time.
# ATTACHE_BIN and ATTACHE_SERVER_BIN (Scripts/bench.sh exports them) skip the build.
set -euo pipefail

runs=${1:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
# bench_check only for now; the full lib.sh comes later, for the server.
. "$root/Scripts/bench/lib.sh" --thresholds-only
work=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building attache (release)…" >&2
if [ -n "${ATTACHE_BIN:-}" ]; then
    attache=$ATTACHE_BIN
else
    (cd "$root" && swift build -c release --static-swift-stdlib --product attache >&2)
    (cd "$root" && swift build -c release --static-swift-stdlib --product attache-server >&2)
    attache="$(cd "$root" && swift build -c release --static-swift-stdlib --show-bin-path)/attache"
    ATTACHE_SERVER_BIN="$(dirname "$attache")/attache-server"
    export ATTACHE_SERVER_BIN
fi

echo "making inputs in $work…" >&2
# Photo-like: fractal plasma (large smooth areas and edges) with mild sensor-like noise, 4:2:0 q90.
convert -size 4000x3000 -seed 7 plasma:fractal -blur 0x1 +noise Gaussian -attenuate 0.3 \
    -quality 90 -sampling-factor 2x2 "$work/photo.jpg"
convert "$work/photo.jpg" -interlace JPEG -quality 90 -sampling-factor 2x2 "$work/progressive.jpg"
convert "$work/photo.jpg" \( -size 3000x4000 gradient:white-black -rotate 90 \) -alpha off \
    -compose CopyOpacity -composite "$work/alpha.png"
# A photo saved as PNG: opaque 8-bit RGB, filtered and deflated by ImageMagick's defaults (~28 MB).
convert "$work/photo.jpg" "$work/photo.png"
# The pixel cap: 10000×9999 RGB, all zero, deflated at level 9 (~291 KB), written row by row.
python3 - "$work/cap.png" <<'PY'
import struct, sys, zlib
width, height = 10000, 9999
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
deflate, row, idat = zlib.compressobj(9), bytes(1 + width * 3), []
for _ in range(height):
    idat.append(deflate.compress(row))
idat.append(deflate.flush())
with open(sys.argv[1], "wb") as out:
    out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
    out.write(chunk(b"IDAT", b"".join(idat)) + chunk(b"IEND", b""))
PY

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# measure NAME INPUT OUTPUT COMMAND...: runs the command $runs times, prints "cpu wall rss_kib".
measure() {
    local output=$1; shift
    local log="$work/time.log"; : > "$log"
    for _ in $(seq "$runs"); do
        rm -f "$output"
        # CPU (user + system) with microsecond resolution, wall, peak RSS: Scripts/bench/rusage.py.
        python3 "$root/Scripts/bench/rusage.py" "$@" >> "$log"
    done
    local cpu wall rss
    cpu=$(awk '{ print $1 }' "$log" | median)
    wall=$(awk '{ print $2 }' "$log" | median)
    rss=$(awk '{ print $3 }' "$log" | median)
    echo "$cpu $wall $rss"
}

# The program's own floor: the peak RSS of `attache detect` on a small text file. An input's working set
# is the peak RSS of its recompress less this (what several transforms at once each add).
echo "a small text file" > "$work/small.txt"
read -r _ _ floor_kib < <(measure "$work/none" "$attache" detect "$work/small.txt")
working_set() { printf '%.1f' "$(echo "($1 - $floor_kib) / 1024" | bc -l)"; }

printf '| input | tool | CPU s (median) | wall s | peak RSS MiB | output bytes | SSIM |\n'
printf '|---|---|---:|---:|---:|---:|---:|\n'
summary=""
checks=()
for input in photo.jpg progressive.jpg alpha.png photo.png; do
    in="$work/$input"
    ref="$work/ref-${input%.*}.png"
    convert "$in" -background white -flatten -filter Lanczos -resize 1280x1280 "$ref"
    declare -A cpu=() rss_kib=()
    for tool in attache vipsthumbnail imagemagick; do
        out="$work/out-${input%.*}-$tool.jpg"
        case $tool in
        attache) read -r c w r < <(measure "$out" "$attache" recompress "$in" -o "$out" --max-side 1280 --quality 80) ;;
        vipsthumbnail) read -r c w r < <(measure "$out" vipsthumbnail "$in" -s 1280 -o "$out[Q=80,background=255]") ;;
        imagemagick) read -r c w r < <(measure "$out" convert "$in" -background white -flatten -resize 1280x1280 -quality 80 "$out") ;;
        esac
        size=$(stat -c %s "$out")
        ssim=$(python3 "$root/Scripts/bench/ssim.py" "$ref" "$out" | awk '{ print $1 }')
        cpu[$tool]=$c
        rss_kib[$tool]=$r
        printf '| %s | %s | %.3f | %.3f | %.1f | %d | %s |\n' "$input" "$tool" "$c" "$w" "$(echo "$r / 1024" | bc -l)" "$size" "$ssim"
        eval "size_${tool}=$size; ssim_${tool}=$ssim"
    done
    vips_ratio=$(printf '%.2f' "$(echo "${cpu[attache]} / ${cpu[vipsthumbnail]}" | bc -l)")
    magick_ratio=$(printf '%.2f' "$(echo "${cpu[attache]} / ${cpu[imagemagick]}" | bc -l)")
    ssim_delta=$(printf '%+.4f' "$(echo "$ssim_attache - $ssim_vipsthumbnail" | bc -l)")
    size_ratio=$(printf '%.2f' "$(echo "$size_attache / $size_vipsthumbnail" | bc -l)")
    summary+=$(printf '%s: CPU attache/vips %s, attache/ImageMagick %s, SSIM attache−vips %s, size attache/vips %s' \
        "$input" "$vips_ratio" "$magick_ratio" "$ssim_delta" "$size_ratio")$'\n'
    rss_mib=$(printf '%.1f' "$(echo "${rss_kib[attache]} / 1024" | bc -l)")
    case $input in
        photo.jpg)
            checks+=("$(bench_check images.jpeg.cpu "$vips_ratio")" "$(bench_check images.jpeg.cpu-imagemagick "$magick_ratio")"
                "$(bench_check images.jpeg.ssim "$ssim_delta")"
                "$(bench_check images.jpeg.size "$(awk -v r="$size_ratio" 'BEGIN { d = r - 1; printf "%.2f", d < 0 ? -d : d }')")"
                "$(bench_check images.jpeg.rss "$rss_mib")") ;;
        progressive.jpg) checks+=("$(bench_check images.progressive.rss "$rss_mib")"
                "$(bench_check images.progressive.cpu "$vips_ratio")"
                "$(bench_check images.progressive.working-set "$(working_set "${rss_kib[attache]}")")") ;;
        photo.png) checks+=("$(bench_check images.png.cpu "$vips_ratio")"
                "$(bench_check images.png.working-set "$(working_set "${rss_kib[attache]}")")") ;;
    esac
done
printf '\n%s' "$summary"
printf 'floor (attache detect on a small text file): %.1f MiB peak RSS\n' "$(echo "$floor_kib / 1024" | bc -l)"

# --- The pixel cap ---------------------------------------------------------------------------------
printf '\n| 100 MP all-zero PNG (cap.png) | tool | CPU s (median) | wall s | peak RSS MiB |\n|---|---|---:|---:|---:|\n'
cap_row() { printf '| %s | %s | %.3f | %.3f | %.1f |\n' "$1" "$2" "$3" "$4" "$(echo "$5 / 1024" | bc -l)"; }
read -r c w r < <(measure "$work/cap-attache.jpg" "$attache" recompress "$work/cap.png" -o "$work/cap-attache.jpg" --max-side 1280 --quality 80)
cap_row "recompress → 1280 px" attache "$c" "$w" "$r"
cap_rss=$r
read -r c w r < <(measure "$work/cap-vips.jpg" vipsthumbnail "$work/cap.png" -s 1280 -o "$work/cap-vips.jpg[Q=80]")
cap_row "thumbnail → 1280 px" vipsthumbnail "$c" "$w" "$r"

if [[ -n "${ATTACHE_SERVER_BIN:-}" && -x "${ATTACHE_SERVER_BIN}" ]]; then
    # lib.sh takes over the EXIT trap: hand it the work directory's removal too.
    . "$root/Scripts/bench/lib.sh"
    bench_on_exit "rm -rf '$work'"
    bench_start_server "$work/store"
    read -r c w r < <(measure "$work/none" "$attache" upload "$work/cap.png" --url "$BENCH_URL/upload")
    cap_row "upload (1 file)" attache "$c" "$w" "$r"
    upload_rss=$r
    mkdir -p "$work/eight"
    for i in 1 2 3 4 5 6 7 8; do
        # Eight different files (the batch would skip identical ones as already sent).
        { cat "$work/cap.png"; printf 'copy %d' "$i"; } > "$work/eight/cap$i.png"
    done
    # A fresh journal per run, so that every run sends all eight.
    read -r c w r < <(measure "$work/none" bash -c 'rm -f "$1"/journal.sqlite*; exec "$2" batch "$1/eight" --url "$3" --journal "$1/journal.sqlite" --concurrency 8' \
        batch "$work" "$attache" "$BENCH_URL/upload")
    cap_row "batch of 8 ($(nproc) transforms at once)" attache "$c" "$w" "$r"
    batch_rss=$r
fi
printf '\ncap.png: peak RSS recompress %.1f MiB' "$(echo "$cap_rss / 1024" | bc -l)"
[[ -n "${upload_rss:-}" ]] && printf ', upload %.1f MiB, batch of 8 %.1f MiB' \
    "$(echo "$upload_rss / 1024" | bc -l)" "$(echo "$batch_rss / 1024" | bc -l)"
printf '\n\n'
printf '%s\n' "${checks[@]}"
bench_check images.cap.rss "$(printf '%.1f' "$(echo "$cap_rss / 1024" | bc -l)")"
if [[ -n "${upload_rss:-}" ]]; then
    bench_check images.cap-upload.rss "$(printf '%.1f' "$(echo "$upload_rss / 1024" | bc -l)")"
    bench_check images.cap-batch.rss "$(printf '%.1f' "$(echo "$batch_rss / 1024" | bc -l)")"
fi

# --- HEIC --------------------------------------------------------------------------------------------
# The 12 MP photo as iPhones store theirs: a grid of 512×512 HEVC tiles (Scripts/heif-grid.py, heif-enc
# -q 70 per tile), and the same photo as one 12 MP picture (heif-enc -q 70), to 1280 px, against
# vipsthumbnail (libheif 1.15 and libde265 inside it), alternating run by run. The working set is the
# median peak RSS less the median peak RSS of `attache detect` on a small text file (the binary's floor),
# in MB (10⁶ bytes). ATTACHE_BASELINE_BIN (an `attache` of another build) adds its CPU and working set on
# the grid, measured in the same rounds. HEIC_RUNS sets the rounds (default: the runs above, at least 7).
heic_runs=${HEIC_RUNS:-$(( runs > 7 ? runs : 7 ))}
echo "making the HEIC inputs (x265: a few minutes)…" >&2
python3 "$root/Scripts/heif-grid.py" "$work/photo.jpg" "$work/grid.heic" --tile 512 -q 70
heif-enc -q 70 -o "$work/one.heic" "$work/photo.jpg" >/dev/null
printf 'text\n' > "$work/floor.txt"

# heic_round TAG COMMAND...: one run, its "cpu wall rss_kib" appended to $work/heic-TAG.log.
heic_round() {
    local tag=$1; shift
    python3 "$root/Scripts/bench/rusage.py" "$@" >> "$work/heic-$tag.log"
}
heic_median() { awk -v f="$2" '{ print $f }' "$work/heic-$1.log" | median; }
rm -f "$work"/heic-*.log
for _ in $(seq "$heic_runs"); do
    heic_round floor "$attache" detect "$work/floor.txt"
    for input in grid one; do
        heic_round "attache-$input" "$attache" recompress "$work/$input.heic" -o "$work/out-$input-attache.jpg" --max-side 1280 --quality 80
        heic_round "vips-$input" vipsthumbnail "$work/$input.heic" -s 1280 -o "$work/out-$input-vips.jpg[Q=80]"
        if [[ -n "${ATTACHE_BASELINE_BIN:-}" && $input == grid ]]; then
            heic_round baseline-grid "$ATTACHE_BASELINE_BIN" recompress "$work/grid.heic" -o "$work/out-grid-baseline.jpg" --max-side 1280 --quality 80
        fi
    done
done
floor_kib=$(heic_median floor 3)
heic_mb() { printf '%.1f' "$(echo "($1 - $floor_kib) * 1024 / 1000000" | bc -l)"; }
printf '\n| HEIC, 12 MP to 1280 px (%s rounds) | tool | CPU s (median) | peak RSS MiB | working set MB |\n|---|---|---:|---:|---:|\n' "$heic_runs"
for input in grid one; do
    for tool in attache vips $([[ -n "${ATTACHE_BASELINE_BIN:-}" && $input == grid ]] && echo baseline); do
        r=$(heic_median "$tool-$input" 3)
        printf '| %s | %s | %.3f | %.1f | %s |\n' "$input" "$tool" "$(heic_median "$tool-$input" 1)" \
            "$(echo "$r / 1024" | bc -l)" "$([[ $tool == vips ]] && echo — || heic_mb "$r")"
    done
done
printf '(floor: attache detect, peak RSS %.1f MiB)\n\n' "$(echo "$floor_kib / 1024" | bc -l)"
bench_check images.heic.working-set "$(heic_mb "$(heic_median attache-grid 3)")"
bench_check images.heic.cpu "$(printf '%.2f' "$(echo "$(heic_median attache-grid 1) / $(heic_median vips-grid 1)" | bc -l)")"
bench_check images.heic-one.working-set "$(heic_mb "$(heic_median attache-one 3)")"
bench_check images.heic-one.cpu "$(printf '%.2f' "$(echo "$(heic_median attache-one 1) / $(heic_median vips-one 1)" | bc -l)")"
if [[ -n "${ATTACHE_BASELINE_BIN:-}" ]]; then
    bench_check images.heic.cpu.baseline "$(printf '%.2f' "$(echo "$(heic_median attache-grid 1) / $(heic_median baseline-grid 1)" | bc -l)")"
fi
