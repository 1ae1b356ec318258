#!/usr/bin/env bash
# Builds a labelled corpus for the Detect stage: one small file per format family, plus edge cases
# (lying extensions, no extension, truncated, empty). Writes OUTDIR/labels.tsv with one line per
# file: name, expected MIME type, expected message kind.
# Needs: ffmpeg (libx264, libvpx, libopus, libvorbis, libmp3lame, libtheora), ImageMagick 6 with
# HEIC/AVIF, cwebp/img2webp, python3. Used by Scripts/bench/detect.sh and to regenerate the test
# fixtures (Tests/AttacheTests/Fixtures/Detection/DetectionCorpus.swift, --swift).
set -euo pipefail
out="${1:?usage: detect-corpus.sh OUTDIR [--swift FILE]}"
swift_out=""
if [[ "${2:-}" == "--swift" ]]; then swift_out="$(realpath -m "${3:?--swift needs a file}")"; fi
mkdir -p "$out"
cd "$out"
rm -f ./* 2>/dev/null || true
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
label() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> labels.tsv; }
: > labels.tsv

# Images
convert -size 64x48 gradient:red-blue photo.jpg;                          label photo.jpg image/jpeg image
convert -size 40x30 gradient:green-white image.png;                       label image.png image/png image
convert -size 40x30 xc:none -fill red -draw 'circle 20,15 20,5' alpha.png; label alpha.png image/png image
convert -size 32x32 xc:red PNG32:frame1.png; convert -size 32x32 xc:blue PNG32:frame2.png
ff -framerate 2 -i frame%d.png -plays 0 -pix_fmt rgba -f apng anim.png;                  label anim.png image/apng image
convert -size 30x20 xc:orange still.gif;                                   label still.gif image/gif image
convert -delay 20 frame1.png frame2.png -loop 0 anim.gif;                 label anim.gif image/gif image
cwebp -quiet -q 50 image.png -o lossy.webp;                                label lossy.webp image/webp sticker
convert -size 800x600 gradient:red-blue big.png; cwebp -quiet -q 40 big.png -o photo.webp; rm big.png
label photo.webp image/webp image
cwebp -quiet -lossless alpha.png -o lossless.webp;                         label lossless.webp image/webp sticker
img2webp -loop 0 -d 100 frame1.png frame2.png -o anim.webp 2>/dev/null;    label anim.webp image/webp sticker
rm -f frame1.png frame2.png
convert -size 48x32 gradient:yellow-black photo.heic;                      label photo.heic image/heic image
convert -size 48x32 gradient:yellow-black photo.avif;                      label photo.avif image/avif image
convert -size 20x10 xc:purple image.bmp;                                   label image.bmp image/bmp image
convert -size 20x10 xc:purple image.tiff;                                  label image.tiff image/tiff file
convert -size 16x16 xc:green icon.ico;                                     label icon.ico image/vnd.microsoft.icon file
printf '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n' > drawing.svg
label drawing.svg image/svg+xml file

# Audio
ff -f lavfi -i "sine=frequency=440:duration=1.5" -ac 1 -c:a libopus -b:a 16k voice.ogg;   label voice.ogg audio/ogg voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -c:a libvorbis -q:a 0 music.oga;    label music.oga audio/ogg voice
ff -f lavfi -i "sine=frequency=440:duration=0.5" -ac 1 -ar 8000 -c:a flac -f ogg flac.ogg; label flac.ogg audio/ogg file
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 22050 -c:a libmp3lame -b:a 32k song.mp3; label song.mp3 audio/mpeg voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 22050 -c:a libmp3lame -b:a 32k -write_xing 0 -id3v2_version 0 plain.mp3
label plain.mp3 audio/mpeg voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 16000 -c:a aac -b:a 24k audio.aac;  label audio.aac audio/aac voice
ff -f lavfi -i "sine=frequency=440:duration=1.2" -ac 1 -ar 16000 -c:a aac -b:a 24k voice.m4a; label voice.m4a audio/mp4 voice
ff -f lavfi -i "sine=frequency=440:duration=0.25" -ac 1 -ar 8000 audio.flac;                 label audio.flac audio/flac file
ff -f lavfi -i "sine=frequency=440:duration=0.25" -ac 1 -ar 8000 audio.wav;                  label audio.wav audio/wav voice
ff -f lavfi -i "sine=frequency=440:duration=0.25" -ac 1 -ar 8000 audio.aiff;                 label audio.aiff audio/aiff file
ff -f lavfi -i "sine=frequency=440:duration=0.25" -ac 1 -ar 8000 -c:a pcm_s16le audio.caf; label audio.caf audio/x-caf voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -c:a libopus -b:a 16k voice.webm;      label voice.webm audio/webm voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -c:a libvorbis -q:a 0 audio.mka;      label audio.mka audio/matroska voice
ff -f lavfi -i "sine=frequency=440:duration=1" -ac 1 -ar 8000 -c:a aac -b:a 12k voice.3gp;  label voice.3gp audio/3gpp voice
# A voice note whose container says "video" by extension: still audio, no mismatch.
cp voice.m4a recording.mp4;                                                label recording.mp4 audio/mp4 voice

# Video
src="testsrc=size=64x48:rate=10:duration=1"
ff -f lavfi -i "$src" -f lavfi -i "sine=duration=1" -shortest -c:v libx264 -pix_fmt yuv420p -c:a aac -b:a 16k clip.mp4; label clip.mp4 video/mp4 video
ff -f lavfi -i "$src" -c:v libx264 -pix_fmt yuv420p clip.mov;                             label clip.mov video/quicktime video
# Turn the track matrix by 90 degrees, as a phone held upright writes it.
python3 -c "
import struct; d = bytearray(open('clip.mov', 'rb').read()); k = d.find(b'tkhd') + 4 + 40
struct.pack_into('>iiiii', d, k, 0, 65536, 0, -65536, 0); open('clip.mov', 'wb').write(d)"
ff -f lavfi -i "$src" -c:v libx264 -pix_fmt yuv420p clip.3gp;                             label clip.3gp video/3gpp video
ff -f lavfi -i "$src" -f lavfi -i "sine=duration=1" -shortest -c:v libvpx-vp9 -b:v 20k -c:a libopus -b:a 12k clip.webm; label clip.webm video/webm video
ff -f lavfi -i "$src" -c:v libx264 -pix_fmt yuv420p clip.mkv;                             label clip.mkv video/matroska video
ff -f lavfi -i "$src" -c:v mpeg4 clip.avi;                                                label clip.avi video/x-msvideo video
ff -f lavfi -i "$src" -c:v libx264 -pix_fmt yuv420p -f mpegts clip.ts;                    label clip.ts video/mp2t video
ff -f lavfi -i "$src" -c:v flv1 clip.flv;                                                 label clip.flv video/x-flv video
ff -f lavfi -i "$src" -c:v libtheora -q:v 1 clip.ogv;                                     label clip.ogv video/ogg video
ff -f lavfi -i "$src" -c:v wmv2 clip.wmv;                                                 label clip.wmv video/x-ms-asf video
ff -f lavfi -i "testsrc=size=512x512:rate=10:duration=1" -c:v libvpx-vp9 -b:v 50k -pix_fmt yuva420p sticker.webm
label sticker.webm video/webm sticker

# Documents, archives, executables, data, text and edge cases
python3 - <<'PY'
import gzip, bz2, lzma, io, json, sqlite3, struct, tarfile, zipfile, os

def label(name, mime, kind):
    with open("labels.tsv", "a") as f:
        f.write(f"{name}\t{mime}\t{kind}\n")

def ooxml(name, folder, main):
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        # A large second entry: readers that only scan local headers give up here.
        z.writestr(zipfile.ZipInfo(f"{folder}/media/image1.bin"), os.urandom(150_000), zipfile.ZIP_STORED)
        z.writestr("_rels/.rels", "<Relationships/>")
        z.writestr(f"{folder}/{main}", "<document/>")

ooxml("report.docx", "word", "document.xml"); label("report.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "file")
ooxml("sheet.xlsx", "xl", "workbook.xml"); label("sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "file")
ooxml("slides.pptx", "ppt", "presentation.xml"); label("slides.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation", "file")

def mimetype_zip(name, mime):
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("mimetype"), mime, zipfile.ZIP_STORED)
        z.writestr("content.xml", "<office:document-content/>")
        z.writestr("META-INF/manifest.xml", "<manifest/>")
    label(name, mime, "file")

mimetype_zip("letter.odt", "application/vnd.oasis.opendocument.text")
mimetype_zip("table.ods", "application/vnd.oasis.opendocument.spreadsheet")
mimetype_zip("deck.odp", "application/vnd.oasis.opendocument.presentation")
mimetype_zip("book.epub", "application/epub+zip")
with zipfile.ZipFile("app.apk", "w") as z:
    z.writestr("AndroidManifest.xml", b"\x03\x00\x08\x00"); z.writestr("classes.dex", b"dex\n035\0"); z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
label("app.apk", "application/vnd.android.package-archive", "file")
with zipfile.ZipFile("lib.jar", "w") as z:
    z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n"); z.writestr("a/B.class", b"\xca\xfe\xba\xbe\0\0\0\x34")
label("lib.jar", "application/java-archive", "file")
with zipfile.ZipFile("archive.zip", "w") as z:
    z.writestr("readme.txt", "hello\n")
label("archive.zip", "application/zip", "file")

def cfb(name, stream, mime):
    # A minimal compound file: header, one FAT sector, one directory sector (root + one stream).
    sector = 512
    header = bytearray(512)
    header[0:8] = bytes.fromhex("D0CF11E0A1B11AE1")
    struct.pack_into("<HHHHH", header, 24, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<I", header, 44, 1)          # FAT sectors
    struct.pack_into("<I", header, 48, 1)          # first directory sector
    struct.pack_into("<I", header, 56, 4096)
    struct.pack_into("<III", header, 60, 0xFFFFFFFE, 0, 0xFFFFFFFE)
    struct.pack_into("<I", header, 72, 0)
    difat = [0] + [0xFFFFFFFF] * 108
    struct.pack_into("<109I", header, 76, *difat)
    fat = [0xFFFFFFFD, 0xFFFFFFFE] + [0xFFFFFFFF] * 126
    fat_sector = struct.pack("<128I", *fat)
    def entry(n, kind, child=0xFFFFFFFF):
        e = bytearray(128)
        u = n.encode("utf-16le") + b"\0\0"
        e[0:len(u)] = u
        struct.pack_into("<HBB", e, 64, len(u), kind, 1)
        struct.pack_into("<III", e, 68, 0xFFFFFFFF, 0xFFFFFFFF, child)
        struct.pack_into("<II", e, 116, 0xFFFFFFFE, 0)
        return bytes(e)
    directory = entry("Root Entry", 5, 1) + entry(stream, 2) + bytes(256)
    with open(name, "wb") as f:
        f.write(bytes(header) + fat_sector + directory)
    label(name, mime, "file")

cfb("old.doc", "WordDocument", "application/msword")
cfb("old.xls", "Workbook", "application/vnd.ms-excel")
cfb("old.ppt", "PowerPoint Document", "application/vnd.ms-powerpoint")
cfb("mail.msg", "__substg1.0_0037001F", "application/vnd.ms-outlook")

pdf = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
open("doc.pdf", "wb").write(pdf); label("doc.pdf", "application/pdf", "file")
open("junk.pdf", "wb").write(b"From: scanner@example.com\r\nContent-Type: application/pdf\r\n\r\n" + pdf); label("junk.pdf", "application/pdf", "file")
open("note.rtf", "w").write("{\\rtf1\\ansi Hello}\n"); label("note.rtf", "application/rtf", "file")
open("old.rar", "wb").write(b"Rar!\x1a\x07\x00" + bytes.fromhex("cf907300000d00000000000000") + bytes(40)); label("old.rar", "application/vnd.rar", "file")
open("new.rar", "wb").write(b"Rar!\x1a\x07\x01\x00" + bytes.fromhex("33921be00501080000") + bytes(40)); label("new.rar", "application/vnd.rar", "file")
open("pack.7z", "wb").write(b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(24)); label("pack.7z", "application/x-7z-compressed", "file")
open("data.gz", "wb").write(gzip.compress(b"hello world\n" * 50)); label("data.gz", "application/gzip", "file")
lottie = {"tgs": 1, "v": "5.5.2", "fr": 60, "ip": 0, "op": 180, "w": 512, "h": 512, "nm": "sticker", "ddd": 0, "assets": [], "layers": []}
open("sticker.tgs", "wb").write(gzip.compress(json.dumps(lottie, separators=(",", ":")).encode())); label("sticker.tgs", "application/x-tgsticker", "sticker")
open("data.bz2", "wb").write(bz2.compress(b"hello world\n" * 50)); label("data.bz2", "application/x-bzip2", "file")
open("data.xz", "wb").write(lzma.compress(b"hello world\n" * 50)); label("data.xz", "application/x-xz", "file")
open("data.zst", "wb").write(bytes.fromhex("28b52ffd2400610000") + b"hello world\n"); label("data.zst", "application/zstd", "file")
with tarfile.open("files.tar", "w") as t:
    info = tarfile.TarInfo("hello.txt"); data = b"hello\n"; info.size = len(data); t.addfile(info, io.BytesIO(data))
label("files.tar", "application/x-tar", "file")
open("tool.exe", "wb").write(b"MZ" + bytes(58) + struct.pack("<I", 64) + b"PE\0\0" + struct.pack("<HH", 0x8664, 0) + bytes(200)); label("tool.exe", "application/vnd.microsoft.portable-executable", "file")
open("tool.macho", "wb").write(bytes.fromhex("cffaedfe07000001030000000200000010000000") + bytes(100)); label("tool.macho", "application/x-mach-binary", "file")
open("module.wasm", "wb").write(b"\0asm\x01\0\0\0"); label("module.wasm", "application/wasm", "file")
db = sqlite3.connect("store.sqlite"); db.execute("create table t(x)"); db.commit(); db.close(); label("store.sqlite", "application/vnd.sqlite3", "file")
track = b"\x00\x90\x3c\x40\x60\x80\x3c\x40\x00\xff\x2f\x00"
open("tune.mid", "wb").write(b"MThd" + struct.pack(">IHHH", 6, 0, 1, 96) + b"MTrk" + struct.pack(">I", len(track)) + track); label("tune.mid", "audio/midi", "file")
# AMR: 50 frames (1 s) of 12.2 kbit/s speech; AMR-WB: 50 frames of 23.85 kbit/s.
open("voice.amr", "wb").write(b"#!AMR\n" + (b"\x3c" + bytes(31)) * 50); label("voice.amr", "audio/amr", "voice")
open("voice.awb", "wb").write(b"#!AMR-WB\n" + (b"\x44" + bytes(60)) * 50); label("voice.awb", "audio/amr-wb", "voice")

# Text
open("plain.txt", "w").write("Just some words.\nAnd another line.\n"); label("plain.txt", "text/plain", "file")
open("unicode.txt", "w", encoding="utf-8").write("Grüße, 世界! ✓\n"); label("unicode.txt", "text/plain", "file")
open("utf16.txt", "wb").write("\ufeffHello, UTF-16 world\n".encode("utf-16-le")); label("utf16.txt", "text/plain", "file")
open("utf16be.txt", "wb").write("\ufeffHello, big end\n".encode("utf-16-be")); label("utf16be.txt", "text/plain", "file")
open("nobom16.txt", "wb").write("Hello without a byte order mark\n".encode("utf-16-le")); label("nobom16.txt", "text/plain", "file")
open("utf32.txt", "wb").write("\ufeffHello, UTF-32\n".encode("utf-32-le")); label("utf32.txt", "text/plain", "file")
open("latin1.txt", "wb").write("caf\u00e9 cr\u00e8me br\u00fbl\u00e9e\n".encode("latin-1")); label("latin1.txt", "text/plain", "file")
open("data.json", "w").write('{"name": "Attache", "items": [1, 2.5, true, null], "nested": {"a": "b"}}\n'); label("data.json", "application/json", "file")
open("table.csv", "w").write("name,age,city\nAnna,31,Berlin\nBob,42,\"Paris, France\"\n"); label("table.csv", "text/csv", "file")
open("bom.csv", "wb").write(b"\xef\xbb\xbfid;amount\n1;10\n2;20\n"); label("bom.csv", "text/csv", "file")
open("table.tsv", "w").write("a\tb\tc\n1\t2\t3\n4\t5\t6\n"); label("table.tsv", "text/tab-separated-values", "file")
open("page.html", "w").write("<!DOCTYPE html>\n<html><head><title>x</title></head><body>hi</body></html>\n"); label("page.html", "text/html", "file")
open("fragment.htm", "w").write("  <div class=\"x\">hello</div>\n"); label("fragment.htm", "text/html", "file")
open("config.xml", "w").write('<?xml version="1.0" encoding="UTF-8"?>\n<config><item key="a"/></config>\n'); label("config.xml", "application/xml", "file")
open("card.vcf", "w").write("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Anna\r\nEND:VCARD\r\n"); label("card.vcf", "text/vcard", "file")
open("event.ics", "w").write("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nSUMMARY:x\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"); label("event.ics", "text/calendar", "file")
open("notes.md", "w").write("# Notes\n\n- one\n- two\n"); label("notes.md", "text/markdown", "file")
open("run.sh", "w").write("#!/bin/sh\necho hi\n"); label("run.sh", "text/x-shellscript", "file")

# Edge cases
open("empty.txt", "wb").close(); label("empty.txt", "application/x-empty", "file")
jpeg = open("photo.jpg", "rb").read()
open("truncated.jpg", "wb").write(jpeg[:100]); label("truncated.jpg", "image/jpeg", "image")
open("lying.png", "wb").write(jpeg); label("lying.png", "image/jpeg", "image")
open("invoice.pdf", "wb").write(open("tool.exe", "rb").read()); label("invoice.pdf", "application/vnd.microsoft.portable-executable", "file")
open("picture", "wb").write(open("image.png", "rb").read()); label("picture", "image/png", "image")
open("random.bin", "wb").write(bytes((i * 7919 + 13) % 251 for i in range(3000)) ); label("random.bin", "application/octet-stream", "file")
open("three.jpg", "wb").write(b"\xff\xd8\xff"); label("three.jpg", "image/jpeg", "image")
PY

# Exif orientation 6 spliced into a JPEG (APP1 right after SOI).
python3 - <<'PY'
import struct
jpeg = open("photo.jpg", "rb").read()
ifd = struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0) + struct.pack(">I", 0)
tiff = b"MM\x00\x2a" + struct.pack(">I", 8) + ifd
app1 = b"Exif\0\0" + tiff
open("rotated.jpg", "wb").write(jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpeg[2:])
with open("labels.tsv", "a") as f: f.write("rotated.jpg\timage/jpeg\timage\n")
PY
echo "corpus: $(wc -l < labels.tsv) files in $out"

# --swift FILE: embed every corpus file of at most 10 KB, base64, with its labels, as test fixtures.
if [[ -n "$swift_out" ]]; then
    python3 - "$swift_out" <<'PY'
import base64, sys
rows = [line.rstrip("\n").split("\t") for line in open("labels.tsv")]
out = ["// Generated by Scripts/bench/detect-corpus.sh OUTDIR --swift THIS_FILE; do not edit.",
       "// Small files made with ffmpeg, ImageMagick, cwebp/img2webp and python3, labelled with the",
       "// expected type and kind. Files over 10 KB stay in the benchmark corpus only.",
       "",
       "enum DetectionCorpus {",
       "    struct File: Sendable, CustomTestStringConvertible {",
       "        let name: String",
       "        let mimeType: String",
       "        let kind: String",
       "        let base64: String",
       "        var testDescription: String { name }",
       "    }",
       "",
       "    static let files: [File] = ["]
for name, mime, kind in rows:
    data = open(name, "rb").read()
    if len(data) > 10 * 1024:
        continue
    encoded = base64.b64encode(data).decode()
    chunks = [encoded[i:i + 96] for i in range(0, len(encoded), 96)] or [""]
    out.append(f'        File(name: "{name}", mimeType: "{mime}", kind: "{kind}", base64: """')
    out.extend("            " + c for c in chunks)
    out.append('            """),')
out += ["    ]", "}", ""]
open(sys.argv[1], "w").write("import Testing\n\n" + "\n".join(out))
PY
    echo "fixtures: $swift_out"
fi
