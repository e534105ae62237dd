"""Host side of kioskd's kernel tests: boots Debian's kernel in QEMU (TCG) with the host's root
shared read-only over 9p, runs a guest shell script, and lets a host-side check take turns with
it (console markers guest -> host, a second serial port host -> guest, QMP for screendumps,
input events and device hotplug).

Two guest architectures: x86_64 (default: q35, the host's own root) and aarch64 (`virt`, a
Debian 13 arm64 root built by arm64-root.sh and cached, with the checkout exported as a second
9p share at its own path; the host's answers go over a virtio-serial port).

A scenario is a guest script (bash, runs chrooted into the host root inside the VM) plus a
host-side check function. Register scenarios with the `scenario` decorator from any
`scripts/vm/scenarios*.py` file; `vmtest.py` imports them all. See README.md.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib.util
import json
import lzma
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

REPO = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WORK = os.path.join(REPO, "vm", "work")

# Modules loaded in the guest (dependencies are added from modules.dep).
GUEST_MODULES = [
    "virtio_pci", "9pnet_virtio", "9p", "drm", "drm_kms_helper", "bochs", "virtio-gpu",
    "evdev", "uinput", "virtio_input", "xhci-pci", "usbhid", "hid-generic",
    # A state disk (virtio-blk, ext4; crc32c for metadata checksums) and virtio-serial ports.
    "virtio_blk", "ext4", "crc32c_generic", "virtio_console",
    "overlay",  # boot hooks that put a writable layer over the host root (systemd as PID 1)
]

# On a heavily loaded host the emulated guest can miss the kernel's IO-APIC timer check and
# panic ("IO-APIC + timer doesn't work!") before /init: every boot skips the check (the kernel
# command line below); the constant stays for scenarios that name it.
NO_TIMER_CHECK = "no_timer_check"

MARKER_RE = re.compile(r"@@KIOSK:([A-Za-z0-9_.-]+):(.*?)@@")

# Several heads on one virtio-gpu (`heads=N` in a scenario): the display device gets
# `max_outputs=N` and this id (QMP `screendump` names it with `head`). With `-display none` QEMU
# reports every head but the first disconnected; the kernel's `video=Virtual-K:1280x800e` (the `e`
# forces the connector on) makes Virtual-2 … Virtual-N usable, and the console runs there at that
# mode. `edid=off`: with QEMU's EDID (7.2) a head after the first gets no preferred mode (its
# first, 5120x2160@50, is what a client picks: frames of 44 MB under TCG) and the console runs at
# 5120x2160 there (the mode in `video=` is ignored); without EDID every head has a preferred mode,
# the first the display's 1280x800@60, the others the kernel's 1024x768@60 (seen with kernel 6.1).
DISPLAY_ID = "video0"
FORCED_HEAD_MODE = "1280x800"


def display_device(display: str, heads: int = 1) -> str:
    """The QEMU -device value for a scenario's display: as named for one head; for several, a
    virtio-gpu with `max_outputs`, the id DISPLAY_ID and no EDID."""
    if heads == 1:
        return display
    if not display.startswith("virtio-gpu"):
        raise VMError(f"{heads} heads need a virtio-gpu display, not {display!r}")
    return f"{display},max_outputs={heads},id={DISPLAY_ID},edid=off"


def heads_kernel_args(heads: int = 1) -> str:
    """Kernel arguments forcing the heads after the first on (empty for one head)."""
    return " ".join(f"video=Virtual-{k}:{FORCED_HEAD_MODE}e" for k in range(2, heads + 1))


def log(msg: str) -> None:
    print(f"[vm {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class VMError(Exception):
    """A harness failure: boot, timeout, QMP error, or a failed check."""


# ---------------------------------------------------------------------------------------------
# Kernel and initramfs (cached under vm/work/)
# ---------------------------------------------------------------------------------------------

def _norm(name: str) -> str:
    return name.replace("-", "_")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise VMError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


@dataclass(frozen=True)
class Arch:
    """What differs between the guest architectures."""
    name: str
    qemu: list[str]          # QEMU binary and machine
    console: str             # the kernel console (serial port logged to console.log)
    kernel_args: str         # always on the kernel command line
    ctl_serial: bool         # host answers on a second serial port (else a virtio-serial port)


ARCHES = {
    # no_timer_check: on a loaded host the emulated guest can miss the IO-APIC timer check.
    "x86_64": Arch("x86_64", ["qemu-system-x86_64", "-machine", "q35"], "ttyS0", "no_timer_check", True),
    # `virt` has one PL011 UART; cortex-a72 is quicker under TCG than `max` (no pointer
    # authentication to emulate). KIOSK_VM_CPU overrides it.
    "aarch64": Arch("aarch64", ["qemu-system-aarch64", "-machine", "virt",
                                "-cpu", os.environ.get("KIOSK_VM_CPU", "cortex-a72")], "ttyAMA0", "", False),
}
# The virtio-serial port the aarch64 guest reads the host's answers from (guest/lib/common.sh).
CTL_PORT = "kiosk.ctl"
ARM64_ROOT_SCRIPT = os.path.join(REPO, "scripts", "vm", "arm64-root.sh")


def arch_of(name: str) -> Arch:
    if name not in ARCHES:
        raise VMError(f"unknown arch {name!r} (known: {', '.join(ARCHES)})")
    return ARCHES[name]


def arm64_root() -> str:
    """The cached Debian 13 arm64 root (built by arm64-root.sh when missing)."""
    r = subprocess.run([ARM64_ROOT_SCRIPT], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise VMError(f"{ARM64_ROOT_SCRIPT} failed ({r.returncode})")
    return r.stdout.strip().splitlines()[-1]


def kernel_package_name() -> str:
    """The versioned kernel package linux-image-amd64 depends on (apt-cache depends)."""
    out = _run(["apt-cache", "depends", "linux-image-amd64"]).stdout
    m = re.search(r"Depends:\s*(linux-image-[0-9][^\s]*-amd64)", out)
    if not m:
        raise VMError(f"apt-cache depends linux-image-amd64 named no versioned kernel:\n{out}")
    return m.group(1)


def extract_vmlinux(vmlinuz: str, out: str) -> None:
    """Decompresses the xz payload of a bzImage (magic FD 37 7A 58 5A 00) into an ELF vmlinux."""
    data = open(vmlinuz, "rb").read()
    magic = b"\xfd7zXZ\x00"
    pos = data.find(magic)
    while pos >= 0:
        try:
            d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            elf = d.decompress(data[pos:])
            if elf[:4] == b"\x7fELF":
                tmp = out + ".tmp"
                with open(tmp, "wb") as f:
                    f.write(elf)
                os.replace(tmp, out)
                return
        except lzma.LZMAError:
            pass
        pos = data.find(magic, pos + 1)
    raise VMError(f"no xz-compressed ELF found in {vmlinuz}")


def _module_closure(moddir: str, wanted: list[str]) -> list[str]:
    """Relative module paths for `wanted` and their dependencies, dependencies first."""
    deps: dict[str, list[str]] = {}
    byname: dict[str, str] = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            if ":" not in line:
                continue
            mod, rest = line.split(":", 1)
            mod = mod.strip()
            deps[mod] = rest.split()
            base = os.path.basename(mod).split(".ko")[0]
            byname[_norm(base)] = mod
    builtin = set()
    bpath = os.path.join(moddir, "modules.builtin")
    if os.path.exists(bpath):
        for line in open(bpath):
            builtin.add(_norm(os.path.basename(line.strip()).split(".ko")[0]))
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        for d in deps.get(path, []):
            visit(d)
        order.append(path)

    for name in wanted:
        n = _norm(name)
        if n in byname:
            visit(byname[n])
        elif n not in builtin:
            raise VMError(f"kernel module {name} is neither in modules.dep nor built in")
    return order


GUEST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guest")


def guest_file(name: str) -> str:
    """The text of a guest shell file (scripts/vm/guest/NAME)."""
    with open(os.path.join(GUEST_DIR, name)) as f:
        return f.read()


INIT_SCRIPT = guest_file("init.sh")  # the initramfs /init (busybox sh)


@dataclass
class Artifacts:
    kernel_version: str
    vmlinux: str                 # the kernel QEMU boots (x86: the extracted ELF; aarch64: the Image)
    initramfs: str
    arch: str = "x86_64"
    root: str = "/"              # the root file system exported to the guest over 9p


def prepare(work: str = WORK, arch: str = "x86_64") -> Artifacts:
    """Fetches and unpacks the kernel, builds vmlinux and the initramfs; cached in `work`.
    aarch64: the arm64 root first (arm64-root.sh, cached), whose /kernel/ holds the kernel package
    and whose busybox goes into the initramfs.

    Safe to call from several processes at once (a lock file serialises the build)."""
    arch_of(arch)
    os.makedirs(work, exist_ok=True)
    root = arm64_root() if arch == "aarch64" else "/"
    with open(os.path.join(work, ".lock"), "w") as lockf:
        fcntl.flock(lockf, fcntl.LOCK_EX)
        if arch == "aarch64":
            pkg = open(os.path.join(root, "kernel", "package")).read().strip()
            debdir = os.path.join(root, "kernel")
        else:
            pkg = kernel_package_name()
            debdir = work
        kver = pkg[len("linux-image-"):]
        kdir = os.path.join(work, "kernel-" + kver)
        vmlinux = os.path.join(work, f"vmlinux-{kver}")
        if arch == "aarch64":
            vmlinux = os.path.join(kdir, "boot", f"vmlinuz-{kver}")  # a raw arm64 Image
        # Debian 13's kernel package keeps its modules in /usr/lib/modules (bookworm's: /lib/modules).
        def modbase(d: str) -> str:
            return os.path.join(d, "usr") if os.path.isdir(os.path.join(d, "usr", "lib", "modules")) else d
        if not os.path.exists(os.path.join(modbase(kdir), "lib", "modules", kver, "modules.dep")):
            debs = glob.glob(os.path.join(debdir, f"{pkg}_*.deb"))
            if not debs and arch == "x86_64":
                log(f"apt-get download {pkg}")
                _run(["apt-get", "download", pkg], cwd=work)
                debs = glob.glob(os.path.join(work, f"{pkg}_*.deb"))
            if not debs:
                raise VMError(f"no {pkg}_*.deb in {debdir}")
            tmp = kdir + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            _run(["dpkg-deb", "-x", debs[0], tmp])
            _run(["depmod", "-b", modbase(tmp), kver])
            shutil.rmtree(kdir, ignore_errors=True)
            os.replace(tmp, kdir)
        if not os.path.exists(vmlinux):
            if arch == "aarch64":
                raise VMError(f"{vmlinux} missing from the kernel package")
            log("extracting vmlinux")
            extract_vmlinux(os.path.join(kdir, "boot", f"vmlinuz-{kver}"), vmlinux)

        moddir = os.path.join(modbase(kdir), "lib", "modules", kver)
        mods = _module_closure(moddir, GUEST_MODULES)
        busybox = shutil.which("busybox") or "/bin/busybox"
        list_cmd = [busybox, "--list"]
        if arch == "aarch64":
            busybox = os.path.join(root, "usr", "bin", "busybox")
            list_cmd = ["qemu-aarch64-static", busybox, "--list"]
        key = hashlib.sha256(("\n".join(mods) + INIT_SCRIPT + kver + str(os.path.getsize(busybox))).encode()).hexdigest()[:12]
        initramfs = os.path.join(work, f"initramfs-{kver}-{key}.cpio.gz")
        if not os.path.exists(initramfs):
            log("building initramfs")
            iroot = tempfile.mkdtemp(prefix="initramfs-", dir=work)
            try:
                for d in ["bin", "sbin", "proc", "sys", "dev", "host", "lib/modules", "etc"]:
                    os.makedirs(os.path.join(iroot, d), exist_ok=True)
                shutil.copy2(busybox, os.path.join(iroot, "bin", "busybox"))
                applets = _run(list_cmd).stdout.split()
                for a in applets:
                    p = os.path.join(iroot, "bin", a)
                    if not os.path.exists(p):
                        os.symlink("busybox", p)
                loaded = []
                for m in mods:
                    # busybox insmod takes plain .ko files (trixie's modules are .ko.xz).
                    plain = m[:-3] if m.endswith(".xz") else m
                    dst = os.path.join(iroot, "lib", "modules", plain)
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    if plain != m:
                        with lzma.open(os.path.join(moddir, m)) as src, open(dst, "wb") as out_f:
                            shutil.copyfileobj(src, out_f)
                    else:
                        shutil.copy2(os.path.join(moddir, m), dst)
                    loaded.append(plain)
                with open(os.path.join(iroot, "modules.order"), "w") as f:
                    f.write("\n".join(loaded) + "\n")
                with open(os.path.join(iroot, "init"), "w") as f:
                    f.write(INIT_SCRIPT)
                os.chmod(os.path.join(iroot, "init"), 0o755)
                tmp = initramfs + ".tmp"
                with open(tmp, "wb") as out:
                    find = subprocess.Popen(["find", "."], cwd=iroot, stdout=subprocess.PIPE)
                    cpio = subprocess.Popen(["cpio", "-o", "-H", "newc", "--quiet"], cwd=iroot,
                                            stdin=find.stdout, stdout=subprocess.PIPE)
                    gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout, stdout=out)
                    find.stdout.close()
                    cpio.stdout.close()
                    if gz.wait() != 0 or cpio.wait() != 0 or find.wait() != 0:
                        raise VMError("building the initramfs cpio failed")
                os.replace(tmp, initramfs)
            finally:
                shutil.rmtree(iroot, ignore_errors=True)
        return Artifacts(kver, vmlinux, initramfs, arch, root)


# ---------------------------------------------------------------------------------------------
# Screendumps (PPM)
# ---------------------------------------------------------------------------------------------

class Image:
    """An RGB image read from a binary PPM (P6, maxval 255)."""

    def __init__(self, width: int, height: int, data: bytes, path: str = ""):
        self.width, self.height, self.data = width, height, data
        self.path = path  # the screendump file it was read from ("" when made in memory)

    @staticmethod
    def read_ppm(path: str) -> "Image":
        raw = open(path, "rb").read()
        tokens: list[bytes] = []
        i = 0
        while len(tokens) < 4:
            while raw[i:i + 1].isspace():
                i += 1
            if raw[i:i + 1] == b"#":
                while raw[i:i + 1] not in (b"\n", b""):
                    i += 1
                continue
            j = i
            while not raw[j:j + 1].isspace():
                j += 1
            tokens.append(raw[i:j])
            i = j
        i += 1  # the single whitespace after maxval
        if tokens[0] != b"P6" or int(tokens[3]) != 255:
            raise VMError(f"{path}: not a P6/255 PPM ({tokens})")
        w, h = int(tokens[1]), int(tokens[2])
        data = raw[i:i + w * h * 3]
        if len(data) != w * h * 3:
            raise VMError(f"{path}: truncated PPM ({len(data)} of {w * h * 3} bytes)")
        return Image(w, h, data, path)

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise VMError(f"pixel ({x},{y}) outside {self.width}x{self.height}")
        o = (y * self.width + x) * 3
        return self.data[o], self.data[o + 1], self.data[o + 2]

    def pixel_at(self, fx: float, fy: float) -> tuple[int, int, int]:
        """The pixel at a fraction (0…1) of width and height."""
        return self.pixel(min(int(fx * self.width), self.width - 1), min(int(fy * self.height), self.height - 1))

    def count(self, rgb: tuple[int, int, int], tolerance: int = 0) -> int:
        """How many pixels equal `rgb` within `tolerance` per channel."""
        if tolerance == 0:
            needle = bytes(rgb)
            return sum(1 for o in range(0, len(self.data), 3) if self.data[o:o + 3] == needle)
        r, g, b = rgb
        d = self.data
        return sum(1 for o in range(0, len(d), 3)
                   if abs(d[o] - r) <= tolerance and abs(d[o + 1] - g) <= tolerance and abs(d[o + 2] - b) <= tolerance)

    def bbox(self, rgb: tuple[int, int, int], tolerance: int = 0) -> Optional[tuple[int, int, int, int]]:
        """(x0, y0, x1, y1) exclusive bounds of the pixels equal to `rgb` within `tolerance`, or None."""
        r, g, b = rgb
        d, w = self.data, self.width
        x0 = y0 = 1 << 30
        x1 = y1 = -1
        for y in range(self.height):
            row = y * w * 3
            for x in range(w):
                o = row + x * 3
                if abs(d[o] - r) <= tolerance and abs(d[o + 1] - g) <= tolerance and abs(d[o + 2] - b) <= tolerance:
                    if x < x0: x0 = x
                    if x > x1: x1 = x
                    if y < y0: y0 = y
                    if y > y1: y1 = y
        return None if x1 < 0 else (x0, y0, x1 + 1, y1 + 1)

    def first_not_black(self) -> tuple[int, int]:
        d = self.data
        for o in range(0, len(d), 3):
            if d[o] or d[o + 1] or d[o + 2]:
                return (o // 3) % self.width, (o // 3) // self.width
        raise VMError("every pixel is black")

    def bbox_not_black(self) -> Optional[tuple[int, int, int, int]]:
        """Bounds of the pixels that are not black, or None."""
        return self.diff_bbox(Image(self.width, self.height, bytes(len(self.data))))

    def lit(self) -> int:
        """Number of pixels that are not black (0, 0, 0)."""
        d = self.data
        return sum(1 for o in range(0, len(d), 3) if d[o] or d[o + 1] or d[o + 2])

    def diff_bbox(self, other: "Image") -> Optional[tuple[int, int, int, int]]:
        """(x0, y0, x1, y1) exclusive bounds of the pixels that differ from `other` (same size), or None."""
        if (self.width, self.height) != (other.width, other.height):
            return (0, 0, max(self.width, other.width), max(self.height, other.height))
        a, b, stride = self.data, other.data, self.width * 3
        x0 = y0 = 1 << 30
        x1 = y1 = -1
        for y in range(self.height):
            r = y * stride
            if a[r:r + stride] == b[r:r + stride]:
                continue
            xs = [x for x in range(self.width) if a[r + 3 * x:r + 3 * x + 3] != b[r + 3 * x:r + 3 * x + 3]]
            x0, x1 = min(x0, xs[0]), max(x1, xs[-1])
            y0 = min(y0, y)
            y1 = y
        return None if x1 < 0 else (x0, y0, x1 + 1, y1 + 1)

    def differs(self, other: "Image") -> int:
        """Number of pixels that differ (sizes must match, otherwise every pixel counts)."""
        if (self.width, self.height) != (other.width, other.height):
            return max(self.width * self.height, other.width * other.height)
        a, b = self.data, other.data
        return sum(1 for o in range(0, len(a), 3) if a[o:o + 3] != b[o:o + 3])


BLACK = (0, 0, 0)
# fbcon's text cursor is one character cell of its 8x16 font: the only part of a text console
# allowed to differ between two screendumps of it (the guest hides the cursor, so normally none).
CURSOR_CELL = (8, 16)
# A text console with the guest's banner (console_banner in guest/lib/common.sh) has thousands of
# lit pixels; fewer means there was nothing to compare with.
MIN_CONSOLE_TEXT = 500


# What QEMU shows for a virtio-gpu scanout the guest disabled: black with one centred line of
# grey text, "Display output is not active." (29 characters of its 8x16 console font).
QEMU_PLACEHOLDER_GREY = (170, 170, 170)
QEMU_PLACEHOLDER_BOX = (30 * 8, 16)


# Seen on bochs-drm (QEMU 7.2, kernel 6.1) whatever the client: once a client blanked and
# unblanked the display, or was killed (the kernel then puts the console back itself), the text
# console's framebuffer comes back black; fbcon draws its text again only where it changes, or all
# of it after a VT switch. A client that only set modes and exited leaves it intact, and on
# virtio-gpu it always comes back intact.
BOCHS_CONSOLE_LOST = ("bochs-drm: after a blank/unblank cycle or a killed client the console's framebuffer "
                      "returns black until fbcon redraws")


def rss_growth_without_warmup(base_kb: int, by_cycle: list, warmup_steps: int) -> int:
    """Resident-memory growth over a run (kB) from `base_kb` through the figures after each cycle,
    leaving out the `warmup_steps` largest rises between consecutive cycles (warm-up: a cache
    filled, a frame kept by the allocator): what a steady leak would add up to."""
    rises = sorted((max(b - a, 0) for a, b in zip([base_kb] + by_cycle[:-1], by_cycle)), reverse=True)
    return sum(rises[warmup_steps:])


def power_cut_problems(boot: int, before: dict, acked: dict, after: dict, clients: dict) -> list:
    """The power-cut scenario's oracle, per counter: every acknowledged increment present after
    the cut, none applied twice. `before`: the values the boot started with; `acked`: per
    counter, the values its answers named before the cut (counters change in order, so the
    largest one on disk means every earlier one is); `after`: the values the next boot starts
    with; `clients`: each counter's clients (each had at most one request unanswered at the
    cut). Returns the problems (empty: all good)."""
    problems = []
    for c in sorted(before):
        v0, got, v = before[c], acked[c], after[c]
        if len(set(got)) != len(got):
            twice = sorted({x for x in got if got.count(x) > 1})
            problems.append(f"boot {boot}: {c}: values acknowledged twice: {twice[:8]}")
        if got and min(got) <= v0:
            problems.append(f"boot {boot}: {c}: acknowledged {min(got)}, not above the start value {v0}")
        top = max(got) if got else v0
        if v < top:
            problems.append(f"boot {boot}: {c} is {v} after the cut; {top} was acknowledged before it "
                            f"({len(got)} acknowledged since {v0}; lost at least {top - v})")
        if v - v0 > len(got) + clients[c]:
            problems.append(f"boot {boot}: {c} is {v} after the cut: it started at {v0}, {len(got)} increments were "
                            f"acknowledged and at most {clients[c]} more were in flight (applied twice: "
                            f"{v - v0 - len(got) - clients[c]})")
    return problems


def black_frame_problem(img: "Image", qemu_placeholder: bool = False) -> Optional[str]:
    """None when every pixel of `img` is black; otherwise how many are not, and where.
    `qemu_placeholder`: QEMU's "Display output is not active." line is allowed too (a virtio-gpu
    scanout turned off): lit pixels only in QEMU's grey, within one 240x16 text line, in the
    middle half of the screen both ways."""
    lit = img.lit()
    if lit == 0:
        return None
    box = img.bbox_not_black()
    if qemu_placeholder:
        others = lit - img.count(QEMU_PLACEHOLDER_GREY)
        w, h = box[2] - box[0], box[3] - box[1]
        inside = (box[0] >= img.width // 4 and box[2] <= img.width * 3 // 4
                  and box[1] >= img.height // 4 and box[3] <= img.height * 3 // 4)
        if others == 0 and w <= QEMU_PLACEHOLDER_BOX[0] and h <= QEMU_PLACEHOLDER_BOX[1] and inside:
            return None
        return (f"{lit} of {img.width * img.height} pixels are not black, within {box} "
                f"({others} of them not QEMU's placeholder grey {QEMU_PLACEHOLDER_GREY}; "
                f"allowed: that grey only, within {QEMU_PLACEHOLDER_BOX[0]}x{QEMU_PLACEHOLDER_BOX[1]} "
                f"in the middle of the screen)")
    return (f"{lit} of {img.width * img.height} pixels are not black "
            f"(within {box}, e.g. {img.pixel(*img.first_not_black())})")


def console_restored_problem(before: "Image", after: "Image") -> Optional[str]:
    """None when `after` shows the text console `before` showed (a screendump taken before the
    display client started): not black, and no pixel differs outside one character cell (the
    cursor, CURSOR_CELL). Otherwise what is wrong."""
    if (before.width, before.height) != (after.width, after.height):
        return f"restored screen is {after.width}x{after.height}, the console before was {before.width}x{before.height}"
    if before.lit() < MIN_CONSOLE_TEXT:
        return (f"the console screendump taken before has only {before.lit()} lit pixels "
                f"(no text to compare with; the guest writes a banner on tty1 first)")
    if after.lit() == 0:
        return "the restored screen is black"
    box = after.diff_bbox(before)
    if box is None:
        return None
    if box[2] - box[0] <= CURSOR_CELL[0] and box[3] - box[1] <= CURSOR_CELL[1]:
        return None
    return (f"{after.differs(before)} pixels differ from the console before the display client started, "
            f"within {box} (allowed: one {CURSOR_CELL[0]}x{CURSOR_CELL[1]} character cell, the cursor)")


def close_rgb(a: tuple[int, int, int], b: tuple[int, int, int], tolerance: int = 0) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def clock_rgb(t: float) -> tuple[int, int, int]:
    """The clock scene's background with `color_mode = "scaled"` for UTC time t (whole second):
    hour/24, minute/60, second/60 of 255."""
    tm = time.gmtime(int(t))

    def sc(v, m):
        return int(v * 255 / m + 0.5)
    return sc(tm.tm_hour, 24), sc(tm.tm_min, 60), sc(tm.tm_sec, 60)


def clock_second(img: "Image", t1: float, t2: float, at=(0.03, 0.03)) -> Optional[int]:
    """The offset (s, from int(t1)) of the second in [t1-1, t2+1] whose clock colour `img` shows
    at `at`, or None."""
    got = img.pixel_at(*at)
    for sec in range(int(t1) - 1, int(t2) + 2):
        if got == clock_rgb(sec):
            return sec - int(t1)
    return None


# ---------------------------------------------------------------------------------------------
# QMP
# ---------------------------------------------------------------------------------------------

class QMP:
    """A minimal QMP client on a Unix socket (JSON lines); events are kept in `events`."""

    def __init__(self, path: str, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise VMError(f"QMP socket {path} did not accept within {timeout}s")
                time.sleep(0.05)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.events: list[dict] = []
        self._read()  # greeting
        self.command("qmp_capabilities")

    def _read(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise VMError("QMP connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def command(self, name: str, timeout: float = 30.0, **args) -> object:
        """Runs a QMP command and returns its `return` value; raises VMError on `error`."""
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.settimeout(timeout)
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            r = self._read()
            if "event" in r:
                self.events.append(r)
                continue
            if "error" in r:
                raise VMError(f"QMP {name} {args}: {r['error'].get('desc', r['error'])}")
            return r.get("return")

    def wait_event(self, name: str, timeout: float = 30.0) -> dict:
        """Waits for a QMP event (e.g. DEVICE_DELETED), including ones already received."""
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("event") == name:
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise VMError(f"QMP event {name} did not arrive within {timeout}s")
            self.sock.settimeout(left)
            try:
                r = self._read()
            except socket.timeout:
                continue
            if "event" in r:
                self.events.append(r)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------

@dataclass
class Scenario:
    name: str
    guest: str                        # guest script: a bash file in scripts/vm/guest/, sourced after the prelude
    check: Callable[["Session"], None]
    display: str = "VGA"              # QEMU display device: "VGA" (bochs-drm), "virtio-gpu-pci", or "none"
    qemu_args: list[str] = field(default_factory=list)  # extra QEMU arguments (pointer devices, -rtc …)
    timeout: float = 180.0            # whole run, seconds
    description: str = ""
    setup: Optional[Callable[["Session"], None]] = None  # runs on the host before the first boot
    kernel_args: str = ""             # added to the kernel command line (e.g. "no_timer_check")
    udev: bool = True                 # False: the guest starts no udevd (faster boots; no libinput)
    boot: str = ""                    # busybox sh hook sourced by the initramfs after the 9p mount (path in the checkout)
    prelude: str = "prelude.sh"       # the guest prelude (a file in scripts/vm/guest/; systemd-prelude.sh under systemd)
    ready_timeout: float = 60.0       # bound for the prelude's udev-ready marker after /init (a systemd boot needs more)
    env: dict[str, str] = field(default_factory=dict)  # exported to the guest script (scenario parameters)
    heads: int = 1                    # virtio-gpu heads (max_outputs); > 1 forces Virtual-2 … on (video=…e)


SCENARIOS: dict[str, Scenario] = {}


def scenario(name: str, guest: str, display: str = "VGA", qemu_args: Optional[list[str]] = None,
             timeout: float = 180.0, description: str = "",
             setup: Optional[Callable[["Session"], None]] = None, kernel_args: str = "",
             udev: bool = True, boot: str = "", prelude: str = "prelude.sh",
             ready_timeout: float = 60.0, env: Optional[dict[str, str]] = None, heads: int = 1):
    """Decorator registering a host-side check function with its guest script.

    `guest`: a bash file in scripts/vm/guest/ (checked by shellcheck), sourced after the prelude;
    `env`: variables exported to it (the scenario's parameters).
    `setup(session)` runs on the host before QEMU first starts (e.g. to make a disk image in
    `session.rundir` and add it with `session.extra_qemu_args`; the guest sees the run directory
    as $KIOSK_VM_RUNDIR).
    `boot`: a busybox sh script (path relative to the checkout) the initramfs sources right after
    mounting the host root on /host, before the usual chroot; it may `exec switch_root`.
    `prelude`: the guest prelude file (default prelude.sh).
    `ready_timeout`: how long to wait for the prelude's udev-ready marker.
    `heads`: outputs of the virtio-gpu display (max_outputs; the heads after the first forced on
    with the kernel's `video=` argument); `Session.screendump(head=K)` takes one head."""
    display_device(display, heads)  # a bad combination fails at registration
    for f in (guest, prelude):
        if not os.path.isfile(os.path.join(GUEST_DIR, f)):
            raise VMError(f"scenario {name}: no guest file {os.path.join(GUEST_DIR, f)}")

    def wrap(fn: Callable[["Session"], None]):
        if name in SCENARIOS:
            raise VMError(f"scenario {name} registered twice")
        SCENARIOS[name] = Scenario(name, guest, fn, display, list(qemu_args or []), timeout,
                                   description or (fn.__doc__ or "").strip().split("\n")[0], setup, kernel_args, udev,
                                   os.path.join(REPO, boot) if boot else "", prelude, ready_timeout, dict(env or {}),
                                   heads)
        return fn
    return wrap


def kv(payload: str) -> dict:
    """'a=1|b=two|…' → dict; parts without '=' are skipped."""
    out = {}
    for part in payload.split("|"):
        if "=" in part:
            k, v = part.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def text_console_problem(img) -> "str | None":
    """None when `img` looks like a Linux text console: enough lit pixels, and every pixel one of
    the console's 16 colours (each channel 0, 85, 170 or 255). Otherwise what is wrong."""
    lit = img.lit()
    if lit < MIN_CONSOLE_TEXT:
        return f"only {lit} lit pixels: no text on screen"
    palette = {0, 85, 170, 255}
    d = img.data
    for o in range(0, len(d), 3):
        if d[o] not in palette or d[o + 1] not in palette or d[o + 2] not in palette:
            i = o // 3
            return f"pixel ({i % img.width},{i // img.width}) is {tuple(d[o:o + 3])}, not a console colour"
    return None


def load_scenarios(directory: str = os.path.dirname(os.path.abspath(__file__))) -> dict[str, Scenario]:
    """Imports every scenarios*.py next to this file (each registers with `scenario`)."""
    for path in sorted(glob.glob(os.path.join(directory, "scenarios*.py"))):
        modname = "kiosk_vm_" + os.path.splitext(os.path.basename(path))[0]
        if modname in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
    return SCENARIOS


class Session:
    """One running VM: markers from the guest, answers to it, QMP, screendumps, results."""

    def __init__(self, sc: Scenario, arts: Artifacts, kioskd: str, vmtool: str, keep: bool = False):
        self.sc, self.arts = sc, arts
        self.kioskd, self.vmtool = kioskd, vmtool
        self.rundir = tempfile.mkdtemp(prefix=f"run-{sc.name}-", dir=WORK)
        self.console_path = os.path.join(self.rundir, "console.log")
        self.qmp_path = os.path.join(self.rundir, "qmp.sock")
        self.ctl_path = os.path.join(self.rundir, "ctl")
        self.proc: Optional[subprocess.Popen] = None
        self.qmp: Optional[QMP] = None
        self.ctl_fd: Optional[int] = None
        self.cursor = 0
        self.results: dict[str, object] = {}
        self.failures: list[str] = []
        self.keep = keep
        self.t_start = 0.0
        self.shots = 0
        self.last_shot = ""
        self._drain_stop = False
        self.extra_qemu_args: list[str] = []   # added to every boot (set by a scenario's setup)
        self.boots = 1                         # QEMU starts so far (cut_power + boot_again)
        self._setup_done = False

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        if self.sc.setup and not self._setup_done:
            self._setup_done = True
            self.sc.setup(self)
        script = os.path.join(self.rundir, "guest.sh")
        with open(script, "w") as f:
            f.write(f"# Generated by scripts/vm/vmharness.py for the scenario {self.sc.name}\n")
            f.write(f"export REPO={_q(REPO)} KIOSKD={_q(self.kioskd)} KIOSK_VMTOOL={_q(self.vmtool)}"
                    f" KIOSK_VM_RUNDIR={_q(self.rundir)} KIOSK_VM_UDEV={1 if self.sc.udev else 0}\n")
            for k, v in self.sc.env.items():
                f.write(f"export {k}={_q(v)}\n")
            f.write(f". \"$REPO/scripts/vm/guest/{self.sc.prelude}\"\n")
            f.write(f". \"$REPO/scripts/vm/guest/{self.sc.guest}\"\n")
            f.write("mark scenario-done\n")
        for suffix in (".in", ".out"):
            os.mkfifo(self.ctl_path + suffix)
        arch = arch_of(self.arts.arch)
        append = f"console={arch.console} loglevel=4 panic=-1 {arch.kernel_args} kiosk.script={script} kiosk.repo={REPO}"
        if self.sc.boot:
            append += f" kiosk.boot={self.sc.boot}"
        args = arch.qemu + ["-accel", "tcg", "-m", "1024", "-smp", "2",
                            "-nodefaults", "-no-user-config", "-display", "none",
                            "-kernel", self.arts.vmlinux, "-initrd", self.arts.initramfs,
                            "-append", append,
                            "-virtfs", f"local,path={self.arts.root},mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
                            "-serial", f"file:{self.console_path}",
                            "-chardev", f"pipe,id=ctl,path={self.ctl_path}"]
        if arch.ctl_serial:
            args += ["-serial", "chardev:ctl"]
        else:
            args += ["-device", "virtio-serial-pci,id=kctl",
                     "-device", f"virtserialport,bus=kctl.0,chardev=ctl,name={CTL_PORT}"]
        if self.arts.root != "/":
            # The checkout at its own path in the guest (init.sh mounts this share there).
            args[args.index("-append") + 1] += " kiosk.reposhare=1"
            args += ["-virtfs", f"local,path={REPO},mount_tag=repo,security_model=none,readonly=on,multidevs=remap"]
        args += ["-qmp", f"unix:{self.qmp_path},server=on,wait=off", "-no-reboot"]
        if self.sc.display != "none":
            args += ["-device", display_device(self.sc.display, self.sc.heads)]
        args += self.sc.qemu_args
        args += self.extra_qemu_args
        kargs = " ".join(a for a in (self.sc.kernel_args, heads_kernel_args(self.sc.heads)) if a)
        if arch.name != "x86_64":
            kargs = " ".join(a for a in kargs.split() if a != NO_TIMER_CHECK)  # an x86 option
        if kargs:
            args[args.index("-append") + 1] += " " + kargs
        log(f"{self.sc.name}: starting QEMU ({self.arts.arch}, {self.sc.display})")
        self.t_start = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.qmp = QMP(self.qmp_path)
        # QEMU opens the pipe ends read-write, so these opens do not block.
        self.ctl_fd = os.open(self.ctl_path + ".in", os.O_WRONLY)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        try:
            fd = os.open(self.ctl_path + ".out", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        while not self._drain_stop:
            try:
                if not os.read(fd, 4096):
                    time.sleep(0.2)
            except BlockingIOError:
                time.sleep(0.2)
            except OSError:
                break
        os.close(fd)

    def stop(self) -> None:
        """Always kills QEMU (bounded) and closes everything."""
        self._drain_stop = True
        if self.qmp:
            self.qmp.close()
        if self.ctl_fd is not None:
            os.close(self.ctl_fd)
            self.ctl_fd = None
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        if not self.keep and not self.failures:
            shutil.rmtree(self.rundir, ignore_errors=True)

    def cut_power(self, how: str = "kill") -> None:
        """Ends the VM abruptly, as a power cut: "kill" sends QEMU SIGKILL, "quit" the QMP `quit`
        command. Nothing in the guest runs afterwards: what sat in its page cache is lost; what it
        had written to a disk image (and so, with cache=writeback, in the host's page cache) stays.
        The console log is kept as console-bootN.log; `boot_again` starts the next boot."""
        if how == "quit":
            try:
                self.qmp.command("quit", timeout=10)
            except (VMError, OSError):
                pass  # QEMU may close the connection before it answers
        elif how == "kill":
            self.proc.kill()
        else:
            raise VMError(f"cut_power: how must be 'kill' or 'quit', not {how!r}")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.qmp.close()
        if self.ctl_fd is not None:
            os.close(self.ctl_fd)
            self.ctl_fd = None
        os.replace(self.console_path, os.path.join(self.rundir, f"console-boot{self.boots}.log"))
        for suffix in (".in", ".out"):
            os.unlink(self.ctl_path + suffix)
        self.cursor = 0

    def boot_again(self) -> None:
        """After `cut_power`: starts QEMU again with the same arguments (disk images keep their
        contents; `extra_qemu_args` may have been changed) and waits for the guest's udev."""
        self.boots += 1
        self.start()
        self.wait_marker("init", timeout=180)
        self.wait_marker("udev-ready", timeout=120)

    def wait_exit(self, timeout: float = 60.0) -> int:
        """Waits for the guest to power off (QEMU exits)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise VMError(f"guest did not power off within {timeout}s")

    # -- guest -> host ------------------------------------------------------------------
    def console(self) -> str:
        try:
            with open(self.console_path, "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_marker(self, name: str, timeout: float = 60.0) -> str:
        """Waits for the guest's `mark NAME PAYLOAD` after the previous marker; returns PAYLOAD."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.console()
            for m in MARKER_RE.finditer(text, self.cursor):
                if m.group(1) == "harness-error":
                    raise VMError(f"guest reported: {m.group(2)}")
                if m.group(1) == name:
                    self.cursor = m.end()
                    return m.group(2)
                if m.group(1) == "guest-exit" and name != "guest-exit":
                    raise VMError(f"guest script ended (status {m.group(2)}) before marker {name!r}")
            if self.proc.poll() is not None:
                said = (self.proc.stdout.read() if self.proc.stdout else b"").decode(errors="replace").strip()
                raise VMError(f"QEMU exited ({self.proc.returncode}) before marker {name!r}"
                              + (f"; QEMU said: {said[-600:]}" if said else ""))
            if time.monotonic() > deadline:
                raise VMError(f"marker {name!r} did not come within {timeout}s")
            time.sleep(0.05)

    def markers(self, name: str) -> list[str]:
        """Payloads of every `name` marker seen so far (does not move the cursor)."""
        return [m.group(2) for m in MARKER_RE.finditer(self.console()) if m.group(1) == name]

    # -- host -> guest ------------------------------------------------------------------
    def answer(self, line: str = "go") -> None:
        """Sends one line to the guest's `wait_host`."""
        os.write(self.ctl_fd, (line + "\n").encode())

    # -- QMP helpers --------------------------------------------------------------------
    def screendump(self, label: str = "", head: Optional[int] = None, device: Optional[str] = None) -> Image:
        """QMP screendump to PPM, parsed. `head`: one head of a scenario with `heads` > 1 (QMP
        `screendump` with `device` DISPLAY_ID and `head`); `device`: the QEMU display device
        with that id (a scenario with a second display device in `qemu_args`); neither: QEMU's
        default console (head 0)."""
        self.shots += 1
        tag = "".join(f"-{t}" for t in (label, "" if head is None else f"h{head}", device or "") if t)
        path = os.path.join(self.rundir, f"shot{self.shots:02d}{tag}.ppm")
        if device is not None:
            self.qmp.command("screendump", filename=path, device=device)
        elif head is None:
            self.qmp.command("screendump", filename=path)
        else:
            if not 0 <= head < self.sc.heads:
                raise VMError(f"screendump of head {head}: the scenario has {self.sc.heads} head(s) (heads=N)")
            self.qmp.command("screendump", filename=path, device=DISPLAY_ID, head=head)
        self.last_shot = path
        return Image.read_ppm(path)

    def wait_screen(self, pred: Callable[[Image], bool], timeout: float = 20.0, label: str = "", *, what: str,
                    head: Optional[int] = None) -> Image:
        """Takes screendumps (of `head`, see screendump) until `pred` holds and returns that one.
        When it does not hold within `timeout`, raises VMError naming `what` (the condition
        awaited) and the last screendump."""
        deadline = time.monotonic() + timeout
        while True:
            img = self.screendump(label, head)
            if pred(img):
                return img
            if time.monotonic() > deadline:
                raise VMError(f"screen: {what}: not seen within {timeout:g}s (last screendump {self.last_shot})")
            time.sleep(0.3)

    def settled(self, label: str, what: str, differs_from: Optional[Image] = None, timeout: float = 20.0,
                head: Optional[int] = None) -> Image:
        """Screendumps (of `head`) until two in a row are identical (and, when given, differ from
        `differs_from`); returns the second. Raises VMError naming `what` on timeout."""
        deadline = time.monotonic() + timeout
        prev = self.screendump(label, head)
        while True:
            time.sleep(0.4)
            cur = self.screendump(label, head)
            if cur.differs(prev) == 0 and (differs_from is None or cur.differs(differs_from) > 0):
                return cur
            if time.monotonic() > deadline:
                changed = "" if differs_from is None else f", {cur.differs(differs_from)} pixels differ from the frame before"
                raise VMError(f"screen: {what}: no settled frame within {timeout:g}s "
                              f"({cur.differs(prev)} pixels changed between the last two screendumps{changed}; "
                              f"last {self.last_shot})")
            prev = cur

    def console_before(self, marker: str = "console-ready") -> Image:
        """After the guest's `console_banner; ask_host console-ready`: the text console before any
        display client started (a screendump), then the answer."""
        return self.consoles_before([None], marker)[0]

    def settled_console(self, head: Optional[int], timeout: float = 5.0) -> Image:
        """A screendump of the text console once two taken 0.3 s apart are the same: the kernel
        draws console text after the guest wrote it, and on a loaded host a screendump taken at
        once showed the banner's first line only (the later check then saw the rest as changed)."""
        img = self.screendump("console", head)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            time.sleep(0.3)
            again = self.screendump("console", head)
            if again.data == img.data:
                return again
            img = again
        return img

    def consoles_before(self, heads: list, marker: str = "console-ready") -> list:
        """console_before for several heads (see screendump): one screendump of each, in order, all
        taken before the answer. Records `console_lit_pixels` (`…_headK` for head K)."""
        self.wait_marker(marker, 60)
        imgs = [self.settled_console(h) for h in heads]
        self.answer()
        for h, img in zip(heads, imgs):
            self.result("console_lit_pixels" + ("" if h is None else f"_head{h}"), img.lit())
        return imgs

    def expect_console_back(self, console: Image, label: str, what: str, timeout: float = 10.0,
                            black_known: str = "", head: Optional[int] = None) -> None:
        """Waits (bounded) until the screen (`head`) shows `console` again (console_restored_problem);
        otherwise records the failure with what is wrong in a screendump taken then.
        `black_known`: a known reason why the console may come back black (every pixel); such a
        frame is then recorded as `console_black_known` instead of failing (anything else fails).
        Results: `console_restored_diff` (`…_headK` for head K)."""
        def ok(i: Image) -> bool:
            return console_restored_problem(console, i) is None or (bool(black_known) and i.lit() == 0)
        try:
            after = self.wait_screen(ok, timeout, label, what=what, head=head)
        except VMError:
            after = self.screendump(label, head)
            self.expect(False, f"{what}: {console_restored_problem(console, after)}")
        suffix = "" if head is None else f"_head{head}"
        if console_restored_problem(console, after) is not None:
            self.result("console_black_known" + suffix, black_known)
        self.result("console_restored_diff" + suffix, after.differs(console))

    def send_abs(self, fx: float, fy: float, button: Optional[bool] = None) -> None:
        """input-send-event: absolute pointer move to a fraction of the screen, optional left button."""
        events = [{"type": "abs", "data": {"axis": "x", "value": int(fx * 0x7fff)}},
                  {"type": "abs", "data": {"axis": "y", "value": int(fy * 0x7fff)}}]
        if button is not None:
            events.append({"type": "btn", "data": {"button": "left", "down": button}})
        self.qmp.command("input-send-event", events=events)

    def send_key(self, qcode: str, down: bool) -> None:
        self.qmp.command("input-send-event",
                         events=[{"type": "key", "data": {"down": down, "key": {"type": "qcode", "data": qcode}}}])

    def device_add(self, driver: str, id: str, **props) -> None:
        self.qmp.command("device_add", driver=driver, id=id, **props)

    def device_del(self, id: str, timeout: float = 30.0) -> None:
        """device_del and wait for DEVICE_DELETED (the guest must release the device)."""
        self.qmp.command("device_del", id=id)
        self.qmp.wait_event("DEVICE_DELETED", timeout)

    def qom_set(self, path: str, prop: str, value) -> None:
        self.qmp.command("qom-set", path=path, property=prop, value=value)

    # -- results --------------------------------------------------------------------------
    def result(self, key: str, value) -> None:
        self.results[key] = value

    def expect(self, cond: bool, what: str) -> bool:
        if not cond:
            self.failures.append(what)
            log(f"{self.sc.name}: FAIL {what}")
        return cond


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def run_scenario(sc: Scenario, kioskd: str, vmtool: str, keep: bool = False, arch: str = "x86_64") -> dict:
    """Boots a VM for `sc`, runs its check, always kills QEMU; returns a result dict."""
    for name, path in (("kioskd", kioskd), ("kiosk-vmtool", vmtool)):
        if (path.startswith("/tmp/") or path == "/tmp") and not os.path.realpath(path).startswith(REPO + "/"):
            raise VMError(f"{name} at {path}: the guest mounts a tmpfs on /tmp; use a path in the checkout ({REPO})")
        if arch != "x86_64" and not os.path.realpath(path).startswith(REPO + "/"):
            raise VMError(f"{name} at {path}: the {arch} guest sees only its root and the checkout ({REPO})")
    arts = prepare(arch=arch)
    if arts.root != "/":
        # The mount point of the checkout's share (init.sh); the root is otherwise left as built.
        os.makedirs(arts.root + REPO, exist_ok=True)
    # One VM at a time on this machine (TCG wants both cores; parallel test suites would
    # otherwise boot several at once). KIOSK_VM_PARALLEL=1 turns this off.
    lockf = None
    if os.environ.get("KIOSK_VM_PARALLEL") != "1":
        lockf = open(os.path.join(WORK, ".run.lock"), "w")
        t_wait = time.monotonic()
        fcntl.flock(lockf, fcntl.LOCK_EX)
        waited = time.monotonic() - t_wait
        if waited > 1:
            log(f"{sc.name}: waited {waited:.1f}s for another VM to finish")
    t0 = time.monotonic()
    error = None
    # A QEMU that dies before the guest's /init ran is the host's trouble, not the scenario's
    # (seen once under heavy load: QEMU aborted at start). It gets one more boot, said in the log.
    for attempt in (1, 2):
        s = Session(sc, arts, kioskd, vmtool, keep)
        try:
            s.start()
            s.wait_marker("init", timeout=180)
            break
        except Exception as e:  # noqa: BLE001 (reported as the scenario's failure, QEMU killed)
            s.stop()
            if attempt == 2 or not (isinstance(e, VMError) and str(e).startswith("QEMU exited")):
                if lockf:
                    lockf.close()
                return {"scenario": sc.name, "ok": False, "total_s": round(time.monotonic() - t0, 2),
                        "results": s.results, "failures": [str(e) if isinstance(e, VMError) else f"{type(e).__name__}: {e}"],
                        "rundir": s.rundir,
                        "console_tail": s.console()[-3000:]}
            log(f"{sc.name}: {e}; booting once more")
    try:
        s.result("boot_s", round(time.monotonic() - s.t_start, 2))
        udev = s.wait_marker("udev-ready", timeout=sc.ready_timeout).split()
        if len(udev) == 2:
            s.result("udev_s", round(float(udev[1]) - float(udev[0]), 2))
        sc.check(s)
        s.wait_marker("scenario-done", timeout=60)
        s.wait_exit(30)
    except VMError as e:
        error = str(e)
        s.failures.append(error)
    except Exception as e:  # a bug in a check: report it, still kill QEMU
        error = f"{type(e).__name__}: {e}"
        s.failures.append(error)
    finally:
        s.stop()
        if lockf:
            lockf.close()
    res = {"scenario": sc.name, "ok": not s.failures, "total_s": round(time.monotonic() - t0, 2),
           "results": s.results, "failures": s.failures}
    if s.failures:
        res["rundir"] = s.rundir
        tail = s.console()[-3000:]
        res["console_tail"] = tail
    return res
