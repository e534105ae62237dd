#!/usr/bin/env python3
"""Makes a smaller ICU data object for kioskd's static link: the toolchain's built-in ICU data
(the symbol icudtNN_dat in lib_FoundationICU.a, 34 MB for ICU 76, every locale, collation,
dictionary and converter) with only what kioskd can reach kept: the core property and
normalization files, the root and English locales (each data tree's root, en*, pool and index),
the time zone rules and names (zoneinfo64, metaZones, timezoneTypes), the supplemental tables,
and the break rules without their dictionaries. Dropped: the other locales, the legacy-charset
converters (*.cnv; UTF-8, Latin-1 and ASCII are CoreFoundation's own), transliteration, the
CJK/Thai/Khmer/Burmese/Lao word dictionaries. The object defines icudtNN_dat itself and is the
one member of an archive, libkioskd_icudtNN.a, which Package.swift names (KIOSKD_ICU_DATA) before
the toolchain's libraries in kioskd's release link: lld takes icudtNN_dat from the first archive
that offers it, so ICU reads this data and the toolchain's member is never taken; a link that
references no ICU (kioskd with FoundationEssentials alone) takes nothing from the archive, so
the step costs nothing there (BENCHMARKS.md, "Package size").

  icu-data.py [--archive LIB_FoundationICU.a] [--out DIR] [--target TRIPLE] [--clang CLANG]

Writes DIR/icudtNN_kioskd.dat, DIR/icudtNN_kioskd.o (assembled by clang for TRIPLE),
DIR/libkioskd_icudtNN.a (that object) and DIR/items.txt (size and name of every item, kept or
dropped); prints the archive's absolute path, for KIOSKD_ICU_DATA:
  icu=$(python3 scripts/icu-data.py) && KIOSKD_ICU_DATA=$icu swift build -c release --product kioskd
"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

# Items of the top-level tree and of each sub-tree (coll/, zone/, brkitr/ …) that are locales:
# a 2–3 letter language, optionally with script, region and variant.
LOCALE = re.compile(r"^[a-z]{2,3}(_[A-Za-z0-9]+)*\.res$")
# Whole sub-trees kioskd never reaches (String.applyingTransform, RBNF spell-out).
DROPPED_TREES = {"translit", "rbnf"}


def keep(name):
    """Whether an item (name without the icudtNNl/ prefix) stays."""
    parts = name.split("/")
    if len(parts) > 1 and parts[0] in DROPPED_TREES:
        return False
    base = parts[-1]
    if base.endswith(".cnv"):
        return False
    if base.endswith(".dict"):
        return False
    if LOCALE.match(base):
        return base == "en.res" or base.startswith("en_")
    return True


def read_common_data(blob):
    """(header bytes, [(name, bytes)]) of an ICU common data package (offset TOC format)."""
    header_size, magic1, magic2 = struct.unpack_from("<HBB", blob, 0)
    if (magic1, magic2) != (0xDA, 0x27):
        raise SystemExit("icu-data.py: the data does not start with ICU's magic number")
    toc = header_size
    (count,) = struct.unpack_from("<I", blob, toc)
    entries = []
    for i in range(count):
        name_offset, data_offset = struct.unpack_from("<II", blob, toc + 4 + 8 * i)
        end = blob.index(b"\0", toc + name_offset)
        entries.append((blob[toc + name_offset:end].decode(), toc + data_offset))
    items = []
    for i, (name, start) in enumerate(entries):
        stop = entries[i + 1][1] if i + 1 < count else len(blob)
        items.append((name, blob[start:stop]))
    return blob[:header_size], items


def write_common_data(header, items):
    """The package of `items` (sorted by name, as ICU's binary search needs), each 16-byte aligned."""
    items = sorted(items, key=lambda it: it[0].encode())
    names = b"".join(n.encode() + b"\0" for n, _ in items)
    toc_size = 4 + 8 * len(items)
    data_start = (toc_size + len(names) + 15) & ~15
    out = bytearray(struct.pack("<I", len(items)))
    name_offsets, data_offsets = [], []
    pos = toc_size
    for n, _ in items:
        name_offsets.append(pos)
        pos += len(n.encode()) + 1
    pos = data_start
    body = bytearray()
    for _, data in items:
        data_offsets.append(pos)
        body += data
        pad = (-len(data)) % 16
        body += b"\0" * pad
        pos += len(data) + pad
    for no, do in zip(name_offsets, data_offsets):
        out += struct.pack("<II", no, do)
    out += names
    out += b"\0" * (data_start - len(out))
    return bytes(header) + bytes(out) + bytes(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--archive", help="lib_FoundationICU.a of the target's static Swift runtime "
                    "(default: the one of the swift on PATH)")
    ap.add_argument("--out", default=".build-bench/icu-data", help="output directory (default: .build-bench/icu-data)")
    ap.add_argument("--target", default=None, help="clang target triple (default: the host)")
    ap.add_argument("--clang", default="clang")
    args = ap.parse_args()
    if args.archive is None:
        swift = shutil.which("swift")
        if swift is None:
            raise SystemExit("icu-data.py: no swift on PATH (give --archive)")
        args.archive = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift_static", "linux", "lib_FoundationICU.a")
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        members = subprocess.run(["ar", "t", args.archive], check=True, capture_output=True, text=True).stdout.split()
        member = next((m for m in members if m.startswith("icu_packaged_data")), None)
        if member is None:
            raise SystemExit(f"icu-data.py: no icu_packaged_data member in {args.archive}")
        obj = os.path.join(tmp, member)
        with open(obj, "wb") as f:
            f.write(subprocess.run(["ar", "p", args.archive, member], check=True, capture_output=True).stdout)
        syms = subprocess.run(["nm", "-S", obj], check=True, capture_output=True, text=True).stdout
        m = re.search(r"\s(icudt\d+_dat)$", syms, re.M)
        if m is None:
            raise SystemExit(f"icu-data.py: no icudtNN_dat symbol in {member}")
        symbol = m.group(1)
        raw = os.path.join(tmp, "full.dat")
        subprocess.run(["llvm-objcopy", "-O", "binary", "--only-section=.rodata", obj, raw], check=True)
        with open(raw, "rb") as f:
            blob = f.read()
    header, items = read_common_data(blob)
    prefix = items[0][0].split("/")[0] + "/"
    kept = [(n, d) for n, d in items if keep(n[len(prefix):])]
    with open(os.path.join(args.out, "items.txt"), "w") as f:
        for n, d in items:
            f.write(f"{'keep' if keep(n[len(prefix):]) else 'drop'} {len(d)} {n}\n")
    small = write_common_data(header, kept)
    # The result must read back as the same items.
    if read_common_data(small)[1] != sorted(kept, key=lambda it: it[0].encode()):
        raise SystemExit("icu-data.py: the written package does not read back")
    stem = symbol.removesuffix("_dat") + "_kioskd"
    dat = os.path.join(args.out, stem + ".dat")
    with open(dat, "wb") as f:
        f.write(small)
    asm = os.path.join(args.out, stem + ".S")
    with open(asm, "w") as f:
        f.write(f"""    .section .rodata.kioskd_icu_data,"a"
    .balign 16
    .globl {symbol}
    .type {symbol}, %object
{symbol}:
    .incbin "{os.path.abspath(dat)}"
    .size {symbol}, {len(small)}
    .section .note.GNU-stack,"",%progbits
""")
    out_obj = os.path.join(args.out, stem + ".o")
    cmd = [args.clang, "-c", asm, "-o", out_obj]
    if args.target:
        cmd[1:1] = ["--target=" + args.target]
    subprocess.run(cmd, check=True)
    lib = os.path.join(args.out, f"libkioskd_{symbol.removesuffix('_dat')}.a")
    if os.path.exists(lib):
        os.remove(lib)
    # llvm-ar beside the clang used (it writes the symbol index lld needs for any target).
    ar = os.path.join(os.path.dirname(shutil.which(args.clang) or args.clang), "llvm-ar")
    subprocess.run([ar if os.path.exists(ar) else "llvm-ar", "rcsD", lib, out_obj], check=True)
    print(f"icu-data.py: {symbol} {len(blob)} → {len(small)} bytes ({len(kept)} of {len(items)} items)", file=sys.stderr)
    print(os.path.abspath(lib))


if __name__ == "__main__":
    main()
