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

# One build, with the symbol graphs of every module (public symbols only), serves both the coverage
# check and the site. (The swift-docc-plugin would build the target a second time with other flags.)
echo "==> swift package dump-symbol-graph --minimum-access-level public"
swift package dump-symbol-graph --minimum-access-level public >/dev/null
graphs=$(find .build -maxdepth 3 -type d -name symbolgraph | head -n 1)
[[ -n "$graphs" ]] || { echo "docs: no symbol graphs found under .build" >&2; exit 1; }

echo "==> doc comment coverage of the public API"
python3 Scripts/doc-coverage.py "$graphs" Attache AttacheCore AttacheBatch

if ((!check_only)); then
    # The site documents module Attache: its own graph and its extensions of other modules' types.
    site_graphs=$(mktemp -d)
    trap 'rm -rf "$site_graphs"' EXIT
    cp "$graphs"/Attache.symbols.json "$site_graphs"/
    find "$graphs" -maxdepth 1 -name 'Attache@*.symbols.json' -exec cp {} "$site_graphs"/ \;
    echo "==> docc convert Sources/Attache/Attache.docc"
    rm -rf .build/docs
    "$(dirname "$(readlink -f "$(command -v swift)")")"/docc convert Sources/Attache/Attache.docc \
        --additional-symbol-graph-dir "$site_graphs" \
        --fallback-display-name Attache --fallback-bundle-identifier Attache \
        --transform-for-static-hosting --output-path .build/docs
    echo "docs: .build/docs"
fi
