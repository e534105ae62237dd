"""A small PNG reader (8-bit RGB/RGBA/grey, non-interlaced: what cairo writes) and pixel helpers."""
import struct
import zlib


class Image:
    def __init__(self, width, height, rows):
        self.width, self.height, self.rows = width, height, rows  # rows: list of bytes, RGB

    def pixel(self, x, y):
        r = self.rows[y]
        return (r[3 * x], r[3 * x + 1], r[3 * x + 2])

    def histogram(self, x0=0, y0=0, x1=None, y1=None):
        x1 = self.width if x1 is None else x1
        y1 = self.height if y1 is None else y1
        counts = {}
        for y in range(y0, y1):
            r = self.rows[y]
            for x in range(x0, x1):
                p = (r[3 * x], r[3 * x + 1], r[3 * x + 2])
                counts[p] = counts.get(p, 0) + 1
        return counts


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, hdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        bpp = channels
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            for x in range(stride):
                line[x] = (line[x] + prev[x]) & 255
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                ul = prev[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + _paeth(left, prev[x], ul)) & 255
        elif f != 0:
            raise ValueError(f"{path}: bad filter {f}")
        prev = line
        if channels == 3:
            rows.append(bytes(line))
        elif channels == 4:
            rows.append(bytes(b for k in range(0, stride, 4) for b in line[k:k + 3]))
        elif channels == 1:
            rows.append(bytes(b for v in line for b in (v, v, v)))
        else:
            rows.append(bytes(b for k in range(0, stride, 2) for b in (line[k],) * 3))
    return Image(w, h, rows)


def diff(a, b):
    """(pixels that differ, largest channel difference)."""
    if (a.width, a.height) != (b.width, b.height):
        raise ValueError(f"sizes differ: {a.width}x{a.height} vs {b.width}x{b.height}")
    n, worst = 0, 0
    for ra, rb in zip(a.rows, b.rows):
        if ra == rb:
            continue
        for x in range(0, len(ra), 3):
            d = max(abs(ra[x] - rb[x]), abs(ra[x + 1] - rb[x + 1]), abs(ra[x + 2] - rb[x + 2]))
            if d:
                n += 1
                worst = max(worst, d)
    return n, worst


def block_diff(a, b, n=16):
    """The largest difference of the mean colour of an n×n block, per channel (0…255): small for
    antialiasing that differs at glyph edges, large where something else is drawn."""
    if (a.width, a.height) != (b.width, b.height):
        raise ValueError(f"sizes differ: {a.width}x{a.height} vs {b.width}x{b.height}")
    worst = 0.0
    for by in range(0, a.height, n):
        for bx in range(0, a.width, n):
            s = [0, 0, 0]
            for y in range(by, min(by + n, a.height)):
                ra, rb = a.rows[y], b.rows[y]
                if ra[3 * bx:3 * (bx + n)] == rb[3 * bx:3 * (bx + n)]:
                    continue
                for x in range(bx, min(bx + n, a.width)):
                    for c in range(3):
                        s[c] += ra[3 * x + c] - rb[3 * x + c]
            worst = max(worst, max(abs(v) for v in s) / (n * n))
    return worst


def column_runs(img, pred, y0, y1, min_count):
    """[x0, x1) runs of columns with at least min_count pixels in rows y0…y1 matching pred."""
    counts = [0] * img.width
    for y in range(y0, y1):
        r = img.rows[y]
        for x in range(img.width):
            if pred((r[3 * x], r[3 * x + 1], r[3 * x + 2])):
                counts[x] += 1
    runs, start = [], None
    for x, c in enumerate(counts + [0]):
        if c >= min_count and start is None:
            start = x
        elif c < min_count and start is not None:
            runs.append((start, x))
            start = None
    return runs


def region_diff(a, b, x0, x1, y0, y1):
    """Pixels of the region that differ by more than 64 in a channel."""
    n = 0
    for y in range(y0, y1):
        ra, rb = a.rows[y], b.rows[y]
        for x in range(x0, x1):
            if max(abs(ra[3 * x + c] - rb[3 * x + c]) for c in range(3)) > 64:
                n += 1
    return n
