"""Power cut under a concurrent burst: kioskd's state on an ext4 file system on a virtio-blk
disk, concurrent clients incrementing two counters (so the command pipeline commits their
changes in batches of several: group commit), and the VM killed at a random moment in the middle
of it; booted again with the same disk image, each counter holds every acknowledged increment
and none was applied twice.

What a cut is here. The disk image is a file on the host opened with cache=writeback (QEMU's
default; KIOSK_POWERCUT_CACHE=none opens it with O_DIRECT instead). Killing QEMU (SIGKILL, or
the QMP `quit` command; the cycles alternate) loses everything the guest kernel held in memory:
its page cache, dirty inodes, the ext4 journal's running transaction. What the guest had already
written to the virtual disk stays, as it would on a disk that honours flushes. So the test proves
that kioskd acknowledges an increment only after the value is durable at the file system level
(the temp files fsynced, the renames and the directory fsynced, the journal committed), and that
after the journal replay at the next mount the state file is never damaged. It does not model a
disk that loses its own volatile write cache or tears a sector; that needs a disk emulation that
drops unflushed writes.

The acknowledgements reach the host through a virtio-serial port backed by a file: a write on
the port returns only after QEMU has taken the data (TCG handles the queue notification in the
writing vCPU), so the host knows every acknowledged value even after the cut. The clients
(guest/lib/inc_clients.py: threads on kept-alive control connections, even ones HOME, odd ones
AWAY; kioskctl's process start would cost most of a second each under emulation) each have one
increment in flight at a time and write the value its answer names before sending the next, so
after a cut, for each counter: the value is at least the largest acknowledged
one (changes of a counter are decided and committed in order: that one on disk means every
earlier one is), no value was acknowledged twice, and the value grew by at most the increments
acknowledged plus the counter's clients (one unanswered request each): none applied twice. The
guest also reports the pipeline's largest batch (`kioskctl status`) once a second.

  KIOSK_POWERCUT_CYCLES=N   cuts (default 3, then one clean boot that checks and runs e2fsck)
  KIOSK_POWERCUT_CLIENTS=N  concurrent clients (default 8; 1 = one increment at a time)
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
from typing import Optional

from vmharness import NO_TIMER_CHECK, Session, VMError, log, power_cut_problems, scenario

CYCLES = int(os.environ.get("KIOSK_POWERCUT_CYCLES", "3"))
CACHE = os.environ.get("KIOSK_POWERCUT_CACHE", "writeback")
EATMYDATA = os.environ.get("KIOSK_POWERCUT_EATMYDATA") == "1"
CLIENTS = int(os.environ.get("KIOSK_POWERCUT_CLIENTS", "8"))
IMAGE_MB = 64
COUNTERS = ("HOME", "AWAY")
# Client c increments COUNTERS[c % 2]: the clients of each counter.
PER_COUNTER = {"HOME": (CLIENTS + 1) // 2, "AWAY": CLIENTS // 2}



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


class Acks:
    """What one boot reported on the port: the values acknowledged to each counter's clients,
    in the order they were written, and the pipeline's largest batch last reported."""

    def __init__(self) -> None:
        self.values: dict[str, list[int]] = {c: [] for c in COUNTERS}
        self.largest: Optional[int] = None

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.values.values())


def _acks(s: Session, boot: int) -> Acks:
    out = Acks()
    try:
        text = open(_acks_path(s, boot), errors="replace").read()
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == "ack" and words[1] in out.values and words[2].isdigit():
            out.values[words[1]].append(int(words[2]))
        elif len(words) == 2 and words[0] == "largest" and words[1].isdigit():
            out.largest = int(words[1])
        elif line.strip():
            raise VMError(f"unexpected line in {_acks_path(s, boot)}: {line!r}")
    return out


def _wait_acks(s: Session, boot: int, n: int, timeout: float) -> Acks:
    """Bounded wait until `n` increments (of both counters) were acknowledged in this boot and
    the guest reported the pipeline's largest batch after at least one commit."""
    deadline = time.monotonic() + timeout
    while True:
        a = _acks(s, boot)
        if a.total >= n and (a.largest or 0) >= 1:
            return a
        if s.proc.poll() is not None:
            raise VMError(f"QEMU exited while waiting for {n} acknowledged increments")
        if s.markers("pc-error"):
            raise VMError(f"guest: {s.markers('pc-error')[-1]}")
        if time.monotonic() > deadline:
            raise VMError(f"only {a.total} of {n} increments acknowledged within {timeout}s "
                          f"(largest batch reported: {a.largest})")
        time.sleep(0.05)


def _boot_checks(s: Session, boot: int, mode: str) -> tuple[dict[str, int], bool]:
    """Tells the guest what to do; returns the counters' values it starts with and whether the
    mount replayed the ext4 journal."""
    s.wait_marker("which-mode", 120)
    s.answer(mode)
    mounted = s.wait_marker("mounted", 120)
    if boot == 1:
        s.result("mount", mounted.split(" | ")[0])
        opts = mounted.split()[3] if len(mounted.split()) > 3 else ""
        s.expect(mounted.split()[2:3] == ["ext4"] and "rw" in opts.split(","),
                 f"the state disk is mounted read-write as ext4 ({mounted})")
    rec = s.wait_marker("recovery", 120)
    words = s.wait_marker("start-value", 120).split()
    if len(words) != len(COUNTERS) or not all(w.isdigit() for w in words):
        raise VMError(f"boot {boot}: start values {words!r}, expected {len(COUNTERS)} numbers")
    v = dict(zip(COUNTERS, map(int, words)))
    s.expect("damaged=0 " in rec, f"boot {boot}: no state file was damaged ({rec})")
    if boot == 1:
        s.expect(all(x == 0 for x in v.values()), f"a fresh disk starts at 0 ({v})")
    return v, "replayed=0" not in mounted


@scenario("kioskd-power-cut", display="none", timeout=900, setup=_setup, kernel_args=NO_TIMER_CHECK, udev=False, guest="kioskd-power-cut.sh")
def power_cut(s: Session) -> None:
    """State on a virtio-blk ext4 disk; QEMU killed (SIGKILL / QMP quit) at random moments while concurrent clients' increments are acknowledged in batches; every acknowledged increment is there after the next boot, none applied twice."""
    seed = int(os.environ.get("KIOSK_POWERCUT_SEED", str(time.time_ns() % 1_000_000_007)))
    rng = random.Random(seed)
    s.result("seed", seed)
    if EATMYDATA and not glob.glob(os.path.join(s.arts.root, "usr/lib/*-linux-gnu/libeatmydata.so*")):
        raise VMError("KIOSK_POWERCUT_EATMYDATA=1 needs Debian's eatmydata (apt-get install eatmydata)")
    if CLIENTS < 1:
        raise VMError(f"KIOSK_POWERCUT_CLIENTS must be at least 1 (got {CLIENTS})")
    cycles = []
    s.result("cache", CACHE)
    s.result("clients", CLIENTS)
    mode = f"stream {CLIENTS}" + (" eatmydata" if EATMYDATA else "")
    v0, replayed = _boot_checks(s, s.boots, mode)
    for cycle in range(1, CYCLES + 1):
        boot = s.boots
        s.wait_marker("streaming", 60)
        # A random moment in the burst: after a random number of acknowledged increments (at
        # least two per client, so all of them are running), plus up to one increment's time
        # (so the cut lands anywhere inside a request, a batch's commit or between them).
        n = rng.randint(2 * CLIENTS, 12 * CLIENTS)
        t0 = time.monotonic()
        _wait_acks(s, boot, n, 300)
        per_inc = (time.monotonic() - t0) / n
        time.sleep(rng.uniform(0, per_inc))
        how = "quit" if cycle % 2 else "kill"
        s.cut_power(how)
        acks = _acks(s, boot)
        log(f"power cut {cycle}/{CYCLES} ({how}): started at {v0}, "
            f"{ {c: len(v) for c, v in acks.values.items()} } acknowledged, largest batch {acks.largest}")
        _boot_args(s, s.boots + 1)
        s.boot_again()
        last = cycle == CYCLES
        v, replayed_next = _boot_checks(s, s.boots, "final" if last else mode)
        for problem in power_cut_problems(boot, v0, acks.values, v, PER_COUNTER):
            s.expect(False, problem)
        cycles.append({"start": v0, "replayed": replayed, "cut": how, "largest_batch": acks.largest,
                       "acked": {c: len(x) for c, x in acks.values.items()},
                       "last_ack": {c: max(x, default=v0[c]) for c, x in acks.values.items()},
                       "after": v})
        v0, replayed = v, replayed_next
        if s.failures:
            break
    s.result("cycles", cycles)
    s.result("acknowledged", {c: sum(x["acked"][c] for x in cycles) for c in COUNTERS})
    s.result("applied_unanswered", {c: sum(x["after"][c] - x["start"][c] - x["acked"][c] for x in cycles) for c in COUNTERS})
    s.result("largest_batch", max((x["largest_batch"] or 0 for x in cycles), default=0))
    s.result("final_value", v0)
    s.result("journal_replays", sum(1 for x in cycles if x["replayed"]) + (1 if replayed else 0))
    if s.failures:
        return
    s.expect(len(cycles) == CYCLES, f"one boot per cut plus the final one ({len(cycles) + 1} boots for {CYCLES} cuts)")
    s.expect(s.wait_marker("kioskd-exit", 60) == "0", "kioskd stopped cleanly on SIGTERM")
    s.expect(s.wait_marker("umount", 60) == "0", "the state disk unmounted")
    fsck = s.wait_marker("fsck", 120)
    s.result("fsck", fsck)
    s.expect(fsck.startswith("0 "), f"e2fsck -fn finds the file system clean after the cuts ({fsck})")
