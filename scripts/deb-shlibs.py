#!/usr/bin/env python3
"""Prints the Depends for ELF binaries of another architecture, where dpkg-shlibdeps cannot look:
each NEEDED library's package, and the version from that package's symbols file (the highest
minimum version among the symbols the binaries use, as dpkg-shlibdeps computes it) or else its
shlibs line. The packages come from a Debian root's dpkg database (info/*.list, *.symbols,
*.shlibs) or from a directory of .deb files (their file lists and control members).

  deb-shlibs.py --root SYSROOT --arch arm64 --triplet aarch64-linux-gnu BINARY...
  deb-shlibs.py --debs DIR --arch arm64 --triplet aarch64-linux-gnu BINARY...
"""
import argparse
import functools
import glob
import os
import re
import subprocess
import sys
import tempfile


def readelf(args, path):
    return subprocess.run(["readelf", "-W", *args, path], check=True, capture_output=True, text=True).stdout


def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", readelf(["-d"], path))


def undefined_symbols(path):
    """Undefined dynamic symbols as name@version ("Base" when unversioned)."""
    syms = set()
    for line in readelf(["--dyn-syms"], path).splitlines():
        f = line.split()
        if len(f) >= 8 and f[6] == "UND" and f[7]:
            name = re.sub(r"\s*\(\d+\)$", "", f[7])
            name, _, ver = name.partition("@")
            syms.add((name, ver.lstrip("@") or "Base"))
    return syms


@functools.lru_cache(maxsize=None)
def version_gt(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


class Database:
    def __init__(self, arch, triplet, root=None, debs=None, scratch=None):
        self.arch = arch
        self.dirs = {f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib"}
        self.owner = {}
        if root:
            self.info = os.path.join(root, "var/lib/dpkg/info")
            if not os.path.isdir(self.info):
                sys.exit(f"deb-shlibs: no dpkg database at {self.info}")
            for lst in glob.glob(os.path.join(self.info, "*.list")):
                pkg = os.path.basename(lst)[:-5]
                with open(lst, errors="replace") as f:
                    self.add_files(pkg, (line.rstrip("\n") for line in f))
        else:
            # An info directory made from the packages' control members.
            self.info = scratch
            for deb in sorted(glob.glob(os.path.join(debs, "*.deb"))):
                pkg = subprocess.run(["dpkg-deb", "-f", deb, "Package"], check=True, capture_output=True, text=True).stdout.strip()
                listing = subprocess.run(["dpkg-deb", "-c", deb], check=True, capture_output=True, text=True).stdout
                # "./usr/lib/x/libfoo.so.1 -> libfoo.so.1.2.3": the path is the sixth field.
                self.add_files(pkg, (l.split(None, 5)[5].split(" -> ")[0].lstrip(".") for l in listing.splitlines() if len(l.split(None, 5)) == 6))
                ctl = os.path.join(scratch, pkg + ".ctl")
                os.makedirs(ctl, exist_ok=True)
                subprocess.run(["dpkg-deb", "-e", deb, ctl], check=True)
                for kind in ("symbols", "shlibs"):
                    if os.path.exists(os.path.join(ctl, kind)):
                        os.replace(os.path.join(ctl, kind), os.path.join(scratch, f"{pkg}.{kind}"))

    def add_files(self, pkg, paths):
        for path in paths:
            d, _, name = path.rstrip("/").rpartition("/")
            if d in self.dirs and ".so" in name:
                self.owner.setdefault(name, pkg)

    def control_file(self, pkg, kind):
        for p in (f"{pkg}.{kind}", f"{pkg.split(':')[0]}:{self.arch}.{kind}", f"{pkg.split(':')[0]}.{kind}"):
            path = os.path.join(self.info, p)
            if os.path.exists(path):
                return path
        return None

    def from_symbols(self, pkg, soname, used):
        path = self.control_file(pkg, "symbols")
        if not path:
            return None
        # As dpkg-shlibdeps: at least the smallest version listed for the library, raised by
        # each symbol the binaries use.
        template, minver, smallest, inside = None, None, None, False
        with open(path) as f:
            for line in f:
                if not line.startswith((" ", "\t", "|", "*")):
                    inside = line.split()[0] == soname if line.strip() else False
                    if inside:
                        template = line.split(None, 1)[1].strip()
                    continue
                if not inside or not line.startswith((" ", "\t")):
                    continue
                spec = line.strip()
                tags = re.match(r"^\((.*?)\)", spec)
                tagset = tags.group(1).split("|") if tags else []
                if tags:
                    spec = spec[tags.end():]
                parts = spec.split()
                if len(parts) < 2:
                    continue
                sym, ver = parts[0], parts[1]
                if any(t.startswith("arch=") for t in tagset) and not arch_matches(tagset, self.arch):
                    continue
                if smallest is None or version_gt(smallest, ver):
                    smallest = ver
                if "symver" in tagset:
                    hit = any(v == sym for _, v in used)
                else:
                    name, _, symver = sym.partition("@")
                    hit = (name, symver) in used
                if hit and (minver is None or version_gt(ver, minver)):
                    minver = ver
        if template is None:
            return None
        if smallest is not None and (minver is None or version_gt(smallest, minver)):
            minver = smallest
        dep = template.replace("#MINVER#", f"(>= {minver})" if minver and minver != "0" else "").strip()
        return re.sub(r"\s+", " ", dep)

    def from_shlibs(self, pkg, soname):
        path = self.control_file(pkg, "shlibs")
        if not path:
            return None
        m = re.match(r"^(.*)\.so\.(.+)$", soname) or re.match(r"^(.*?)-([0-9.]+)\.so$", soname)
        if not m:
            return None
        with open(path) as f:
            for line in f:
                f3 = line.split(None, 2)
                if len(f3) == 3 and not f3[0].endswith(":") and f3[0] == m.group(1) and f3[1] == m.group(2):
                    return f3[2].strip()
        return None


def arch_matches(tags, arch):
    for t in tags:
        if t.startswith("arch="):
            names = t[5:].split()
            if any(n.startswith("!") for n in names):
                return f"!{arch}" not in names
            return arch in names
    return True


def main():
    ap = argparse.ArgumentParser()
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--root", help="a Debian root with its dpkg database")
    src.add_argument("--debs", help="a directory of .deb files")
    ap.add_argument("--arch", required=True)
    ap.add_argument("--triplet", required=True)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        run(a, Database(a.arch, a.triplet, root=a.root, debs=a.debs, scratch=scratch))


def run(a, db):
    used = set()
    sonames = []
    for b in a.binaries:
        used |= undefined_symbols(b)
        sonames += [s for s in needed(b) if s not in sonames]
    deps = {}
    missing = []
    for so in sonames:
        pkg = db.owner.get(so)
        dep = pkg and (db.from_symbols(pkg, so, used) or db.from_shlibs(pkg, so))
        if not dep:
            missing.append(f"{so} (package {pkg or 'not found'})")
            continue
        name = dep.split()[0]
        # One entry a package, the highest version (as dpkg-shlibdeps merges them).
        old = deps.get(name)
        if old is None or ver_of(dep) and (not ver_of(old) or version_gt(ver_of(dep), ver_of(old))):
            deps[name] = dep
    if missing:
        sys.exit("deb-shlibs: no dependency information for " + ", ".join(missing))
    print(", ".join(deps[k] for k in sorted(deps)))


def ver_of(dep):
    m = re.search(r"\(>= (.+?)\)", dep)
    return m.group(1) if m else None


if __name__ == "__main__":
    main()
