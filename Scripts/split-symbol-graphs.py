#!/usr/bin/env python3
"""Splits the symbol graphs the compiler writes while building into the files DocC and the coverage
check expect, as `swift package dump-symbol-graph` writes them.

Usage: split-symbol-graphs.py IN_DIR OUT_DIR MODULE...

The compiler's graph of a module that re-exports another (`@_exported import AttacheCore` in Attache)
holds the re-exported module's symbols too, and the members it adds to that module's types. The
extractor keeps the first out of the graph and writes the second to MODULE@OTHER.symbols.json. This
does the same, for each MODULE given, against the graphs of the other MODULEs given.
"""
import json
import os
import sys


def main(argv):
    if len(argv) < 4:
        print(__doc__.strip(), file=sys.stderr)
        return 64
    source, target, modules = argv[1], argv[2], argv[3:]
    graphs = {}
    for module in modules:
        with open(os.path.join(source, module + ".symbols.json")) as f:
            graphs[module] = json.load(f)
    os.makedirs(target, exist_ok=True)
    for module, graph in graphs.items():
        # The symbols each other module declares (in its graph, and named in that module by their
        # identifier: s:11AttacheCore… for AttacheCore, or a protocol's default member synthesized on
        # one of its types, …::SYNTHESIZED::s:11AttacheCore…), and the module each belongs to.
        owner = {}
        for other, other_graph in graphs.items():
            if other == module:
                continue
            prefix = "s:%d%s" % (len(other), other)
            for symbol in other_graph["symbols"]:
                identifier = symbol["identifier"]["precise"]
                if identifier.rpartition("::SYNTHESIZED::")[2].startswith(prefix):
                    owner.setdefault(identifier, other)
        foreign = {s["identifier"]["precise"] for s in graph["symbols"]} & set(owner)
        # A member this module adds to another module's type belongs to MODULE@OTHER.
        extended = {}
        for relation in graph["relationships"]:
            if relation["kind"] == "memberOf" and relation["source"] not in foreign \
                    and relation["target"] in owner:
                extended[relation["source"]] = owner[relation["target"]]
        files = {module: ([], [])}
        for other in set(extended.values()):
            files[module + "@" + other] = ([], [])

        def file_of(identifier):
            if identifier in extended:
                return module + "@" + extended[identifier]
            return module

        for symbol in graph["symbols"]:
            identifier = symbol["identifier"]["precise"]
            if identifier not in foreign:
                files[file_of(identifier)][0].append(symbol)
        for relation in graph["relationships"]:
            if relation["source"] not in foreign:
                files[file_of(relation["source"])][1].append(relation)
        for name, (symbols, relationships) in files.items():
            out = {key: value for key, value in graph.items() if key not in ("symbols", "relationships")}
            out["symbols"], out["relationships"] = symbols, relationships
            with open(os.path.join(target, name + ".symbols.json"), "w") as f:
                json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
