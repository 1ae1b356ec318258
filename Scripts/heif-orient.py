#!/usr/bin/env python3
"""Gives a HEIF file's primary image an `irot` (rotation) and/or `imir` (mirror) property, as phones write them.

Usage: Scripts/heif-orient.py IN OUT [--rotate 0|90|180|270] [--mirror-axis 0|1]

heif-enc (libheif 1.15) writes pixels as they are and never sets these properties, so the samples and the
tests add them here: the properties go at the end of `ipco`, the primary item's `ipma` entry gains essential
associations to them, and every enclosing box size and every file offset in `iloc` after the insertion
point is moved. `--rotate` is counter-clockwise, as in ISO/IEC 23008-12 (`irot` angle × 90°); `--mirror-axis`
is written as given (libheif 1.15 swaps left and right for 1, top and bottom for 0).
"""
import argparse
import struct
import sys


def boxes(data, start, end):
    """(type, start, size, header) of each box between start and end."""
    while start + 8 <= end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[start + 8:start + 16])[0]
            header = 16
        elif size == 0:
            size = end - start
        yield kind.decode("latin-1"), start, size, header
        start += size


def find(data, start, end, kind):
    for box in boxes(data, start, end):
        if box[0] == kind:
            return box
    raise SystemExit(f"heif-orient: no {kind} box")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--rotate", type=int, default=0, choices=[0, 90, 180, 270])
    parser.add_argument("--mirror-axis", type=int, choices=[0, 1])
    args = parser.parse_args()
    data = bytearray(open(args.input, "rb").read())

    _, meta, meta_size, meta_header = find(data, 0, len(data), "meta")
    meta_body = meta + meta_header + 4  # FullBox
    _, pitm, _, pitm_header = find(data, meta_body, meta + meta_size, "pitm")
    pitm_version = data[pitm + pitm_header]
    primary = struct.unpack(">H" if pitm_version == 0 else ">I",
                            data[pitm + pitm_header + 4:pitm + pitm_header + (6 if pitm_version == 0 else 8)])[0]
    _, iprp, iprp_size, iprp_header = find(data, meta_body, meta + meta_size, "iprp")
    _, ipco, ipco_size, ipco_header = find(data, iprp + iprp_header, iprp + iprp_size, "ipco")
    properties = list(boxes(data, ipco + ipco_header, ipco + ipco_size))

    new_properties = b""
    indices = []
    if args.rotate:
        new_properties += struct.pack(">I4sB", 9, b"irot", args.rotate // 90)
        indices.append(len(properties) + len(indices) + 1)
    if args.mirror_axis is not None:
        new_properties += struct.pack(">I4sB", 9, b"imir", args.mirror_axis)
        indices.append(len(properties) + len(indices) + 1)
    if not indices:
        open(args.output, "wb").write(data)
        return

    # The primary item's ipma entry, and where its associations end.
    _, ipma, ipma_size, ipma_header = find(data, iprp + iprp_header, iprp + iprp_size, "ipma")
    version, flags = data[ipma + ipma_header], int.from_bytes(data[ipma + ipma_header + 1:ipma + ipma_header + 4], "big")
    wide = flags & 1
    position = ipma + ipma_header + 4
    count = struct.unpack(">I", data[position:position + 4])[0]
    position += 4
    entry_end = None
    count_at = None
    for _ in range(count):
        item_size = 2 if version < 1 else 4
        item = int.from_bytes(data[position:position + item_size], "big")
        position += item_size
        associations = data[position]
        if item == primary:
            count_at = position
        position += 1 + associations * (2 if wide else 1)
        if item == primary:
            entry_end = position
    if entry_end is None:
        raise SystemExit("heif-orient: the primary item has no ipma entry")
    added_associations = b"".join(
        struct.pack(">H", 0x8000 | index) if wide else bytes([0x80 | index]) for index in indices)

    # Insert the associations first (later in the file), then the properties at the end of ipco.
    ipco_end = ipco + ipco_size
    data[entry_end:entry_end] = added_associations
    data[count_at] += len(indices)
    data[ipco_end:ipco_end] = new_properties
    growth = len(added_associations) + len(new_properties)

    def grow(start, header, amount):
        if header == 8:
            size = struct.unpack(">I", data[start:start + 4])[0]
            data[start:start + 4] = struct.pack(">I", size + amount)
        else:
            size = struct.unpack(">Q", data[start + 8:start + 16])[0]
            data[start + 8:start + 16] = struct.pack(">Q", size + amount)

    # ipma sits after ipco, so it moved by the properties' length.
    grow(ipma + len(new_properties), ipma_header, len(added_associations))
    grow(ipco, ipco_header, len(new_properties))
    grow(iprp, iprp_header, growth)
    grow(meta, meta_header, growth)

    # Every iloc offset that points past the meta box moves by the growth (construction method 0).
    meta_end_before = meta + meta_size
    _, iloc, iloc_size, iloc_header = find(data, meta_body, meta + meta_size + growth, "iloc")
    version = data[iloc + iloc_header]
    p = iloc + iloc_header + 4
    offset_size, length_size = data[p] >> 4, data[p] & 15
    base_size, index_size = data[p + 1] >> 4, (data[p + 1] & 15 if version in (1, 2) else 0)
    p += 2
    if version < 2:
        items = struct.unpack(">H", data[p:p + 2])[0]
        p += 2
    else:
        items = struct.unpack(">I", data[p:p + 4])[0]
        p += 4

    def adjust(at, size):
        if size == 0:
            return
        value = int.from_bytes(data[at:at + size], "big")
        if value >= meta_end_before:
            data[at:at + size] = (value + growth).to_bytes(size, "big")

    for _ in range(items):
        p += 2 if version < 2 else 4
        method = 0
        if version in (1, 2):
            method = struct.unpack(">H", data[p:p + 2])[0] & 15
            p += 2
        p += 2  # data_reference_index
        base_at = p
        base = int.from_bytes(data[p:p + base_size], "big") if base_size else 0
        p += base_size
        extents = struct.unpack(">H", data[p:p + 2])[0]
        p += 2
        if method == 0 and base_size:
            adjust(base_at, base_size)
        for _ in range(extents):
            p += index_size
            if method == 0 and not base_size:
                adjust(p, offset_size)
            p += offset_size + length_size
    open(args.output, "wb").write(data)


if __name__ == "__main__":
    sys.exit(main())
