#!/usr/bin/env bash
# Builds the library's documentation (the DocC catalog Sources/Attache/Attache.docc and the doc comments
# of the library modules Attache, AttacheCore and AttacheBatch) into one static site, and checks that every
# public symbol of those modules has a doc comment and that every stored property a public type encodes
# (Codable, or its own `encode(to:)`) is public too (Scripts/encoded-fields.py), so that a user holding a
# receipt can read what its JSON says. The site must build without a DocC warning (a link that resolves
# nowhere, an undocumented parameter, ...): any warning fails the script.
#
#   Scripts/docs.sh                 run both checks, then build the site into .build/docs
#   Scripts/docs.sh --check-only    only the two checks
#
# A whole Scripts/test.sh run (no --filter) runs it without --check-only, so the site must stay clean.
#
# Open .build/docs/index.html through any static web server (DocC sites need one), e.g.
#   python3 -m http.server -d .build/docs 8000   →   http://127.0.0.1:8000/documentation/attache
# (and /documentation/attachecore, /documentation/attachebatch).
set -euo pipefail
cd "$(dirname "$0")/.."

check_only=0
[[ "${1:-}" == "--check-only" ]] && check_only=1

# One set of symbol graphs (public symbols only) serves both the coverage check and the site. (The
# swift-docc-plugin would build the target a second time with other flags.) Scripts/test.sh sets
# ATTACHE_SYMBOL_GRAPH_DIR for its build, and the library modules write their graphs there as they
# compile (Package.swift): nothing to extract then. Otherwise SwiftPM extracts them; that needs no
# debug information and no index, so with the flags Scripts/test.sh uses (ATTACHE_SWIFTPM_FLAGS) its
# build is reused instead of compiled again.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
built="${ATTACHE_SYMBOL_GRAPH_DIR:-}"
if [[ -n "$built" && -f "$built/Attache.symbols.json" && -f "$built/AttacheCore.symbols.json" \
    && -f "$built/AttacheBatch.symbols.json" ]]; then
    # The compiler's graph of Attache holds AttacheCore's symbols too (Attache re-exports it); the
    # split gives the files the extractor writes.
    echo "==> symbol graphs written by the build ($built)"
    graphs="$work/graphs"
    python3 Scripts/split-symbol-graphs.py "$built" "$graphs" Attache AttacheCore AttacheBatch
else
    read -r -a swiftpm_flags <<<"${ATTACHE_SWIFTPM_FLAGS:--debug-info-format none --disable-index-store}"
    echo "==> swift package ${swiftpm_flags[*]} dump-symbol-graph --minimum-access-level public"
    swift package "${swiftpm_flags[@]}" dump-symbol-graph --minimum-access-level public >/dev/null
    graphs=$(find .build -maxdepth 3 -type d -name symbolgraph | head -n 1)
    [[ -n "$graphs" ]] || { echo "docs: no symbol graphs found under .build" >&2; exit 1; }
fi

# Both checks run, so that one run lists everything either finds.
checks=0
echo "==> doc comment coverage of the public API"
python3 Scripts/doc-coverage.py "$graphs" Attache AttacheCore AttacheBatch || checks=1
echo "==> stored properties the public types encode are public"
python3 Scripts/encoded-fields.py "$graphs" Attache AttacheCore AttacheBatch || checks=1
((checks == 0)) || exit 1

if ((!check_only)); then
    # The site documents the three library modules, each with its extensions of other modules' types
    # (Attache@AttacheCore.symbols.json: what Attache adds to AttacheCore's types). `import Attache`
    # re-exports AttacheCore, so its types are part of what a user of Attache sees.
    site_graphs="$work/site"
    mkdir -p "$site_graphs"
    for module in Attache AttacheCore AttacheBatch; do
        cp "$graphs/$module.symbols.json" "$site_graphs"/
        find "$graphs" -maxdepth 1 -name "$module@*.symbols.json" -exec cp {} "$site_graphs"/ \;
    done
    echo "==> docc convert Sources/Attache/Attache.docc ($(cd "$site_graphs" && echo *.symbols.json))"
    rm -rf .build/docs
    "$(dirname "$(readlink -f "$(command -v swift)")")"/docc convert Sources/Attache/Attache.docc \
        --additional-symbol-graph-dir "$site_graphs" \
        --fallback-display-name Attache --fallback-bundle-identifier Attache \
        --warnings-as-errors \
        --transform-for-static-hosting --output-path .build/docs
    echo "docs: .build/docs"
fi
