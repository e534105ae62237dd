#!/usr/bin/env python3
"""Turns a tree of extracted arm64 packages into a sysroot (and a qemu-user root).

usage: fix-sysroot.py ROOT SWIFT_TREE

- /bin, /sbin, /lib become links into /usr (merged-/usr, as an installed Debian 13 has them);
- the Swift runtime from SWIFT_TREE (sid's swiftlang:arm64, extracted) is moved to
  usr/lib/swift, usr/lib/swift_static and usr/lib/clang, where the 6.2 driver looks for it
  with --sdk ROOT;
- absolute symbolic links are made relative, so they resolve inside ROOT;
- fails if a library kioskd needs is missing or its link dangles (other dangling links, such as
  libdrm_intel.so without libdrm-intel1 on arm64, are listed).
"""
import os
import shutil
import sys


def merge_usr(root):
    for name in ("bin", "sbin", "lib", "lib64"):
        top = os.path.join(root, name)
        usr = os.path.join(root, "usr", name)
        if os.path.isdir(top) and not os.path.islink(top):
            os.makedirs(usr, exist_ok=True)
            for entry in os.listdir(top):
                src, dst = os.path.join(top, entry), os.path.join(usr, entry)
                if os.path.lexists(dst):
                    if os.path.isdir(src) and not os.path.islink(src):
                        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
                        shutil.rmtree(src)
                        continue
                    os.remove(dst)
                os.rename(src, dst)
            os.rmdir(top)
        if not os.path.lexists(top) and (os.path.isdir(usr) or name != "lib64"):
            os.makedirs(usr, exist_ok=True)
            os.symlink(os.path.join("usr", name), top)


def move_swift(root, swift_tree):
    src_lib = os.path.join(swift_tree, "usr", "libexec", "swift", "lib")
    for name in ("swift", "swift_static", "clang"):
        src = os.path.join(src_lib, name)
        dst = os.path.join(root, "usr", "lib", name)
        if not os.path.isdir(src):
            raise SystemExit(f"fix-sysroot: {src} missing (layout of swiftlang:arm64 changed?)")
        if os.path.lexists(dst):
            raise SystemExit(f"fix-sysroot: {dst} exists already")
        shutil.move(src, dst)
    rt = os.path.join(root, "usr/lib/swift_static/linux/static-stdlib-args.lnk")
    if not os.path.exists(rt):
        raise SystemExit(f"fix-sysroot: {rt} missing")


def relativize(root):
    fixed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                continue
            target = os.readlink(path)
            if not target.startswith("/"):
                continue
            new = os.path.relpath(os.path.join(root, target.lstrip("/")), dirpath)
            os.remove(path)
            os.symlink(new, path)
            fixed += 1
    return fixed


def dangling_libs(root):
    bad = []
    for base in ("usr/lib", "usr/lib/aarch64-linux-gnu"):
        d = os.path.join(root, base)
        for name in os.listdir(d):
            p = os.path.join(d, name)
            if os.path.islink(p) and ".so" in name and not os.path.exists(p):
                bad.append(f"{base}/{name} -> {os.readlink(p)}")
    return bad


REQUIRED = ["usr/lib/ld-linux-aarch64.so.1"] + [f"usr/lib/aarch64-linux-gnu/{n}" for n in (
    "libc.so.6", "libc.so", "libm.so", "libstdc++.so.6", "libgcc_s.so.1", "libcairo.so", "libpango-1.0.so",
    "libpangocairo-1.0.so", "libdrm.so", "libinput.so", "libudev.so", "libsystemd.so", "libmosquitto.so.1",
    "libqrencode.so.4", "libcrypto.so.3", "libfontconfig.so.1")] + [
    "usr/lib/swift_static/linux/static-stdlib-args.lnk", "usr/lib/swift_static/linux/aarch64/swiftrt.o",
    "usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "etc/fonts/fonts.conf", "usr/share/zoneinfo/Europe/Berlin"]


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    root, swift_tree = sys.argv[1], sys.argv[2]
    merge_usr(root)
    move_swift(root, swift_tree)
    n = relativize(root)
    bad = dangling_libs(root)
    if bad:
        print("fix-sysroot: dangling library links (not needed):\n  " + "\n  ".join(bad))
    missing = [p for p in REQUIRED if not os.path.exists(os.path.join(root, p))]
    if missing:
        raise SystemExit("fix-sysroot: missing in the sysroot:\n  " + "\n  ".join(missing))
    print(f"fix-sysroot: {n} absolute links made relative")


if __name__ == "__main__":
    main()
