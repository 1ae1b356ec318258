#!/usr/bin/env python3
"""Makes a HEIC whose primary image is a grid of HEVC tiles, as phones write them (iPhones: 512×512 tiles).

Usage: Scripts/heif-grid.py IN OUT [--tile 512] [heif-enc options, e.g. -q 70, or -b 10 for 10 bits]

heif-enc (libheif 1.15) writes one picture per image and never a grid, so the samples, the tests and the
benchmark build one here: ffmpeg turns IN (any picture it reads) into RGB, the picture is cut into tiles
of --tile × --tile pixels (the right and bottom ones extended with their edge pixels, as encoders pad),
heif-enc encodes each tile on its own, and the tiles' HEVC data and decoder configurations (hvcC) go into
one file: a `grid` item (ISO/IEC 23008-12, 6.6.2.3) of the picture's size that refers to the tiles in
raster order (`dimg`), each tile a hidden `hvc1` item. The colour description (`colr`) of the first tile
is given to the grid. With heif-enc's `-b` (bit depth), the tiles go to it as 16-bit PNGs, which it
encodes at that depth. Needs ffmpeg and heif-enc.
"""
import os
import struct
import subprocess
import sys
import tempfile
import zlib


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", version << 24 | flags) + payload)


def boxes(data, start, end):
    while start + 8 <= end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        header = 8
        if size == 1:
            size = struct.unpack(">Q", data[start + 8:start + 16])[0]
            header = 16
        elif size == 0:
            size = end - start
        yield kind, start, size, header
        start += size


def child(data, start, end, kind):
    for found in boxes(data, start, end):
        if found[0] == kind:
            return found
    raise SystemExit(f"heif-grid: no {kind.decode()} box")


def tile_parts(path):
    """The HEVC data of a one-picture HEIC's primary item, and its hvcC and colr property boxes."""
    data = open(path, "rb").read()
    _, meta, meta_size, meta_header = child(data, 0, len(data), b"meta")
    body, end = meta + meta_header + 4, meta + meta_size
    _, pitm, _, pitm_header = child(data, body, end, b"pitm")
    primary = struct.unpack(">H", data[pitm + pitm_header + 4:pitm + pitm_header + 6])[0]
    _, iprp, iprp_size, iprp_header = child(data, body, end, b"iprp")
    _, ipco, ipco_size, ipco_header = child(data, iprp + iprp_header, iprp + iprp_size, b"ipco")
    properties = [data[s:s + n] for _, s, n, _ in boxes(data, ipco + ipco_header, ipco + ipco_size)]
    _, ipma, _, ipma_header = child(data, iprp + iprp_header, iprp + iprp_size, b"ipma")
    version, flags = data[ipma + ipma_header], int.from_bytes(data[ipma + ipma_header + 1:ipma + ipma_header + 4], "big")
    p = ipma + ipma_header + 4
    count = struct.unpack(">I", data[p:p + 4])[0]
    p += 4
    chosen = {}
    for _ in range(count):
        item_size = 2 if version < 1 else 4
        item = int.from_bytes(data[p:p + item_size], "big")
        p += item_size
        associations = data[p]
        p += 1
        for _ in range(associations):
            index = (struct.unpack(">H", data[p:p + 2])[0] & 0x7FFF) if flags & 1 else data[p] & 0x7F
            p += 2 if flags & 1 else 1
            if item == primary and index > 0:
                prop = properties[index - 1]
                chosen[prop[4:8]] = prop
    _, iloc, _, iloc_header = child(data, body, end, b"iloc")
    version = data[iloc + iloc_header]
    p = iloc + iloc_header + 4
    offset_size, length_size = data[p] >> 4, data[p] & 15
    base_size, index_size = data[p + 1] >> 4, (data[p + 1] & 15 if version in (1, 2) else 0)
    p += 2
    items = struct.unpack(">H", data[p:p + 2])[0]
    p += 2
    for _ in range(items):
        item = struct.unpack(">H", data[p:p + 2])[0]
        p += 2
        if version in (1, 2):
            p += 2
        p += 2
        base = int.from_bytes(data[p:p + base_size], "big") if base_size else 0
        p += base_size
        extents = struct.unpack(">H", data[p:p + 2])[0]
        p += 2
        stream = b""
        for _ in range(extents):
            p += index_size
            offset = int.from_bytes(data[p:p + offset_size], "big")
            length = int.from_bytes(data[p + offset_size:p + offset_size + length_size], "big")
            p += offset_size + length_size
            stream += data[base + offset:base + offset + length]
        if item == primary:
            return stream, chosen[b"hvcC"], chosen.get(b"colr")
    raise SystemExit("heif-grid: the tile has no data")


def png(path, width, height, rows, depth):
    raw = b"".join(b"\0" + row for row in rows)
    with open(path, "wb") as out:
        def chunk(kind, data):
            out.write(struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data)))
        out.write(b"\x89PNG\r\n\x1a\n")
        chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, 2, 0, 0, 0))
        chunk(b"IDAT", zlib.compress(raw, 1))
        chunk(b"IEND", b"")


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    source, output = sys.argv[1], sys.argv[2]
    rest, tile, encoder_options = sys.argv[3:], 512, []
    while rest:
        if rest[0] == "--tile":
            tile, rest = int(rest[1]), rest[2:]
        else:
            encoder_options.append(rest.pop(0))
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                            "-of", "csv=p=0", source], check=True, capture_output=True, text=True).stdout
    width, height = (int(v) for v in probe.strip().split(",")[:2])
    depth = 16 if "-b" in encoder_options else 8
    pixel = 3 * depth // 8
    rgb = subprocess.run(["ffmpeg", "-v", "error", "-i", source, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt",
                          "rgb48be" if depth == 16 else "rgb24", "-"], check=True, capture_output=True).stdout
    columns, rows = -(-width // tile), -(-height // tile)
    streams, configurations, colour = [], [], None
    with tempfile.TemporaryDirectory() as work:
        for row in range(rows):
            for column in range(columns):
                lines = []
                for y in range(tile):
                    sy = min(row * tile + y, height - 1)
                    x0 = column * tile
                    x1 = min(x0 + tile, width)
                    line = rgb[(sy * width + x0) * pixel:(sy * width + x1) * pixel]
                    line += line[-pixel:] * (tile - (x1 - x0))
                    lines.append(line)
                name = os.path.join(work, "tile")
                png(name + ".png", tile, tile, lines, depth)
                subprocess.run(["heif-enc"] + encoder_options + ["-o", name + ".heic", name + ".png"], check=True,
                               stdout=subprocess.DEVNULL)
                stream, hvcc, colr = tile_parts(name + ".heic")
                streams.append(stream)
                configurations.append(hvcc)
                colour = colour or colr

    count = rows * columns
    tile_ids = list(range(2, 2 + count))
    # Properties: 1 the grid's ispe, 2 the tiles' ispe, 3 colr (if any), then each distinct hvcC.
    properties = [full_box(b"ispe", 0, 0, struct.pack(">II", width, height)),
                  full_box(b"ispe", 0, 0, struct.pack(">II", tile, tile))]
    if colour:
        properties.append(colour)
    hvcc_index = {}
    for configuration in configurations:
        if configuration not in hvcc_index:
            properties.append(configuration)
            hvcc_index[configuration] = len(properties)
    colr_index = 3 if colour else None
    grid_associations = [0x80 | 1] + ([0x80 | colr_index] if colr_index else [])
    entries = struct.pack(">HB", 1, len(grid_associations)) + bytes(grid_associations)
    for item, configuration in zip(tile_ids, configurations):
        tile_associations = [0x80 | hvcc_index[configuration], 2] + ([0x80 | colr_index] if colr_index else [])
        entries += struct.pack(">HB", item, len(tile_associations)) + bytes(tile_associations)
    iprp = box(b"iprp", box(b"ipco", b"".join(properties)) + full_box(b"ipma", 0, 0, struct.pack(">I", 1 + count) + entries))
    infe = [full_box(b"infe", 2, 0, struct.pack(">HH4s", 1, 0, b"grid") + b"\0")]
    infe += [full_box(b"infe", 2, 1, struct.pack(">HH4s", item, 0, b"hvc1") + b"\0") for item in tile_ids]
    iinf = full_box(b"iinf", 0, 0, struct.pack(">H", 1 + count) + b"".join(infe))
    iref = full_box(b"iref", 0, 0, box(b"dimg", struct.pack(">HH", 1, count) + b"".join(struct.pack(">H", i) for i in tile_ids)))
    grid = struct.pack(">BBBBHH", 0, 0, rows - 1, columns - 1, width, height)
    idat = box(b"idat", grid)
    hdlr = full_box(b"hdlr", 0, 0, struct.pack(">I4s12x", 0, b"pict") + b"\0")
    pitm = full_box(b"pitm", 0, 0, struct.pack(">H", 1))

    def iloc(mdat_data_start):
        entries = struct.pack(">HHHHII", 1, 1, 0, 1, 0, len(grid))  # construction method 1: idat
        offset = mdat_data_start
        for item, stream in zip(tile_ids, streams):
            entries += struct.pack(">HHHHII", item, 0, 0, 1, offset, len(stream))
            offset += len(stream)
        # version 1: offset and length 4 bytes, no base offset, no index.
        return full_box(b"iloc", 1, 0, struct.pack(">BBH", 0x44, 0x00, 1 + count) + entries)

    ftyp = box(b"ftyp", b"heic" + struct.pack(">I", 0) + b"mif1heicmiaf")
    meta_length = len(full_box(b"meta", 0, 0, hdlr + pitm + iloc(0) + iinf + iref + iprp + idat))
    mdat_data_start = len(ftyp) + meta_length + 8
    meta = full_box(b"meta", 0, 0, hdlr + pitm + iloc(mdat_data_start) + iinf + iref + iprp + idat)
    assert len(meta) == meta_length
    with open(output, "wb") as out:
        out.write(ftyp + meta + box(b"mdat", b"".join(streams)))


if __name__ == "__main__":
    sys.exit(main())
