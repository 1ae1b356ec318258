#!/usr/bin/env bash
# Image recompression benchmark: `attache recompress` against vipsthumbnail and ImageMagick, same run,
# same inputs, 12 MP → 1280 px at quality 80. Prints a Markdown table: median CPU time (user+sys), median
# wall time, median peak RSS, output size, and SSIM against one reference per input (ImageMagick Lanczos
# from a full decode, no JPEG step; alpha flattened onto white), then the acceptance ratios.
#
# Usage: Scripts/bench/images.sh [RUNS]      (default 5 runs per tool and input)
# Needs: swift, ImageMagick (convert), vipsthumbnail, python3 with numpy and scipy, GNU time.
set -euo pipefail

runs=${1:-5}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/attache-bench-images.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "building attache (release)…" >&2
if [ -n "${ATTACHE_BIN:-}" ]; then
    attache=$ATTACHE_BIN
else
    (cd "$root" && swift build -c release --static-swift-stdlib --product attache >&2)
    (cd "$root" && swift build -c release --static-swift-stdlib --product attache-pipeline >&2)
    attache="$(cd "$root" && swift build -c release --static-swift-stdlib --show-bin-path)/attache"
fi

echo "making inputs in $work…" >&2
# Photo-like: fractal plasma (large smooth areas and edges) with mild sensor-like noise, 4:2:0 q90.
convert -size 4000x3000 -seed 7 plasma:fractal -blur 0x1 +noise Gaussian -attenuate 0.3 \
    -quality 90 -sampling-factor 2x2 "$work/photo.jpg"
convert "$work/photo.jpg" -interlace JPEG -quality 90 -sampling-factor 2x2 "$work/progressive.jpg"
convert "$work/photo.jpg" \( -size 3000x4000 gradient:white-black -rotate 90 \) -alpha off \
    -compose CopyOpacity -composite "$work/alpha.png"

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

printf '| input | tool | CPU s (median) | wall s | peak RSS MiB | output bytes | SSIM |\n'
printf '|---|---|---:|---:|---:|---:|---:|\n'
summary=""
for input in photo.jpg progressive.jpg alpha.png; do
    in="$work/$input"
    ref="$work/ref-${input%.*}.png"
    convert "$in" -background white -flatten -filter Lanczos -resize 1280x1280 "$ref"
    declare -A cpu=()
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
        printf '| %s | %s | %.3f | %.3f | %.1f | %d | %s |\n' "$input" "$tool" "$c" "$w" "$(echo "$r / 1024" | bc -l)" "$size" "$ssim"
        eval "size_${tool}=$size; ssim_${tool}=$ssim"
    done
    summary+=$(printf '%s: CPU attache/vips %.2f (≤ 0.5), attache/ImageMagick %.2f (≤ 0.25), SSIM attache−vips %+.4f (≥ −0.003), size attache/vips %.2f (0.90–1.10)' \
        "$input" "$(echo "${cpu[attache]} / ${cpu[vipsthumbnail]}" | bc -l)" "$(echo "${cpu[attache]} / ${cpu[imagemagick]}" | bc -l)" \
        "$(echo "$ssim_attache - $ssim_vipsthumbnail" | bc -l)" "$(echo "$size_attache / $size_vipsthumbnail" | bc -l)")$'\n'
done
printf '\n%s' "$summary"
