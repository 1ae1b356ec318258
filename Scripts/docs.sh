#!/usr/bin/env bash
# Builds the library's documentation (the DocC catalog Sources/Attache/Attache.docc and the doc comments
# of module Attache) into a static site, and checks that every public symbol of the library modules
# (Attache, AttacheCore, AttacheBatch) has a doc comment.
#
#   Scripts/docs.sh                 build the site into .build/docs, then check coverage
#   Scripts/docs.sh --check-only    only the coverage check (what Scripts/test.sh runs)
#
# Open .build/docs/index.html through any static web server (DocC sites need one), e.g.
#   python3 -m http.server -d .build/docs 8000   →   http://127.0.0.1:8000/documentation/attache
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=0
[[ "${1:-}" == "--check-only" ]] && check_only=1

if ((!check_only)); then
    echo "==> swift package generate-documentation --target Attache"
    swift package --allow-writing-to-directory .build/docs generate-documentation --target Attache \
        --disable-indexing --transform-for-static-hosting --output-path .build/docs
    echo "docs: .build/docs"
fi

echo "==> doc comment coverage of the public API"
swift package dump-symbol-graph --minimum-access-level public >/dev/null
graphs=$(find .build -maxdepth 3 -type d -name symbolgraph | head -n 1)
[[ -n "$graphs" ]] || { echo "docs: no symbol graphs found under .build" >&2; exit 1; }
python3 Scripts/doc-coverage.py "$graphs" Attache AttacheCore AttacheBatch
