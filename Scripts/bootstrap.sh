#!/usr/bin/env bash
# Installs the system packages Attache needs to build, test and run the demo, on Debian 12 and Ubuntu
# 22.04/24.04. It does not install Swift; it only checks that a Swift 6 toolchain is on PATH.
#
# Usage: Scripts/bootstrap.sh [--library] [--with-bench] [--with-samples] [--no-swift-check] [--dry-run] [--verbose]
#
# Idempotent: when everything is already installed it only asks dpkg and exits (well under a second).
# apt-get update/install run only when a package is missing.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: Scripts/bootstrap.sh [OPTIONS]

Installs the Debian/Ubuntu packages needed to build and test Attache.

Options:
  --library          only what a package that depends on the Attache library needs to build (the C
                     headers it links), not the test servers and tools
  --with-bench       also install the benchmark anchors (vips, ImageMagick, hyperfine, cwebp, ffmpeg, valgrind,
                     numpy, scipy, Pillow, aria2, perf)
  --with-samples     also install the tools Scripts/make-samples.sh uses
  --no-swift-check   do not fail when no Swift 6 toolchain is on PATH (e.g. while building an image)
  --dry-run          print what would be installed, change nothing
  --verbose          show apt-get output instead of keeping it in a log file
  -h, --help         show this help
EOF
}

library_only=0
with_bench=0
with_samples=0
swift_check=1
dry_run=0
verbose=0
for arg in "$@"; do
    case "$arg" in
        --library) library_only=1 ;;
        --with-bench) with_bench=1 ;;
        --with-samples) with_samples=1 ;;
        --no-swift-check) swift_check=0 ;;
        --dry-run) dry_run=1 ;;
        --verbose) verbose=1 ;;
        -h | --help) usage; exit 0 ;;
        *) printf 'bootstrap: unknown option: %s\n' "$arg" >&2; usage >&2; exit 64 ;;
    esac
done

say() { printf 'bootstrap: %s\n' "$*"; }
die() { printf 'bootstrap: error: %s\n' "$*" >&2; exit 1; }

# --- Which system is this? ------------------------------------------------------------------------------

[[ -r /etc/os-release ]] || die "/etc/os-release not found: only Debian and Ubuntu are supported"
os_id=$(. /etc/os-release && printf '%s' "${ID:-}")
os_like=$(. /etc/os-release && printf '%s' "${ID_LIKE:-}")
os_version=$(. /etc/os-release && printf '%s' "${VERSION_ID:-}")
case " $os_id $os_like " in
    *" debian "* | *" ubuntu "*) ;;
    *) die "unsupported system '$os_id $os_version': this script needs Debian or Ubuntu (apt and dpkg)" ;;
esac
command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: is this really a Debian-based system?"

# --- What it needs --------------------------------------------------------------------------------------
# Each entry is one requirement; "a|b" means either package satisfies it. The order of the alternatives
# only matters when none is installed: the first one apt can install wins.

if [[ " $os_id $os_like " == *" ubuntu "* ]]; then
    jpeg_dev="libjpeg-turbo8-dev|libjpeg62-turbo-dev"
else
    jpeg_dev="libjpeg62-turbo-dev|libjpeg-turbo8-dev"
fi

required=(
    "pkg-config|pkgconf"      # SwiftPM finds the C libraries through pkg-config
    git ca-certificates       # SwiftPM clones the Swift package dependencies over https
    libcurl4-openssl-dev      # Upload (CCurl)
    libturbojpeg0-dev         # Transform (CTurboJPEG)
    "$jpeg_dev"               # Transform (CJPEGStream: libjpeg's row API, jpegint.h)
    libwebp-dev               # Transform (CWebP)
    libssl-dev                # Seal (COpenSSL)
    libpng-dev                # Transform (CPNG)
    libdeflate-dev            # Transform (CPNGStream: whole-buffer inflate of a PNG's image data)
    libsqlite3-dev            # GRDB links the system SQLite (AttacheBatch's journal)
    zlib1g-dev                # detection's gzip heads (CZlib), libpng and swift-nio-extras link zlib
    libc6-dev                 # the C library's headers, which every C target includes
    python3 python3-werkzeug  # tests parse multipart bodies with Werkzeug as an independent parser
    python3-venv              # the S3 tests' emulator (MiniStack) and SDK (boto3) live in a venv of their own
    php-cli                   # PHP's built-in server as another receiver (hostile filenames, nested parameters) and its openssl extension as an independent decryptor
    file                      # libmagic, for detection comparisons
    time                      # /usr/bin/time for peak memory figures
    openssl                   # TLS tests make a throwaway certificate with the openssl CLI
    nginx                     # transport tests count HTTP/2 and HTTP/1.1 connections on a server not ours
    postgresql                # the shared queue's tests start a temporary cluster of their own (initdb, postgres) as its postgres user
    ffmpeg                    # Transform: video, voice and animations (ffmpeg/ffprobe subprocesses); tests probe outputs
    libheif-dev               # Transform: HEIC/HEIF/AVIF photos (CHEIF headers; libheif.so.1 is loaded at run time)
    libavcodec-dev            # Transform: HEIC's HEVC pictures decoded by FFmpeg inside libheif (CHEIF headers; libavcodec.so.59 is loaded at run time, and is optional)
    libheif-examples          # tests and samples make HEIC files with heif-enc
    # Scan stage: the tests start a clamd of their own (private socket, a database they write, no freshclam)
    clamav-daemon             # clamd, the scanner the Scan stage talks to
    clamav-testfiles          # files that carry clamav's test signature (clam.exe and archives of it)
    clamdscan                 # the anchor the scan benchmark compares `attache scan` with
    imagemagick               # placeholder tests decode Telegram's stripped thumbnail, rebuilt, with identify and convert
    # Music is not voice: the tests speak the voice notes they classify
    espeak-ng                 # tests make mono speech (Opus, M4A, MP3) with espeak-ng
    # Observability: a real Prometheus scrapes `--metrics-listen` in the tests; promtool checks the exposition
    prometheus
)
bench=(libvips-tools imagemagick hyperfine webp ffmpeg python3-numpy python3-scipy python3-pil aria2 linux-perf valgrind)
samples=(
    imagemagick fonts-dejavu-core libimage-exiftool-perl webp  # images
    ffmpeg sox espeak-ng libheif-examples                      # audio, video, HEIC
    ghostscript pandoc                                         # PDF and DOCX
    python3
)

# What a package that depends on the library links (README, "Use it in your package").
library=(
    "pkg-config|pkgconf" git ca-certificates libcurl4-openssl-dev libturbojpeg0-dev "$jpeg_dev" libwebp-dev
    libssl-dev libpng-dev libdeflate-dev libsqlite3-dev zlib1g-dev libheif-dev libavcodec-dev
)

wanted=("${required[@]}")
((library_only)) && wanted=("${library[@]}")
((with_bench)) && wanted+=("${bench[@]}")
((with_samples)) && wanted+=("${samples[@]}")

# Drop duplicates while keeping order.
declare -A seen=()
requirements=()
for req in "${wanted[@]}"; do
    [[ -n "${seen[$req]:-}" ]] && continue
    seen[$req]=1
    requirements+=("$req")
done

# --- What is already there (one dpkg-query call) -------------------------------------------------------

all_names=()
for req in "${requirements[@]}"; do
    IFS='|' read -r -a alts <<<"$req"
    all_names+=("${alts[@]}")
done
declare -A installed=()
while read -r name status; do
    [[ "$status" == "install ok installed" ]] && installed[${name%%:*}]=1
done < <(dpkg-query -W -f='${Package} ${Status}\n' "${all_names[@]}" 2>/dev/null || true)

missing=()
for req in "${requirements[@]}"; do
    IFS='|' read -r -a alts <<<"$req"
    ok=0
    for alt in "${alts[@]}"; do
        [[ -n "${installed[$alt]:-}" ]] && { ok=1; break; }
    done
    ((ok)) || missing+=("$req")
done

# --- Install what is missing ---------------------------------------------------------------------------

run_apt() {
    # Keeps apt's chatter out of the way unless asked for; shows its tail when it fails.
    local log
    if ((verbose)); then
        "${privileged[@]}" env DEBIAN_FRONTEND=noninteractive "$@"
        return
    fi
    log=$(mktemp "${TMPDIR:-/tmp}/attache-bootstrap.XXXXXX")
    if ! "${privileged[@]}" env DEBIAN_FRONTEND=noninteractive "$@" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "'$*' failed (full log: $log)"
    fi
    rm -f "$log"
}

# Prints the first alternative that apt has a candidate for, or nothing.
pick_installable() {
    local alt candidate
    local -a alts
    IFS='|' read -r -a alts <<<"$1"
    for alt in "${alts[@]}"; do
        candidate=$(apt-cache policy "$alt" 2>/dev/null | awk '/Candidate:/ { print $2; exit }')
        if [[ -n "$candidate" && "$candidate" != "(none)" ]]; then
            printf '%s' "$alt"
            return
        fi
    done
}

if ((${#missing[@]} == 0)); then
    say "all ${#requirements[@]} required packages already installed"
else
    say "missing: ${missing[*]}"
    if ((dry_run)); then
        say "dry run: would run apt-get update and install the packages above"
    else
        if [[ $(id -u) -eq 0 ]]; then
            privileged=()
        elif command -v sudo >/dev/null 2>&1; then
            privileged=(sudo)
            say "not root: using sudo for apt-get"
        else
            die "packages are missing and this script is neither root nor able to use sudo; run it as root"
        fi
        command -v apt-get >/dev/null 2>&1 || die "apt-get not found"

        say "apt-get update"
        run_apt apt-get update -q

        to_install=()
        unavailable=()
        for req in "${missing[@]}"; do
            pick=$(pick_installable "$req")
            if [[ -n "$pick" ]]; then to_install+=("$pick"); else unavailable+=("$req"); fi
        done
        if ((${#unavailable[@]} > 0)); then
            hint=""
            [[ " $os_id $os_like " == *" ubuntu "* ]] && hint=" (on Ubuntu, enable the 'universe' component)"
            die "no installable candidate for: ${unavailable[*]}$hint"
        fi

        say "apt-get install ${to_install[*]}"
        run_apt apt-get install -y -q --no-install-recommends "${to_install[@]}"
        say "installed ${#to_install[@]} packages"
    fi
fi

# --- Checks that the tests and tools really work -------------------------------------------------------

if ((!dry_run && !library_only)); then
    # The tests call the system interpreter explicitly, whatever python3 comes first on PATH.
    # A full import costs half a second, so the fast path only asks whether the module can be found.
    if ((${#missing[@]} > 0)); then
        py_check='import werkzeug'
    else
        py_check='import importlib.util, sys; sys.exit(importlib.util.find_spec("werkzeug") is None)'
    fi
    if ! /usr/bin/python3 -c "$py_check" 2>/dev/null; then
        die "/usr/bin/python3 cannot import werkzeug (package python3-werkzeug)"
    fi
    say "python: /usr/bin/python3 has werkzeug"
    if ((with_bench && ${#missing[@]} > 0)); then
        /usr/bin/python3 -c 'import numpy, scipy, PIL' 2>/dev/null \
            || die "/usr/bin/python3 cannot import numpy, scipy and PIL"
        say "python: /usr/bin/python3 imports numpy, scipy, PIL"
    fi
fi

# The S3 presigned POST tests run MiniStack's S3 (an emulator that checks a form's policy, signature and
# fields as S3 does) and make forms with boto3, both from PyPI. Debian 12 marks its Python as externally
# managed (PEP 668), so they go into a venv of their own under the user's cache directory (where the tests
# look first), never into the system's site-packages. Skipped when a venv there, or the first python3 on
# PATH, already has them. MiniStack is pinned to the release the tests were written against.
s3_venv="${XDG_CACHE_HOME:-$HOME/.cache}/attache/s3-venv"
# venv_install CHECK PACKAGE...: pip-installs the packages into $s3_venv (made first when missing), then
# requires the Python code CHECK to pass there.
venv_install() {
    local check=$1 log
    shift
    say "python: installing $* into $s3_venv"
    if [[ ! -x "$s3_venv/bin/python3" ]]; then
        mkdir -p "$(dirname "$s3_venv")"
        /usr/bin/python3 -m venv "$s3_venv" || die "cannot create a venv at $s3_venv (package python3-venv)"
    fi
    log=$(mktemp "${TMPDIR:-/tmp}/attache-bootstrap.XXXXXX")
    if ! "$s3_venv/bin/python3" -m pip install -q "$@" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "pip could not install $* into $s3_venv (full log: $log)"
    fi
    rm -f "$log"
    "$s3_venv/bin/python3" -c "$check" || die "$s3_venv cannot import $*"
}
# venv_ensure WHAT SYSTEM_CHECK CHECK PACKAGE...: nothing to do when the Python code CHECK passes in
# $s3_venv, or SYSTEM_CHECK (when not empty) in the first python3 on PATH; else venv_install. WHAT names
# the tools in the messages.
venv_ensure() {
    local what=$1 system_check=$2 check=$3
    shift 3
    if ((library_only)); then
        return
    elif ((dry_run)); then
        say "dry run: would make sure $* can be imported (venv: $s3_venv)"
    elif "$s3_venv/bin/python3" -c "$check" 2>/dev/null; then
        say "python: $what in $s3_venv"
    elif [[ -n "$system_check" ]] && python3 -c "$system_check" 2>/dev/null; then
        say "python: $(command -v python3) has $what"
    else
        venv_install "$check" "$@"
    fi
}
# The resumable upload tests use the same venv for two third-party tus 1.0 servers: tuspyserver (a FastAPI
# router, maintained, pinned) under uvicorn, and tusfilter (a WSGI filter that checks sha1 checksums, with
# WebOb), pinned.
s3_packages=(ministack==1.5.33 boto3 tuspyserver==4.4.3 uvicorn tusfilter==0.5.1)
s3_check='import importlib.metadata as m, boto3, uvicorn, tuspyserver, tusfilter; assert m.version("ministack") == "1.5.33"; assert m.version("tuspyserver") == "4.4.3"; assert m.version("tusfilter") == "0.5.1"'
venv_ensure "MiniStack, boto3, tuspyserver and uvicorn (S3 and tus tests)" "$s3_check" "$s3_check" "${s3_packages[@]}"

# The placeholder and Matrix tests check our output with reference implementations from PyPI: blurhash and
# thumbhash (the algorithms' Python ports) and matrix-nio (a Matrix client library: decrypt_attachment,
# encrypt_attachment). Pinned, into the same venv as the S3 and tus tools (where the tests look first).
chat_packages=(blurhash==1.1.5 thumbhash==0.1.2 matrix-nio==0.26.0)
chat_check='import importlib.metadata as m, blurhash, thumbhash, nio.crypto.attachments; assert m.version("blurhash") == "1.1.5"; assert m.version("thumbhash") == "0.1.2"; assert m.version("matrix-nio") == "0.26.0"'
venv_ensure "blurhash, thumbhash and matrix-nio" "" "$chat_check" "${chat_packages[@]}"

# The object storage tests run against a second S3 implementation beside MiniStack: moto's server
# (moto[server], pinned), installed into the same venv as MiniStack and boto3 above.
objectstore_packages=("moto[server]==5.2.5")
objectstore_check='import importlib.metadata as m, moto.server, boto3; assert m.version("moto") == "5.2.5"'
# moto in the system's python3 counts only beside MiniStack and boto3 there.
venv_ensure "moto's S3 server" "$objectstore_check"$'\n'"$s3_check" "$objectstore_check" "${objectstore_packages[@]}"
# moto sums CRC-32C with the crc32c module when it can import it, else, silently, with CRC-32: the checksum
# tests compare moto's object checksum with ours, so they need the real one (pinned). The tests start
# MiniStack with it too (Tests/IntegrationTests/Tools/ministack_server.py): its own CRC-32C is pure Python.
crc_packages=(crc32c==2.9.post0)
crc_check='import importlib.metadata as m, crc32c; assert m.version("crc32c") == "2.9.post0"'
venv_ensure "crc32c (moto's CRC-32C)" "$crc_check"$'\n'"$objectstore_check" "$crc_check" "${crc_packages[@]}"

# One checksum test runs moto 5.2.1 as a plain `pip install 'moto[server]'` gives it: without crc32c, so
# that it sums CRC-32 where CRC-32C is asked and its object checksum matches nothing (the store whose
# answer cannot be explained, where an upload must keep the object). Only moto itself, pinned, goes into a
# folder of its own (pip --target, no dependencies: it needs the same ones as the moto above, already in
# the venv; a venv of its own would be 300 MB and a minute more). The tests run it with the venv's
# interpreter, that folder first on PYTHONPATH, crc32c hidden (Tests/IntegrationTests/Tools/moto_without_crc32c.py).
moto_plain_dir="${XDG_CACHE_HOME:-$HOME/.cache}/attache/moto-5.2.1"
moto_plain_check='import moto; assert moto.__version__ == "5.2.1"'
moto_python="$s3_venv/bin/python3"
[[ -x "$moto_python" ]] || moto_python=python3
if ((library_only)); then
    :
elif ((dry_run)); then
    say "dry run: would make sure moto 5.2.1 is in $moto_plain_dir"
elif [[ -d "$moto_plain_dir/moto-5.2.1.dist-info" && -f "$moto_plain_dir/moto/server.py" ]]; then
    say "python: moto 5.2.1 in $moto_plain_dir"
else
    say "python: installing moto==5.2.1 into $moto_plain_dir"
    log=$(mktemp "${TMPDIR:-/tmp}/attache-bootstrap.XXXXXX")
    rm -rf "$moto_plain_dir"
    if ! "$moto_python" -m pip install -q --no-deps --target "$moto_plain_dir" "moto==5.2.1" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "pip could not install moto==5.2.1 into $moto_plain_dir (full log: $log)"
    fi
    rm -f "$log"
    PYTHONPATH="$moto_plain_dir" "$moto_python" -c "$moto_plain_check" || die "$moto_plain_dir has no moto 5.2.1"
fi

# The OTLP export test decodes what the exporters send with the official protobuf classes of
# OpenTelemetry (opentelemetry-proto, pinned), from a receiver in Tests/IntegrationTests/Tools, in the same
# venv as the tools above.
otlp_packages=(opentelemetry-proto==1.45.2)
otlp_check='import importlib.metadata as m, opentelemetry.proto.collector.trace.v1.trace_service_pb2; assert m.version("opentelemetry-proto") == "1.45.2"'
venv_ensure "opentelemetry-proto" "$otlp_check" "$otlp_check" "${otlp_packages[@]}"

# The Matrix upload tests run a real homeserver: Synapse (matrix-synapse, pinned), started by
# Tests/IntegrationTests/Tools/synapse_server.py on 127.0.0.1 with SQLite. It goes into a venv of its own,
# not the one above: its sixty-odd dependencies (Twisted, pydantic, jsonschema, cryptography, ...) are
# resolved with lower and upper bounds of their own, and sharing a venv would let pip move packages that
# MiniStack, moto, tuspyserver or matrix-nio were pinned against (and the other way round). The client side
# (matrix-nio, Tools/matrix_client.py) stays in the venv above. The same two functions install it: s3_venv
# is only rebound for these calls.
synapse_venv="${XDG_CACHE_HOME:-$HOME/.cache}/attache/synapse-venv"
synapse_packages=(matrix-synapse==1.163.2)
synapse_check='import importlib.metadata as m, importlib.util as u, sys; assert m.version("matrix-synapse") == "1.163.2"; sys.exit(u.find_spec("synapse") is None)'
s3_venv="$synapse_venv" venv_ensure "Synapse 1.163.2 (Matrix homeserver)" "" "$synapse_check" "${synapse_packages[@]}"

if command -v swift >/dev/null 2>&1; then
    swift_version=$(swift --version 2>&1 | grep -m1 -o 'Swift version [0-9][0-9.]*' || true)
    major=${swift_version#Swift version }
    major=${major%%.*}
    if [[ -z "$swift_version" ]]; then
        say "swift: found at $(command -v swift), version unknown"
    elif ((major < 6)); then
        msg="$swift_version is too old: Attache needs Swift 6.0 or later (https://www.swift.org/install/linux/)"
        if ((swift_check)); then die "$msg"; else say "warning: $msg"; fi
    else
        say "swift: $swift_version"
    fi
else
    msg="swift is not on PATH: install a Swift 6 toolchain for $os_id $os_version from https://www.swift.org/install/linux/ (e.g. with swiftly) and put its usr/bin on PATH"
    if ((swift_check)); then die "$msg"; else say "warning: $msg"; fi
fi
