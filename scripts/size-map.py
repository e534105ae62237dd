#!/usr/bin/env python3
"""Where the bytes of a binary are: reads an lld link map (`-Xlinker -Map=FILE`) and prints the
bytes each input contributes, grouped by library (the Swift runtime's and Foundation's archives,
ICU's code and data, each SwiftPM package's modules, the C helpers), loaded sections (what a
stripped binary keeps) apart from debug information and symbol tables.

  swift build -c release --scratch-path .build-bench --product kioskd $(scripts/size-map.py --link-options .build-bench)
  scripts/size-map.py .build-bench/kioskd.map [--by module|group] [--top N]
  scripts/size-map.py .build-bench/kioskd.map --essentials-only[=fail|warn]

--link-options DIR prints the linker options that write DIR/kioskd.map and DIR/kioskd.why (lld's
--why-extract: which symbol made it take each archive member). --essentials-only fails (exit 1)
when anything of full Foundation (swift-corelibs-foundation, CoreFoundation,
FoundationInternationalization, FoundationNetworking/XML) or ICU (code or data) is loaded, naming
each such archive's loaded bytes and members and, from the .why file next to the map, the
members outside them that pulled them in and the symbol each wanted; =warn reports the same and
exits 0. Without a value: KIOSK_ESSENTIALS_ONLY from the environment, else fail (kioskd links
FoundationEssentials alone; =warn only to look at a link that does not).

BENCHMARKS.md, "Package size".
"""
import argparse
import collections
import os
import re
import subprocess
import sys

# A module's package, by name (SwiftPM builds every module into <Module>.build/).
PACKAGES = [
    (r"^(NIO|CNIO|_NIO)", "swift-nio"),
    (r"^(Hummingbird|_Hummingbird)", "hummingbird"),
    (r"^(Logging|InMemoryLogging)$", "swift-log"),
    (r"^(ArgumentParser|ArgumentParserToolInfo)$", "swift-argument-parser"),
    (r"^(ServiceLifecycle|UnixSignals|AsyncServiceGroup)$", "swift-service-lifecycle"),
    (r"^(TOMLKit|CTOML)$", "TOMLKit (+ toml++)"),
    (r"^(HTTPTypes)$", "swift-http-types"),
    (r"^(Atomics|_AtomicsShims)$", "swift-atomics"),
    (r"^(DequeModule|OrderedCollections|InternalCollectionsUtilities|HeapModule|Collections|BitCollections|HashTreeCollections|_RopeModule)$", "swift-collections"),
    (r"^(AsyncAlgorithms|_CAsyncSequenceValidationSupport)$", "swift-async-algorithms"),
    (r"^(Tracing|Instrumentation)$", "swift-distributed-tracing"),
    (r"^(ServiceContextModule)$", "swift-service-context"),
    (r"^(Metrics|CoreMetrics)$", "swift-metrics"),
    (r"^(SystemPackage|CSystem)$", "swift-system"),
    (r"^(Kiosk|kiosk|CKiosk)", "kioskd's own modules"),
]
# The toolchain's archives, by name.
ARCHIVES = {
    "lib_FoundationICU.a": "ICU code (swift-foundation-icu)",
    "libFoundation.a": "Foundation (swift-corelibs-foundation)",
    "libCoreFoundation.a": "Foundation (swift-corelibs-foundation)",
    "libFoundationInternationalization.a": "FoundationInternationalization",
    "libFoundationEssentials.a": "FoundationEssentials",
    "lib_FoundationCollections.a": "FoundationEssentials",
    "lib_FoundationCShims.a": "FoundationEssentials",
    "libswiftCore.a": "Swift runtime and stdlib",
    "libswift_Concurrency.a": "Swift runtime and stdlib",
    "libswift_StringProcessing.a": "Swift runtime and stdlib",
    "libswift_RegexParser.a": "Swift runtime and stdlib",
    "libswiftSynchronization.a": "Swift runtime and stdlib",
    "libswiftGlibc.a": "Swift runtime and stdlib",
    "libFoundationNetworking.a": "Foundation (swift-corelibs-foundation)",
    "libFoundationXML.a": "Foundation (swift-corelibs-foundation)",
    "lib_CFURLSessionInterface.a": "Foundation (swift-corelibs-foundation)",
    "lib_CFXMLInterface.a": "Foundation (swift-corelibs-foundation)",
    "libswiftDispatch.a": "Dispatch",
    "libdispatch.a": "Dispatch",
    "libBlocksRuntime.a": "Dispatch",
}


# What a binary that links FoundationEssentials alone must not load: the groups above of full
# Foundation and of ICU (its code, and its data: the toolchain's or scripts/icu-data.py's).
NOT_ESSENTIALS = {"Foundation (swift-corelibs-foundation)", "FoundationInternationalization",
                  "ICU code (swift-foundation-icu)", "ICU data"}


def group_of(path, section=None):
    name = os.path.basename(path.split("(")[0])
    if re.match(r"^libkioskd_icudt\d+\.a$", name):  # scripts/icu-data.py's archive
        return "ICU data"
    if "(" in path:  # archive(member)
        if name in ARCHIVES:
            member = path.split("(", 1)[1]
            if name == "lib_FoundationICU.a" and member.startswith("icu_packaged_data"):
                return "ICU data"
            return ARCHIVES[name]
        return name
    m = re.search(r"/([^/]+)\.build/", path)
    if m:
        module = m.group(1)
        for pattern, package in PACKAGES:
            if re.search(pattern, module):
                return package
        return module
    if path.startswith("<internal>") or path == "<internal>":
        return "linker (headers, dynamic tables, relocations)"
    if "icudt" in name:
        return "ICU data"
    return "C runtime and other objects"


def module_of(path):
    m = re.search(r"/([^/]+)\.build/", path)
    if m:
        return m.group(1)
    return os.path.basename(path.split("(")[0]) + ("(" + path.split("(", 1)[1] if "(" in path else "")


def read_map(path, key_of):
    """(loaded, debug): bytes by key_of(input path) of the map's loaded and other sections."""
    loaded = collections.Counter()
    debug = collections.Counter()
    out_loaded = False
    # VMA, LMA, size, alignment, then the name indented by level: an output section (0 spaces),
    # an input section (8), a symbol (16).
    row = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ ( *)(\S.*)$")
    with open(path, errors="replace") as f:
        lines = f.read().splitlines()
    for line in lines:
        m = row.match(line)
        if not m:
            continue
        vma, size, level, rest = int(m.group(1), 16), int(m.group(2), 16), len(m.group(3)), m.group(4)
        if level == 0:
            out_loaded = vma != 0 and rest not in (".bss", ".tbss")
            continue
        if level != 8 or ":(" not in rest:
            continue
        (loaded if out_loaded else debug)[key_of(rest.rsplit(":(", 1)[0])] += size
    return loaded, debug


def demangle(symbols):
    """Swift symbols demangled (swift-demangle, when on PATH), others as they are."""
    try:
        out = subprocess.run(["swift-demangle", "--simplified"], input="\n".join(symbols), capture_output=True,
                             text=True, check=True).stdout.splitlines()
        if len(out) == len(symbols):
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return list(symbols)


def essentials_only(map_path, why_path, mode):
    """The --essentials-only check: 0 when nothing of full Foundation or ICU is loaded."""
    members, _ = read_map(map_path, lambda p: p)
    bad = collections.defaultdict(collections.Counter)  # group -> input -> loaded bytes
    for inp, n in members.items():
        g = group_of(inp)
        if g in NOT_ESSENTIALS and n > 0:
            bad[g][inp] += n
    if not bad:
        print("size-map.py: the binary loads FoundationEssentials alone: nothing of full Foundation or ICU is linked")
        return 0
    print("size-map.py: the binary links full Foundation or ICU, not FoundationEssentials alone:")
    for g, inputs in sorted(bad.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {g}: {sum(inputs.values()):,} bytes loaded from {len(inputs)} inputs, the largest:")
        for inp, n in inputs.most_common(8):
            print(f"    {n:>12,}  {inp}")
    # Where the chain starts: a member of these archives that an input outside them asked for.
    entries = []
    if why_path and os.path.exists(why_path):
        with open(why_path, errors="replace") as f:
            rows = f.read().splitlines()
        for line in rows:
            parts = line.split("\t")
            if len(parts) != 3 or parts[0] == "reference":
                continue
            ref, got, sym = parts
            if group_of(got) in NOT_ESSENTIALS and group_of(ref) not in NOT_ESSENTIALS:
                entries.append((ref, got, sym))
    if entries:
        print(f"  pulled in by ({len(entries)} references from outside them; lld --why-extract, {why_path}):")
        for (ref, got, sym), plain in zip(entries[:12], demangle([e[2] for e in entries[:12]])):
            print(f"    {ref}\n      -> {got}\n         for {sym}" + (f"\n         ({plain})" if plain != sym else ""))
        if len(entries) > 12:
            print(f"    … and {len(entries) - 12} more in {why_path}")
    else:
        print(f"  (no --why-extract file {why_path}: link with the options of --link-options to see what pulled them in)")
    if mode == "warn":
        print("size-map.py: WARNING only (--essentials-only=warn, KIOSK_ESSENTIALS_ONLY): not failing")
        return 0
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("map", nargs="?")
    ap.add_argument("--by", choices=["group", "module"], default="group")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--link-options", metavar="DIR", help="print the linker options that write DIR/kioskd.map and DIR/kioskd.why")
    ap.add_argument("--essentials-only", nargs="?", choices=["fail", "warn"], metavar="fail|warn",
                    const=os.environ.get("KIOSK_ESSENTIALS_ONLY", "fail"),
                    help="fail (or warn) when full Foundation or ICU is loaded")
    ap.add_argument("--why", help="lld's --why-extract file (default: the map's name with .why)")
    args = ap.parse_args()
    if args.link_options:
        d = os.path.abspath(args.link_options)
        print(f"-Xlinker -Map={d}/kioskd.map -Xlinker --why-extract={d}/kioskd.why")
        return 0
    if not args.map:
        ap.error("a link map is needed")
    loaded, debug = read_map(args.map, group_of if args.by == "group" else module_of)
    total = sum(loaded.values())
    print(f"{'loaded bytes':>14} {'share':>6}  {args.by}")
    for key, n in loaded.most_common(args.top):
        print(f"{n:>14,} {100 * n / total:5.1f}%  {key}")
    print(f"{total:>14,} 100.0%  total loaded (a stripped binary is about this)")
    print(f"{sum(debug.values()):>14,}         debug information, symbol tables and .comment (stripped)")
    if args.essentials_only:
        return essentials_only(args.map, args.why or os.path.splitext(args.map)[0] + ".why", args.essentials_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
