#!/usr/bin/env python3
"""Lists the public symbols of the given modules that have no doc comment, from the symbol graphs that
`swift package dump-symbol-graph` writes, and exits 1 when there is any.

    doc-coverage.py SYMBOLGRAPH_DIR MODULE...

Symbols without a source location (what the compiler synthesizes: `hash(into:)` of an enum, the literal
initialisers a protocol provides) are not counted: there is no line to write a comment on.
"""
import json
import os
import sys


def main() -> int:
    folder, modules = sys.argv[1], sys.argv[2:]
    total = 0
    missing = []
    for module in modules:
        path = os.path.join(folder, module + ".symbols.json")
        with open(path, encoding="utf-8") as handle:
            graph = json.load(handle)
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") not in ("public", "open"):
                continue
            location = symbol.get("location")
            if not location:
                continue
            total += 1
            if symbol.get("docComment"):
                continue
            uri = location.get("uri", "")
            source = uri[uri.rfind("/Sources/") + 1:] if "/Sources/" in uri else uri
            line = location.get("position", {}).get("line", 0) + 1
            missing.append((source, line, ".".join(symbol["pathComponents"])))
    for source, line, name in sorted(missing):
        print(f"{source}:{line}: public symbol without a doc comment: {name}")
    print(f"doc comments: {total - len(missing)} of {total} public symbols in {', '.join(modules)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
