#!/usr/bin/env python3
"""Lists the stored properties that a public type encodes but a library user cannot read, and exits 1
when there is any.

    encoded-fields.py SYMBOLGRAPH_DIR MODULE...

A public type that conforms to `Encodable` (`Codable`, or its own `encode(to:)`) writes its stored
properties into the JSON a user keeps; each of them must then be public too, so that whoever holds the
value can read what its JSON says. The public symbol graphs name the public types, their conformances
and where each is declared; they leave out everything that is not public, so the stored properties are
read from the type's own declaration in the source (stored properties cannot be declared in an
extension). A property counts as encoded unless the type's body says otherwise:
- with its own `encode(to:)`, only the properties that function names;
- with a `CodingKeys` enum and the synthesized `encode(to:)`, only the properties it has a case for.
Static properties are not stored in a value and are not counted. A property whose getter is public
(`public private(set) var`) is readable, and passes.

The source is read with a small tokenizer (comments, string literals and their interpolations, brackets),
enough for declarations at the top level of a type's body; it needs no build of its own.
"""
import json
import os
import re
import sys
from urllib.parse import unquote, urlparse

ACCESS = ("open", "public", "package", "internal", "fileprivate", "private")


def tokens(text):
    """Swift tokens as (kind, value, offset): identifiers, punctuation, newlines; comments and string
    literals are skipped (a string's interpolations are read as tokens, with their own brackets)."""
    out = []
    i, n = 0, len(text)

    def skip_string(i):
        # i is at the opening quote(s), after any leading '#'s counted by the caller.
        hashes = 0
        while text[i] == "#":
            hashes += 1
            i += 1
        multi = text.startswith('"""', i)
        quote = '"""' if multi else '"'
        i += len(quote)
        close = quote + "#" * hashes
        escape = "\\" + "#" * hashes
        while i < n:
            if text.startswith(close, i):
                return i + len(close)
            if text.startswith(escape, i):
                i += len(escape)
                if i < n and text[i] == "(":
                    # An interpolation: its own tokens, up to the parenthesis that closes it.
                    depth, i = 1, i + 1
                    while i < n and depth:
                        if text[i] == '"' or (text[i] == "#" and re.match(r'#+"', text[i:])):
                            i = skip_string(i)
                            continue
                        depth += {"(": 1, ")": -1}.get(text[i], 0)
                        i += 1
                else:
                    i += 1
                continue
            i += 1
        return i

    while i < n:
        c = text[i]
        if c == "\n":
            out.append(("newline", c, i))
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == '"' or (c == "#" and re.match(r'#+"', text[i:])):
            i = skip_string(i)
            out.append(("string", "", i))
        elif c == "`":
            end = text.find("`", i + 1)
            out.append(("word", text[i + 1:end], i))
            i = end + 1
        elif c.isalnum() or c == "_":
            m = re.match(r"[A-Za-z0-9_]+", text[i:])
            out.append(("word", m.group(0), i))
            i += len(m.group(0))
        else:
            out.append(("punct", c, i))
            i += 1
    return out


def opening(toks, k):
    """The index of the first brace at or after token k."""
    while toks[k][1] != "{":
        k += 1
    return k


def closing(toks, k):
    """The index of the brace that closes the first one at or after token k."""
    k = opening(toks, k)
    depth = 0
    while True:
        if toks[k][0] == "punct" and toks[k][1] in ("{", "(", "["):
            depth += 1
        elif toks[k][0] == "punct" and toks[k][1] in ("}", ")", "]"):
            depth -= 1
            if depth == 0:
                return k
        k += 1


def type_body(toks, text, name, kind, line):
    """The index range of the tokens inside the braces of the declaration `kind name` closest to `line`."""
    keyword = {"swift.struct": "struct", "swift.class": "class", "swift.enum": "enum", "swift.actor": "actor"}[kind]
    starts = [k for k in range(len(toks) - 1)
              if toks[k][1] == keyword and toks[k + 1][1] == name and toks[k][0] == toks[k + 1][0] == "word"]
    if not starts:
        return None
    start = min(starts, key=lambda k: abs(text.count("\n", 0, toks[k][2]) - line))
    last = closing(toks, start)
    return opening(toks, start) + 1, last


def members(toks, first, last):
    """The declarations directly inside a type body: for each stored property its name, access and offset
    in the text, the names a `CodingKeys` enum lists, and the words of an `encode(to:)` body (None for
    either when the body declares none)."""
    stored, keys, encode = [], None, None
    depth = 0
    k = first
    while k < last:
        kind, value, _ = toks[k]
        if kind == "punct" and value in ("{", "(", "["):
            depth += 1
        elif kind == "punct" and value in ("}", ")", "]"):
            depth -= 1
        elif depth == 0 and kind == "word" and value in ("let", "var"):
            # The modifiers before the keyword, on its line (`public private(set) var` is public to read).
            j = k - 1
            while j >= first and toks[j][0] != "newline":
                j -= 1
            line = toks[j + 1:k]
            access, modifiers = "internal", set()
            for m, (word_kind, word, _) in enumerate(line):
                if word_kind != "word":
                    continue
                modifiers.add(word)
                setter = m + 1 < len(line) and line[m + 1][1] == "(" and word in ACCESS
                if word in ACCESS and not setter:
                    access = word
            if "static" in modifiers or "class" in modifiers:
                k += 1
                continue
            # The bound names (`let a: A, b: B`), up to an initial value or an accessor block.
            names, j, nesting, computed = [], k + 1, 0, False
            expect_name = True
            while j < last:
                tk, tv, _ = toks[j]
                if tk == "punct" and tv in ("(", "[", "<"):
                    nesting += 1
                elif tk == "punct" and tv in (")", "]", ">") and toks[j - 1][1] != "-":
                    nesting -= 1
                elif nesting == 0 and tk == "word" and expect_name:
                    names.append(tv)
                    expect_name = False
                elif nesting == 0 and tv == ",":
                    expect_name = True
                elif nesting == 0 and (tv == "=" or tv == ";"):
                    break
                elif nesting == 0 and tv == "{":
                    # An accessor block: observers keep the property stored, anything else computes it.
                    after = next((t for t in toks[j + 1:last] if t[0] != "newline"), None)
                    computed = value == "var" and not (after and after[1] in ("willSet", "didSet"))
                    break
                elif nesting == 0 and tk == "newline":
                    after = next((t for t in toks[j + 1:last] if t[0] != "newline"), None)
                    if not (after and after[1] == "{"):
                        break
                j += 1
            if not computed:
                stored.extend((name, access, toks[k][2]) for name in names)
        elif depth == 0 and kind == "word" and value == "enum" and toks[k + 1][1] == "CodingKeys":
            keys = set()
            for m in range(opening(toks, k), closing(toks, k)):
                if toks[m][1] == "case" or (toks[m][1] == "," and toks[m - 1][0] in ("word", "string")):
                    if toks[m + 1][0] == "word":
                        keys.add(toks[m + 1][1])
        elif depth == 0 and value == "func" and toks[k + 1][1] == "encode" and toks[k + 3][1] == "to":
            encode = {t[1] for t in toks[opening(toks, k):closing(toks, k)] if t[0] == "word"}
        k += 1
    return stored, keys, encode


def main() -> int:
    folder, modules = sys.argv[1], sys.argv[2:]
    found, checked = [], 0
    for module in modules:
        with open(os.path.join(folder, module + ".symbols.json"), encoding="utf-8") as handle:
            graph = json.load(handle)
        symbols = {s["identifier"]["precise"]: s for s in graph["symbols"]}
        # Encodable, and the protocols of these modules that refine it.
        encodable = {"s:SE"}
        grew = True
        while grew:
            grew = False
            for relation in graph["relationships"]:
                if relation["kind"] == "inheritsFrom" and relation["target"] in encodable \
                        and relation["source"] not in encodable:
                    encodable.add(relation["source"])
                    grew = True
        types = {r["source"] for r in graph["relationships"]
                 if r["kind"] == "conformsTo" and r["target"] in encodable}
        for identifier in sorted(types):
            symbol = symbols.get(identifier)
            if not symbol or symbol.get("accessLevel") not in ("public", "open") or "location" not in symbol:
                continue
            kind = symbol["kind"]["identifier"]
            if kind not in ("swift.struct", "swift.class", "swift.enum", "swift.actor"):
                continue
            path = unquote(urlparse(symbol["location"]["uri"]).path)
            name = ".".join(symbol["pathComponents"])
            source = path[path.rfind("/Sources/") + 1:] if "/Sources/" in path else path
            try:
                with open(path, encoding="utf-8") as handle:
                    text = handle.read()
            except OSError as error:
                print(f"encoded-fields: {name}: {error} (symbol graphs older than the sources?)", file=sys.stderr)
                return 2
            toks = tokens(text)
            body = type_body(toks, text, symbol["names"]["title"].split(".")[-1], kind,
                             symbol["location"]["position"]["line"])
            if body is None:
                print(f"{source}: encoded-fields: no declaration of {name} (symbol graphs older than the sources?)",
                      file=sys.stderr)
                return 2
            checked += 1
            stored, keys, encode = members(toks, *body)
            for field, access, offset in stored:
                if access in ("public", "open"):
                    continue
                if encode is not None and field not in encode:
                    continue
                if encode is None and keys is not None and field not in keys:
                    continue
                found.append((source, text.count("\n", 0, offset) + 1, name, field, access))
    for source, line, name, field, access in sorted(found):
        print(f"{source}:{line}: {name}.{field} is encoded but {access}: a user holding the value cannot read it")
    print(f"encoded fields: {len(found)} not public in {checked} public Encodable types of {', '.join(modules)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
