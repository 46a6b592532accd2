#!/usr/bin/env python3
"""Checks a screenshot of the HTML report: the PNG decodes, is not blank, and shows the
red of the faulty layer's frame / first-failure line and the blue of the loss curve.
Usage: png_colors.py report.png (standard library only: zlib, struct)."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    width, height, bpp, rows = read_png(sys.argv[1])
    counts = {"red": 0, "blue": 0}
    colors = set()
    for row in rows[::2]:
        for x in range(0, width * bpp, bpp * 2):
            r, g, b = row[x], row[x + 1], row[x + 2]
            colors.add((r >> 4, g >> 4, b >> 4))
            if r > 190 and g < 80 and b < 80:
                counts["red"] += 1
            if r < 70 and 80 < g < 130 and b > 200:
                counts["blue"] += 1
    print(f"png: {width}x{height}, {len(colors)} colour bins, sampled red {counts['red']}, blue {counts['blue']}")
    if len(colors) < 8:
        sys.exit("png: the screenshot is nearly blank")
    if counts["red"] < 300:
        sys.exit("png: no red frame / first-failure line visible")
    if counts["blue"] < 30:
        sys.exit("png: no loss curve visible")


if __name__ == "__main__":
    main()
