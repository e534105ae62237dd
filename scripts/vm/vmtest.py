#!/usr/bin/env python3
"""Runs kioskd kernel-test scenarios in QEMU and prints one RESULT line (JSON) per scenario.

  python3 scripts/vm/vmtest.py --list
  python3 scripts/vm/vmtest.py --scenario boot-smoke [--scenario …] [--kioskd .build/debug/kioskd]
  python3 scripts/vm/vmtest.py --arch aarch64 --kioskd PATH --vmtool PATH --scenario …

Exit status 0 when every scenario passed, 1 otherwise, 2 for usage errors.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmharness  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", action="append", default=[], help="scenario name (repeatable); 'all' runs every one")
    p.add_argument("--list", action="store_true", help="list scenarios")
    p.add_argument("--kioskd", default=".build/debug/kioskd", help="kioskd binary (inside the checkout, not /tmp)")
    p.add_argument("--vmtool", default=None, help="kiosk-vmtool binary (default: next to --kioskd)")
    p.add_argument("--keep", action="store_true", help="keep vm/work/run-* directories (console, screendumps)")
    p.add_argument("--prepare", action="store_true", help="only fetch the kernel and build the initramfs")
    p.add_argument("--arch", default=os.environ.get("KIOSK_VM_ARCH", "x86_64"), choices=sorted(vmharness.ARCHES),
                   help="guest architecture (aarch64: the cached Debian 13 arm64 root, scripts/vm/arm64-root.sh)")
    p.add_argument("--deb", default=None, help="kioskd .deb for the package scenarios (sets KIOSK_DEB)")
    a = p.parse_args()
    if a.deb:
        os.environ["KIOSK_DEB"] = os.path.realpath(a.deb)

    scenarios = vmharness.load_scenarios()
    if a.list:
        for name, sc in sorted(scenarios.items()):
            print(f"{name:28} {sc.display:16} {sc.description}")
        return 0
    if a.prepare:
        t0 = time.monotonic()
        arts = vmharness.prepare(arch=a.arch)
        print(json.dumps({"arch": arts.arch, "kernel": arts.kernel_version, "vmlinux": arts.vmlinux,
                          "initramfs": arts.initramfs, "root": arts.root,
                          "prepare_s": round(time.monotonic() - t0, 2)}))
        return 0
    names = a.scenario
    if names == ["all"]:
        names = sorted(scenarios)
    if not names:
        p.error("give --scenario NAME (or --list)")
    unknown = [n for n in names if n not in scenarios]
    if unknown:
        print(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(sorted(scenarios))}", file=sys.stderr)
        return 2
    kioskd = os.path.realpath(a.kioskd)
    vmtool = os.path.realpath(a.vmtool or os.path.join(os.path.dirname(a.kioskd), "kiosk-vmtool"))
    ok = True
    t0 = time.monotonic()
    for n in names:
        try:
            res = vmharness.run_scenario(scenarios[n], kioskd, vmtool, keep=a.keep, arch=a.arch)
        except vmharness.VMError as e:
            res = {"scenario": n, "ok": False, "failures": [str(e)], "results": {}}
        res["arch"] = a.arch
        ok = ok and res["ok"]
        tail = res.pop("console_tail", None)
        if not res["ok"] and tail:
            print(f"--- console tail of {n} ---\n{tail}\n---", file=sys.stderr)
        print("RESULT " + json.dumps(res), flush=True)
    print("TOTAL " + json.dumps({"scenarios": len(names), "ok": ok, "total_s": round(time.monotonic() - t0, 2)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
