"""Power cut: kioskd's state on an ext4 file system on a virtio-blk disk, a stream of
acknowledged increments, and the VM killed at a random moment in the middle of it; booted again
with the same disk image, the counter holds every acknowledged increment.

What a cut is here. The disk image is a file on the host opened with cache=writeback (QEMU's
default; KIOSK_POWERCUT_CACHE=none opens it with O_DIRECT instead). Killing QEMU (SIGKILL, or
the QMP `quit` command; the cycles alternate) loses everything the guest kernel held in memory:
its page cache, dirty inodes, the ext4 journal's running transaction. What the guest had already
written to the virtual disk stays, as it would on a disk that honours flushes. So the test proves
that kioskd acknowledges an increment only after the value is durable at the file system level
(the temp file fsynced, the renames and the directory fsynced, the journal committed), and that
after the journal replay at the next mount the state file is never damaged. It does not model a
disk that loses its own volatile write cache or tears a sector; that needs a disk emulation that
drops unflushed writes.

The acknowledgements reach the host through a virtio-serial port backed by a file: a write on
the port returns only after QEMU has taken the data (TCG handles the queue notification in the
writing vCPU), so the host knows every acknowledged value even after the cut. One increment at a
time is in flight, so after a cut the counter is the last acknowledged value or one more.

  KIOSK_POWERCUT_CYCLES=N   cuts (default 3, then one clean boot that checks and runs e2fsck)
  KIOSK_POWERCUT_SEED=N     the random cut moments of an earlier run again
  KIOSK_POWERCUT_EATMYDATA=1  kioskd's fsyncs made no-ops (Debian's eatmydata): the scenario
                            must then fail, showing that it catches a daemon that acknowledges
                            values still in the page cache
"""

import glob
import os
import random
import subprocess
import time

from vmharness import NO_TIMER_CHECK, Session, VMError, log, scenario

CYCLES = int(os.environ.get("KIOSK_POWERCUT_CYCLES", "3"))
CACHE = os.environ.get("KIOSK_POWERCUT_CACHE", "writeback")
EATMYDATA = os.environ.get("KIOSK_POWERCUT_EATMYDATA") == "1"
IMAGE_MB = 64



def _boot_args(s: Session, boot: int) -> None:
    """The state disk and this boot's acknowledgement log (a fresh file per boot)."""
    s.extra_qemu_args = [
        "-drive", f"file={s.pc_image},format=raw,if=none,id=kstate,cache={CACHE}",
        "-device", "virtio-blk-pci,drive=kstate",
        "-device", "virtio-serial-pci,id=vser",
        "-chardev", f"file,id=acks,path={_acks_path(s, boot)}",
        "-device", "virtserialport,bus=vser.0,chardev=acks,name=kiosk.acks",
    ]


def _acks_path(s: Session, boot: int) -> str:
    return os.path.join(s.rundir, f"acks-boot{boot}.log")


def _setup(s: Session) -> None:
    """A fresh ext4 image (mkfs.ext4's defaults; mounted with the kernel's: data=ordered)."""
    s.pc_image = os.path.join(s.rundir, "state.img")
    with open(s.pc_image, "wb") as f:
        f.truncate(IMAGE_MB << 20)
    r = subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "kstate", s.pc_image], capture_output=True, text=True)
    if r.returncode != 0:
        raise VMError(f"mkfs.ext4 {s.pc_image} failed ({r.returncode}): {r.stderr.strip()} (apt-get install e2fsprogs)")
    _boot_args(s, 1)


def _acks(s: Session, boot: int) -> list[int]:
    try:
        text = open(_acks_path(s, boot), errors="replace").read()
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        if line.startswith("ack "):
            out.append(int(line[4:]))
        elif line.strip():
            raise VMError(f"unexpected line in {_acks_path(s, boot)}: {line!r}")
    return out


def _wait_acks(s: Session, boot: int, n: int, timeout: float) -> list[int]:
    """Bounded wait until `n` increments were acknowledged in this boot."""
    deadline = time.monotonic() + timeout
    while True:
        a = _acks(s, boot) if os.path.exists(_acks_path(s, boot)) else []
        if len(a) >= n:
            return a
        if s.proc.poll() is not None:
            raise VMError(f"QEMU exited while waiting for {n} acknowledged increments")
        if s.markers("pc-error"):
            raise VMError(f"guest: {s.markers('pc-error')[-1]}")
        if time.monotonic() > deadline:
            raise VMError(f"only {len(a)} of {n} increments acknowledged within {timeout}s")
        time.sleep(0.05)


def _boot_checks(s: Session, boot: int, last_ack: int, mode: str) -> tuple[int, bool]:
    """Tells the guest what to do, checks the value it starts with against the last acknowledged
    one; returns it and whether the mount replayed the ext4 journal."""
    s.wait_marker("which-mode", 120)
    s.answer(mode)
    mounted = s.wait_marker("mounted", 120)
    if boot == 1:
        s.result("mount", mounted.split(" | ")[0])
        opts = mounted.split()[3] if len(mounted.split()) > 3 else ""
        s.expect(mounted.split()[2:3] == ["ext4"] and "rw" in opts.split(","),
                 f"the state disk is mounted read-write as ext4 ({mounted})")
    rec = s.wait_marker("recovery", 120)
    v = int(s.wait_marker("start-value", 120))
    s.expect("damaged=0 " in rec, f"boot {boot}: no state file was damaged ({rec})")
    if boot == 1:
        s.expect(v == 0, f"a fresh disk starts at 0 (got {v})")
    else:
        s.expect(last_ack <= v <= last_ack + 1,
                 f"boot {boot}: the counter is {v}; the last acknowledged value before the cut was {last_ack} "
                 f"(allowed: {last_ack} or {last_ack + 1})")
    return v, "replayed=0" not in mounted


@scenario("kioskd-power-cut", display="none", timeout=900, setup=_setup, kernel_args=NO_TIMER_CHECK, udev=False, guest="kioskd-power-cut.sh")
def power_cut(s: Session) -> None:
    """State on a virtio-blk ext4 disk; QEMU killed (SIGKILL / QMP quit) at random moments while increments are acknowledged; every acknowledged value is there after the next boot."""
    seed = int(os.environ.get("KIOSK_POWERCUT_SEED", str(time.time_ns() % 1_000_000_007)))
    rng = random.Random(seed)
    s.result("seed", seed)
    if EATMYDATA and not glob.glob(os.path.join(s.arts.root, "usr/lib/*-linux-gnu/libeatmydata.so*")):
        raise VMError("KIOSK_POWERCUT_EATMYDATA=1 needs Debian's eatmydata (apt-get install eatmydata)")
    last_ack = 0
    cycles = []
    s.result("cache", CACHE)
    for cycle in range(1, CYCLES + 1):
        boot = s.boots
        v0, replayed = _boot_checks(s, boot, last_ack, "stream eatmydata" if EATMYDATA else "stream")
        s.wait_marker("streaming", 60)
        # A random moment in the stream: after 1-4 acknowledged increments, plus up to one
        # increment's time (so the cut lands anywhere inside a request, a save or between them).
        n = rng.randint(1, 4)
        t0 = time.monotonic()
        _wait_acks(s, boot, n, 180)
        per_inc = (time.monotonic() - t0) / n
        time.sleep(rng.uniform(0, per_inc))
        how = "quit" if cycle % 2 else "kill"
        s.cut_power(how)
        acks = _acks(s, boot)
        s.expect(acks == list(range(v0 + 1, v0 + 1 + len(acks))),
                 f"boot {boot}: acknowledged values count up from {v0 + 1} one by one ({acks[:8]}…)")
        last_ack = acks[-1] if acks else v0
        cycles.append({"start": v0, "replayed": replayed, "acked": len(acks), "last_ack": last_ack, "cut": how})
        log(f"power cut {cycle}/{CYCLES} ({how}): started at {v0}, {len(acks)} acknowledged, last {last_ack}")
        _boot_args(s, s.boots + 1)
        s.boot_again()
        if s.failures:
            break
    # The last boot: no cut; the value, then a clean stop, unmount and e2fsck.
    final, replayed = _boot_checks(s, s.boots, last_ack, "final")
    cycles.append({"start": final, "replayed": replayed})
    s.result("cycles", cycles)
    s.expect(len(cycles) == CYCLES + 1, f"one boot per cut plus the final one ({len(cycles)} boots for {CYCLES} cuts)")
    s.result("acknowledged", sum(c.get("acked", 0) for c in cycles))
    s.result("last_acknowledged", last_ack)
    s.result("final_value", final)
    s.result("journal_replays", sum(1 for c in cycles if c.get("replayed")))
    s.expect(s.wait_marker("kioskd-exit", 60) == "0", "kioskd stopped cleanly on SIGTERM")
    s.expect(s.wait_marker("umount", 60) == "0", "the state disk unmounted")
    fsck = s.wait_marker("fsck", 120)
    s.result("fsck", fsck)
    s.expect(fsck.startswith("0 "), f"e2fsck -fn finds the file system clean after the cuts ({fsck})")
