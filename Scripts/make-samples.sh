#!/usr/bin/env bash
# Regenerates every file in Samples/ (and Samples/README.md) from Debian tools.
#
# Usage: Scripts/make-samples.sh [--check]
#   --check   build into a temporary folder and compare with the committed files instead of replacing them
#             (exit 1 and list the differences when a tool version makes different bytes)
#
# Output is deterministic for given tool versions (Debian 12): fixed seeds (ImageMagick -seed, sox -R),
# fixed dates (SOURCE_DATE_EPOCH for Ghostscript and pandoc, explicit EXIF dates), and ffmpeg's bitexact
# flags so no encoder version or random stream serial ends up in the files.
# Tools: Scripts/bootstrap.sh --with-samples installs them.
set -euo pipefail

check=0
case "${1:-}" in
    "") ;;
    --check) check=1 ;;
    -h | --help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) printf 'make-samples: unknown option: %s\n' "$1" >&2; exit 64 ;;
esac

say() { printf 'make-samples: %s\n' "$*"; }
die() { printf 'make-samples: error: %s\n' "$*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
samples="$root/Samples"

# ImageMagick 6 calls its binary `convert`; ImageMagick 7 keeps `convert` only as a compatibility name.
for tool in convert exiftool cwebp ffmpeg sox espeak-ng gs pandoc heif-enc python3; do
    command -v "$tool" >/dev/null 2>&1 \
        || die "'$tool' not found: run Scripts/bootstrap.sh --with-samples first"
done
font_dir=/usr/share/fonts/truetype/dejavu
font="$font_dir/DejaVuSans.ttf"
font_bold="$font_dir/DejaVuSans-Bold.ttf"
[[ -r "$font" && -r "$font_bold" ]] || die "DejaVu fonts not found in $font_dir (package fonts-dejavu-core)"

export LC_ALL=C.UTF-8 TZ=UTC SOURCE_DATE_EPOCH=1704067200 # 2024-01-01T00:00:00Z

work=$(mktemp -d "${TMPDIR:-/tmp}/attache-samples.XXXXXX")
trap 'rm -rf "$work"' EXIT
out="$work/out"
mkdir -p "$out/hostile" "$work/tmp"
# Tools that embed their output name (Ghostscript derives the PDF /ID from it) get a relative path from
# here, so the temporary folder's random name never reaches the files.
cd "$out"

# ImageMagick: no timestamps or other metadata in PNGs.
# shellcheck disable=SC2054 # the comma is part of one ImageMagick argument
png_opts=(-define png:exclude-chunks=date,time -strip)
# ffmpeg: quiet, no encoder version strings, no random Ogg serials, no copied metadata.
ff=(ffmpeg -nostdin -hide_banner -loglevel error -y)
ff_out=(-map_metadata -1 -fflags +bitexact)

# --- photo.jpg: camera-like JPEG, stored rotated with EXIF Orientation=6 ---------------------------------
# The scene is drawn upright as 1200x1600 portrait (sky, sun, house, and the word TOP at the top edge), then
# turned 90 degrees counter-clockwise for storage: a viewer that applies Orientation 6 (rotate 90 CW) shows
# TOP at the top again.
say "photo.jpg"
convert -seed 7 \
    \( -size 1200x900 gradient:'#3f78c9-#d8e8f6' \) \
    \( -size 1200x700 plasma:fractal -colorspace gray -blur 0x1 +level-colors '#2c4a1f,#b3a468' \) -append \
    -fill '#fff1b8' -draw 'circle 900,260 900,360' \
    -fill '#8c3b2e' -draw 'polygon 250,1050 450,880 650,1050' \
    -fill '#d9c7a3' -draw 'rectangle 280,1050 620,1300' \
    -fill '#4a3424' -draw 'rectangle 410,1170 490,1300' \
    -fill white -stroke '#1d2b3a' -strokewidth 3 -font "$font_bold" -pointsize 110 \
    -gravity north -annotate +0+40 'TOP' -gravity northwest \
    -stroke none -attenuate 0.25 +noise Gaussian \
    -rotate -90 -sampling-factor 2x2 -quality 85 -strip photo.jpg
exiftool -q -overwrite_original -n \
    -Make='Attache Optics' -Model='Sample Camera S1' -Software='make-samples.sh' \
    -Orientation=6 -XResolution=72 -YResolution=72 -ResolutionUnit=2 \
    -DateTimeOriginal='2024:05:17 14:32:10' -CreateDate='2024:05:17 14:32:10' \
    -ModifyDate='2024:05:17 14:32:10' -OffsetTimeOriginal='+02:00' \
    -ExposureTime=0.004 -FNumber=2.8 -ISO=100 -FocalLength=4.2 \
    -ExifImageWidth=1600 -ExifImageHeight=1200 \
    -GPSLatitude=48.858370 -GPSLatitudeRef=N -GPSLongitude=2.294481 -GPSLongitudeRef=E \
    -GPSAltitude=35 -GPSAltitudeRef=0 \
    photo.jpg

# --- screenshot.png: chat UI with text, 1280x800 RGB (no alpha) -----------------------------------------
say "screenshot.png"
convert -size 1280x800 xc:'#f4f5f7' \
    -fill '#2b3440' -draw 'rectangle 0,0 299,799' \
    -fill '#3a4656' -draw 'rectangle 0,96 299,167' \
    -fill white -draw 'rectangle 300,0 1279,71' \
    -fill '#dfe3e8' -draw 'rectangle 300,72 1279,73' \
    -fill white -draw 'rectangle 300,728 1279,799' -fill '#dfe3e8' -draw 'rectangle 300,727 1279,727' \
    -fill '#eef1f4' -draw 'roundrectangle 320,742 1180,786 20,20' \
    -fill '#3d7be0' -draw 'circle 1230,764 1230,786' \
    -font "$font_bold" -pointsize 22 -fill white -annotate +24+52 'Attache' \
    -font "$font" -pointsize 17 -fill '#c9d1db' \
    -annotate +24+138 'Design review' -annotate +24+208 'Family' -annotate +24+278 'Ops on-call' \
    -annotate +24+348 'Lunch plans' -annotate +24+418 'Release 2.4' \
    -font "$font_bold" -pointsize 20 -fill '#1f2933' -annotate +330+44 'Design review' \
    -font "$font" -pointsize 14 -fill '#7b8794' -annotate +500+44 '5 members, 2 online' \
    -fill white -draw 'roundrectangle 330,100 860,180 14,14' \
    -fill '#d4e5ff' -draw 'roundrectangle 720,205 1250,285 14,14' \
    -fill white -draw 'roundrectangle 330,310 980,420 14,14' \
    -fill '#d4e5ff' -draw 'roundrectangle 820,445 1250,505 14,14' \
    -fill white -draw 'roundrectangle 330,530 760,690 14,14' \
    -fill '#c7d2de' -draw 'rectangle 346,560 560,676' \
    -font "$font_bold" -pointsize 15 -fill '#3d7be0' \
    -annotate +346+124 'Maya' -annotate +346+334 'Jonas' -annotate +346+554 'Maya' \
    -font "$font" -pointsize 16 -fill '#1f2933' \
    -annotate +346+152 'Here is the new upload screen, with progress per file.' \
    -annotate +736+236 'Looks good. Does it resume after a network drop?' \
    -annotate +736+262 'We saw that fail on the train yesterday.' \
    -annotate +346+362 'Yes: each file has an idempotency key, so a retry never' \
    -annotate +346+388 'creates a duplicate. Résumé, naïve and Ελληνικά names work too.' \
    -annotate +836+482 'Great, ship it on Thursday.' \
    -annotate +576+600 'mockup.png' \
    -font "$font" -pointsize 13 -fill '#7b8794' -annotate +576+622 '1280 × 800 · 84 KB' \
    -annotate +800+172 '10:41' -annotate +1190+277 '10:42' -annotate +920+412 '10:44' \
    -annotate +1190+497 '10:45' \
    -pointsize 16 -annotate +340+770 'Write a message…' \
    "${png_opts[@]}" PNG24:screenshot.png

# --- alpha.png: RGBA with soft edges (partial alpha) and a fully transparent background ---------------
say "alpha.png"
convert -size 480x320 xc:none \
    -fill '#e4572e' -draw 'circle 170,160 170,50' \
    -fill '#17bebbaa' -draw 'roundrectangle 210,70 450,250 30,30' \
    -channel A -blur 0x5 +channel \
    -font "$font_bold" -pointsize 36 -fill '#1f2933' -annotate +120+300 'alpha.png' \
    "${png_opts[@]}" PNG32:alpha.png

# --- sticker.webp: 512x512 lossy WebP with an alpha channel --------------------------------------------
say "sticker.webp"
convert -size 512x512 xc:none \
    -fill '#ffd23f' -stroke '#3b2f2f' -strokewidth 14 -draw 'circle 256,256 256,40' \
    -stroke none -fill '#3b2f2f' -draw 'ellipse 180,210 26,40 0,360' -draw 'ellipse 332,210 26,40 0,360' \
    -fill none -stroke '#3b2f2f' -strokewidth 16 -draw 'arc 150,230 362,400 20,160' \
    -stroke none -fill '#ff6b6b99' -draw 'circle 140,300 140,330' -draw 'circle 372,300 372,330' \
    "${png_opts[@]}" PNG32:"$work/tmp/sticker.png"
cwebp -quiet -q 80 -m 6 "$work/tmp/sticker.png" -o sticker.webp

# --- voice.ogg and voice.m4a: ~3.5 s of speech from espeak-ng -------------------------------------------
say "voice.ogg, voice.m4a"
espeak-ng -v en-us -s 165 -w "$work/tmp/speech.wav" "Hi, it's me. Meet you at the station at six?"
"${ff[@]}" -i "$work/tmp/speech.wav" "${ff_out[@]}" -ac 1 -ar 48000 \
    -c:a libopus -b:a 24k -application voip -flags:a +bitexact voice.ogg
"${ff[@]}" -i "$work/tmp/speech.wav" "${ff_out[@]}" -ac 1 -ar 44100 \
    -c:a aac -b:a 48k -flags:a +bitexact -movflags +faststart voice.m4a

# --- song.mp3: 5 s plucked melody with an ID3v2.3 tag ---------------------------------------------------
# sox -R: repeatable mode, so the pluck synth's random excitation is the same every run.
say "song.mp3"
sox -R -n -r 44100 -c 2 "$work/tmp/song.wav" \
    synth 0.4 pluck C4 : synth 0.4 pluck E4 : synth 0.4 pluck G4 : synth 0.8 pluck C5 : \
    synth 0.4 pluck A4 : synth 0.4 pluck F4 : synth 0.4 pluck D4 : synth 1.8 pluck G4 fade 0 1.8 1.2
"${ff[@]}" -i "$work/tmp/song.wav" "${ff_out[@]}" -c:a libmp3lame -b:a 96k -flags:a +bitexact \
    -id3v2_version 3 -metadata title='Sample Tune' -metadata artist='Attache Samples' \
    -metadata album='Test Fixtures' -metadata date=2024 -metadata track=1 song.mp3

# --- clip.mp4: 2 s H.264 + AAC, 320x240, moov atom first --------------------------------------------------
# One encoder thread: x264's output is then identical on every machine regardless of core count.
say "clip.mp4"
"${ff[@]}" -f lavfi -i testsrc2=size=320x240:rate=25:duration=2 \
    -f lavfi -i sine=frequency=440:beep_factor=4:duration=2:sample_rate=44100 \
    "${ff_out[@]}" -c:v libx264 -preset medium -crf 30 -pix_fmt yuv420p -threads 1 -flags:v +bitexact \
    -c:a aac -b:a 64k -ac 1 -flags:a +bitexact -movflags +faststart -shortest clip.mp4

# --- phone.mp4, late-index.mp4, animation.gif, photo.heic: media the Transform stage converts ----------
# phone.mp4: a phone-style clip, 640x360 stored and shown rotated 90 degrees (a display matrix, as phones
# write portrait video), 30 fps, stereo AAC, its index (moov) at the end: re-encoded upright to 360x640.
# ffmpeg 5.1 writes the display matrix from the `rotate` tag on a stream copy only, hence two steps.
say "phone.mp4, late-index.mp4, animation.gif, photo.heic"
"${ff[@]}" -f lavfi -i testsrc2=size=640x360:rate=30:duration=2 \
    -f lavfi -i sine=frequency=330:beep_factor=2:duration=2:sample_rate=48000 \
    "${ff_out[@]}" -c:v libx264 -preset medium -crf 32 -pix_fmt yuv420p -threads 1 -flags:v +bitexact \
    -c:a aac -b:a 96k -ac 2 -flags:a +bitexact -shortest "$work/tmp/phone-upright.mp4"
"${ff[@]}" -i "$work/tmp/phone-upright.mp4" -c copy -map_metadata -1 -fflags +bitexact \
    -metadata:s:v:0 rotate=90 phone.mp4
# late-index.mp4: already what chats send (H.264 High yuv420p + AAC-LC, 320x240, 25 fps, low bit rate) but
# with moov after mdat: remuxed only, the video packets kept byte for byte.
"${ff[@]}" -f lavfi -i testsrc2=size=320x240:rate=25:duration=2 \
    -f lavfi -i sine=frequency=550:duration=2:sample_rate=44100 \
    "${ff_out[@]}" -c:v libx264 -profile:v high -preset medium -crf 30 -pix_fmt yuv420p -threads 1 \
    -flags:v +bitexact -c:a aac -b:a 48k -ac 1 -flags:a +bitexact -shortest late-index.mp4
# animation.gif: 160x90, 10 fps, 1.5 s, looping: sent as a silent MP4 animation.
"${ff[@]}" -f lavfi -i testsrc2=size=160x90:rate=10:duration=1.5 \
    -vf "split[a][b];[a]palettegen=max_colors=32[p];[b][p]paletteuse=dither=none" -loop 0 animation.gif
# photo.heic: the scene of photo.jpg as a phone stores it: 1600x1200 pixels turned on their side, an `irot`
# of 270 degrees counter-clockwise to show them upright (1200x1600, TOP at the top), and photo.jpg's EXIF
# (GPS included), which heif-enc copies: the Transform stage must apply irot and drop the EXIF.
heif-enc -q 40 -o "$work/tmp/photo-plain.heic" photo.jpg >/dev/null
python3 "$root/Scripts/heif-orient.py" "$work/tmp/photo-plain.heic" photo.heic --rotate 270

# --- document.pdf: two pages of real text ---------------------------------------------------------------
say "document.pdf"
cat >"$work/tmp/document.ps" <<'EOF'
%!PS-Adobe-3.0
%%Title: Attache sample document
%%Pages: 2
%%EndComments
/F { findfont exch scalefont setfont } bind def
/L { 72 exch moveto show } bind def
%%Page: 1 1
18 /Helvetica-Bold F
(Attache sample document) 740 L
11 /Helvetica F
(This PDF is one of the sample attachments used by the Attache tests and demos.) 700 L
(It has two pages of real text, so a detector can find the %PDF header and a) 684 L
(viewer can show a first-page preview.) 668 L
14 /Helvetica-Bold F
(1. What an attachment goes through) 630 L
11 /Helvetica F
(Detect: the MIME type and kind are read from the first bytes.) 606 L
(Transform: photos and stickers are recompressed; files like this one pass through.) 590 L
(Seal: the bytes are encrypted with a fresh key per attachment.) 574 L
(Upload: a multipart body with an exact Content-Length is streamed to the server.) 558 L
(Interpret: the JSON answer becomes a typed receipt, a retry or a rejection.) 542 L
showpage
%%Page: 2 2
14 /Helvetica-Bold F
(2. Notes) 740 L
11 /Helvetica F
(Page two exists so that page counting and multi-page handling can be tested.) 716 L
(The quick brown fox jumps over the lazy dog. 0123456789) 700 L
showpage
%%EOF
EOF
gs -q -dSAFER -dBATCH -dNOPAUSE -sDEVICE=pdfwrite -sPAPERSIZE=letter \
    -sOutputFile=document.pdf "$work/tmp/document.ps"

# --- report.docx: a real Word document (headings, bold, a table, a list) --------------------------------
say "report.docx"
cat >"$work/tmp/report.md" <<'EOF'
---
title: Quarterly upload report
author: Attache samples
date: 2024-01-01
---

# Summary

Uploads grew by **18 %** this quarter. Retries stayed below 0.4 % and no attachment was stored twice.

# Numbers

| Kind    | Uploads | Median size |
|---------|--------:|------------:|
| image   | 41 200  | 212 KB      |
| voice   | 18 950  | 14 KB       |
| video   | 3 310   | 4.1 MB      |
| file    | 7 420   | 380 KB      |

# Next steps

- Resume interrupted batch runs from the journal.
- Strip GPS data from every photo before upload.
- Keep *naïve* and *Zürich* spelled correctly in file names.
EOF
pandoc --standalone "$work/tmp/report.md" -o report.docx

# --- notes.txt: UTF-8 text, no BOM, with non-ASCII characters ------------------------------------------
say "notes.txt"
cat >notes.txt <<'EOF'
Notes for the upload test — UTF-8, no byte order mark.

Café crème at 9:30, then the résumé review with Zoë and Łukasz.
Prices: 12,50 € · £9.99 · ¥1200 · ₹499
Greek: Καλημέρα κόσμε. Russian: Привет, мир. Japanese: こんにちは世界.
Math: ∑ xᵢ² ≤ ∞, π ≈ 3.14159, ½ + ¼ = ¾
Emoji (4-byte UTF-8): 📎 🎙️ 🖼️ ✅
Quotes: “double”, ‘single’, «guillemets», „low“.
EOF

# --- hostile/: edge cases for detection, escaping and empty bodies -------------------------------------
say "hostile/"
: >hostile/empty.bin
cat >'hostile/résumé "final".txt' <<'EOF'
A file whose name has a double quote and non-ASCII letters.
Multipart headers must escape the quote (%22) and keep the UTF-8 bytes as they are.
EOF
# A JPEG under a .png name: detection must trust the bytes and report the mismatch.
convert -size 160x120 gradient:'#f6d365-#fda085' -fill '#333333' -font "$font_bold" -pointsize 20 \
    -gravity center -annotate +0+0 'really a JPEG' -quality 80 -strip jpeg:hostile/fake.png

# --- README.md: what each file is, with its size -------------------------------------------------------

describe() {
    case "$1" in
        photo.jpg) echo "Camera-like JPEG, 1600×1200 stored, 4:2:0, q85. EXIF: Make/Model, DateTimeOriginal, exposure, GPS (48.85837 N, 2.29448 E, 35 m), **Orientation = 6** (rotate 90° CW): displayed upright it is 1200×1600 with the word TOP at the top. Gradient sky, plasma-noise ground, shapes and sensor-like noise." ;;
        screenshot.png) echo "Chat-app screenshot, 1280×800, 8-bit RGB (no alpha), flat UI with text (DejaVu Sans, Latin accents and Greek)." ;;
        alpha.png) echo "RGBA PNG, 480×320: transparent background, soft (partially transparent) edges, a half-transparent shape." ;;
        sticker.webp) echo "Sticker: lossy WebP (VP8 + ALPH), 512×512, with alpha, static." ;;
        voice.ogg) echo "Voice note: Ogg/Opus, mono, 48 kHz, 24 kb/s VoIP mode, ~3.5 s of espeak-ng speech." ;;
        voice.m4a) echo "Voice note: AAC-LC in MP4 (brand M4A), audio only, mono, 44.1 kHz, ~3.5 s of espeak-ng speech, moov first." ;;
        song.mp3) echo "MP3, 5 s plucked melody, stereo 44.1 kHz 96 kb/s CBR, ID3v2.3 tag (title, artist, album, date, track)." ;;
        clip.mp4) echo "Video: H.264 (x264, yuv420p) + AAC mono, 320×240, 25 fps, 2 s, moov before mdat (faststart): already chat-ready, sent as it is." ;;
        phone.mp4) echo "Phone-style video: H.264 640×360 stored with a 90° display matrix (upright 360×640), 30 fps, stereo AAC 96 kb/s, 2 s, moov after mdat: re-encoded upright." ;;
        late-index.mp4) echo "Chat-ready H.264 High + AAC-LC, 320×240, 25 fps, 2 s, but moov after mdat: only remuxed (index first)." ;;
        animation.gif) echo "Animated GIF, 160×90, 10 fps, 1.5 s, 32 colours, looping: sent as a silent H.264 MP4 animation." ;;
        photo.heic) echo "HEIC photo (heif-enc, HEVC): the scene of photo.jpg stored 1600×1200 on its side with \`irot\` 270° (upright 1200×1600, TOP at the top) and photo.jpg's EXIF with GPS, which must not leave." ;;
        document.pdf) echo "PDF 1.7 made by Ghostscript, 2 US-letter pages of text with embedded fonts." ;;
        report.docx) echo "Word document made by pandoc: title, headings, bold/italic, a table and a list." ;;
        notes.txt) echo "UTF-8 text without BOM: accents, €, Greek, Cyrillic, Japanese, math symbols, 4-byte emoji." ;;
        hostile/empty.bin) echo "Empty file (0 bytes)." ;;
        'hostile/résumé "final".txt') echo "Short UTF-8 text whose name has a double quote and non-ASCII letters (multipart filename escaping)." ;;
        hostile/fake.png) echo "A JPEG (160×120) named .png: a lying extension." ;;
        *) echo "" ;;
    esac
}

# shellcheck disable=SC2094 # find skips README.md, so nothing reads the file being written
{
    cat <<'EOF'
# Samples

Sample attachments of every kind, for the tests, the demo and the benchmarks. All files are generated by
`Scripts/make-samples.sh` from Debian tools (ImageMagick, exiftool, cwebp, espeak-ng, sox, ffmpeg, heif-enc,
Ghostscript, pandoc), with fixed seeds and dates, so running it again gives the same bytes with the same
tool versions (checked on Debian 12 with its security updates as of this commit; an older ImageMagick 6
build draws a few anti-aliased pixels differently, which changes the PNG, JPEG and WebP bytes but nothing a
test relies on). Install the tools with `Scripts/bootstrap.sh --with-samples`;
`Scripts/make-samples.sh --check` verifies that the committed files match what the script makes. The generated content is made up: no real photo,
voice or person is in here.

| File | Size (bytes) | What it is |
|------|-------------:|------------|
EOF
    total=0
    while IFS= read -r -d '' f; do
        rel=${f#./}
        size=$(stat -c %s "$f")
        total=$((total + size))
        # shellcheck disable=SC2016 # the backquotes are Markdown, not a command
        printf '| `%s` | %s | %s |\n' "$rel" "$size" "$(describe "$rel")"
    done < <(find . -type f ! -name README.md -print0 | LC_ALL=C sort -z)
    printf '\nTotal: %s bytes.\n' "$total"
} >README.md

# --- Sanity checks: sizes and the properties the tests rely on ----------------------------------------

total=0
while IFS= read -r -d '' f; do
    size=$(stat -c %s "$f")
    total=$((total + size))
    ((size < 300 * 1024)) || die "$f is $size bytes, over the 300 KB limit"
    [[ -n "$(describe "${f#./}")" || "$f" == ./README.md ]] || die "$f has no description in the README"
done < <(find . -type f -print0)
((total < 1536 * 1024)) || die "samples total $total bytes, over the 1.5 MB limit"
[[ "$(identify -format '%w×%h' photo.jpg)" == "1600×1200" ]] || die "photo.jpg has the wrong size"
[[ "$(exiftool -s3 -n -Orientation photo.jpg)" == 6 ]] || die "photo.jpg lost its Orientation tag"
[[ "$(identify -format '%[channels]' screenshot.png)" == srgb ]] || die "screenshot.png is not plain RGB"
[[ "$(identify -format '%[channels]' alpha.png)" == srgba ]] || die "alpha.png has no alpha"

# --- Install or compare ----------------------------------------------------------------------------------

if ((check)); then
    # Compares only the generated files: anything else in Samples/ (example programs) is not ours.
    differ=0
    while IFS= read -r -d '' f; do
        if ! cmp -s "$f" "$samples/${f#./}"; then
            printf 'make-samples: differs: Samples/%s\n' "${f#./}" >&2
            differ=1
        fi
    done < <(find . -type f -print0 | LC_ALL=C sort -z)
    ((differ == 0)) || die "the committed samples differ from what this script makes"
    say "ok: the committed samples match what this script makes"
else
    mkdir -p "$samples"
    # Only the generated files are replaced; anything else in Samples/ (example programs) stays.
    rm -rf "$samples/hostile"
    cp -r "$out"/. "$samples"/
    say "wrote $(find "$out" -type f | wc -l) files, $total bytes, to Samples/"
fi
