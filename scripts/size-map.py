#!/usr/bin/env python3
"""Where the bytes of a binary are: reads an lld link map (`-Xlinker -Map=FILE`) and prints the
bytes each input contributes, grouped by library (the Swift runtime's and Foundation's archives,
ICU's code and data, each SwiftPM package's modules, the C helpers), loaded sections (what a
stripped binary keeps) apart from debug information and symbol tables.

  swift build -c release --scratch-path .build-bench --product kioskd -Xlinker -Map=/tmp/kioskd.map
  scripts/size-map.py /tmp/kioskd.map [--by module|group] [--top N]

BENCHMARKS.md, "Package size".
"""
import argparse
import collections
import os
import re

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
    "libswiftDispatch.a": "Dispatch",
    "libdispatch.a": "Dispatch",
    "libBlocksRuntime.a": "Dispatch",
}


def group_of(path, section):
    name = os.path.basename(path.split("(")[0])
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("map")
    ap.add_argument("--by", choices=["group", "module"], default="group")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    loaded = collections.Counter()
    debug = collections.Counter()
    out_loaded = False
    # VMA, LMA, size, alignment, then the name indented by level: an output section (0 spaces),
    # an input section (8), a symbol (16).
    row = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+ ( *)(\S.*)$")
    for line in open(args.map, errors="replace"):
        m = row.match(line.rstrip("\n"))
        if not m:
            continue
        vma, size, level, rest = int(m.group(1), 16), int(m.group(2), 16), len(m.group(3)), m.group(4)
        if level == 0:
            out_loaded = vma != 0 and rest not in (".bss", ".tbss")
            continue
        if level != 8 or ":(" not in rest:
            continue
        path, section = rest.rsplit(":(", 1)
        section = section.rstrip(")")
        key = group_of(path, section) if args.by == "group" else module_of(path)
        (loaded if out_loaded else debug)[key] += size
    total = sum(loaded.values())
    print(f"{'loaded bytes':>14} {'share':>6}  {args.by}")
    for key, n in loaded.most_common(args.top):
        print(f"{n:>14,} {100 * n / total:5.1f}%  {key}")
    print(f"{total:>14,} 100.0%  total loaded (a stripped binary is about this)")
    print(f"{sum(debug.values()):>14,}         debug information, symbol tables and .comment (stripped)")


if __name__ == "__main__":
    main()
