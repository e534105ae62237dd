#!/usr/bin/env python3
"""Tier-1 tests of the aarch64 binaries under qemu-user (no VM): config checks, headless snapshots
checked by pixels, and kioskctl against a headless kioskd. Prints PASS/FAIL/SKIP per check and
exits 1 if any check failed.

usage: tier1.py [--bin DIR] [--sysroot DIR] [--ref-kioskd PATH] [--only NAME[,NAME]]
  --bin         aarch64 kioskd, kioskctl (default: from .build-arm64/READY)
  --sysroot     arm64 root for qemu-aarch64-static -L (default: from .build-arm64/READY)
  --ref-kioskd  an amd64 kioskd whose snapshots the arm64 ones are compared with (default:
                $KIOSKD_RELEASE_BIN, .build-bench/release/kioskd, .build/release/kioskd,
                .build/debug/kioskd: the first that exists; without one those comparisons SKIP)
"""
import argparse
import datetime
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zoneinfo

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import pngpix  # noqa: E402

results = []


def no_core():  # a crashing guest under qemu-user would dump a core file of several hundred MB
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def report(name, ok, detail=""):
    word = {True: "PASS", False: "FAIL", None: "SKIP"}[ok]
    results.append((name, ok))
    print(f"tier1: {word} {name}" + (f": {detail}" if detail else ""), flush=True)


class Env:
    def __init__(self, args):
        ready = {}
        rp = os.path.join(CHECKOUT, ".build-arm64", "READY")
        if os.path.exists(rp):
            for line in open(rp):
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    ready[k] = v
        self.kioskd = os.path.join(args.bin, "kioskd") if args.bin else ready.get("kioskd")
        self.kioskctl = os.path.join(args.bin, "kioskctl") if args.bin else ready.get("kioskctl")
        self.sysroot = args.sysroot or ready.get("sysroot")
        for what, p in (("kioskd", self.kioskd), ("kioskctl", self.kioskctl), ("sysroot", self.sysroot)):
            if not p or not os.path.exists(p):
                sys.exit(f"tier1: {what} not found ({p}); run scripts/build-arm64.sh or pass --bin/--sysroot")
        self.qemu = shutil.which("qemu-aarch64-static") or sys.exit("tier1: qemu-aarch64-static missing (apt: qemu-user-static)")
        ref = args.ref_kioskd
        if not ref:
            for c in (os.environ.get("KIOSKD_RELEASE_BIN", ""), ".build-bench/release/kioskd",
                      ".build/release/kioskd", ".build/debug/kioskd"):
                if c and os.access(os.path.join(CHECKOUT, c), os.X_OK):
                    ref = os.path.join(CHECKOUT, c)
                    break
        self.ref = ref
        self.tmp = tempfile.mkdtemp(prefix="kioskd-tier1-")
        # A plain environment: the host's locale and XDG settings do not leak into the guest.
        self.env = {"PATH": "/usr/bin:/bin", "HOME": self.tmp, "LANG": "C.UTF-8", "TZ": "UTC",
                    "XDG_RUNTIME_DIR": self.tmp, "QEMU_LD_PREFIX": self.sysroot}

    def arm(self, binary, *args):
        return [self.qemu, "-L", self.sysroot, binary, *args]

    def run(self, cmd, timeout=120):
        t = time.time()
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout,
                           cwd=CHECKOUT, preexec_fn=no_core)
        return p, time.time() - t


def log_summary(text):
    """A crash's message rather than the end of its stack trace."""
    for line in text.splitlines():
        if "Fatal error" in line or "fatal error" in line:
            return line.strip()
    return text.strip()[-800:]


def config_file(env, name, body):
    """A config in the temporary folder (themes from config/themes, state in the folder)."""
    path = os.path.join(env.tmp, name)
    with open(path, "w") as f:
        f.write(f'theme_dir = "{CHECKOUT}/config/themes"\n')
        f.write(body)
    return path


def source_config(name, drop_top=("theme_dir",)):
    return open(os.path.join(CHECKOUT, "config", name)).read()


# --------------------------------------------------------------------------- checks

def check_configs(env):
    for name in sorted(os.listdir(os.path.join(CHECKOUT, "config"))):
        if not name.endswith(".toml"):
            continue
        path = os.path.join(CHECKOUT, "config", name)
        p, dt = env.run(env.arm(env.kioskd, "--config", path, "--check-config"))
        ok = p.returncode == 0 and f"{path}: OK" in p.stdout
        report(f"check-config {name}", ok, f"{dt:.1f} s" if ok else f"exit {p.returncode}: {(p.stdout + p.stderr).strip()[-400:]}")
    bad = config_file(env, "bad.toml", source_config("wall-clock.toml").replace("color_mode =", "colour_mode ="))
    p, _ = env.run(env.arm(env.kioskd, "--config", bad, "--check-config"))
    text = p.stderr.strip()
    ok = p.returncode == 78 and bad in text and "colour_mode" in text
    report("check-config bad config (unknown key) exits 78 naming file and key", ok, text[-300:])


def snapshot(env, binary_cmd, config, out, *extra):
    cmd = binary_cmd + ["--config", config, "--backend", "headless", "--snapshot", out, *extra]
    for attempt in range(3):
        p, dt = env.run(cmd)
        if p.returncode == 0 and os.path.exists(out):
            note = f" (attempt {attempt + 1}: the ones before timed out)" if attempt else ""
            return pngpix.read_png(out), dt, note
        # kioskd allows a snapshot 10 s for its first frame; emulated on a machine busy with other
        # builds that can run out. Only that timeout is retried.
        if "no frame was drawn within" not in p.stderr:
            break
    return None, dt, f"exit {p.returncode}: {log_summary(p.stdout + p.stderr)}"


def scaled(h, m, s):
    r = lambda v, mx: int(v * 255 / mx + 0.5)
    return (r(h, 24), r(m, 60), r(s, 60))


def check_clock(env):
    cfg = os.path.join(CHECKOUT, "config", "wall-clock.toml")
    tz = zoneinfo.ZoneInfo("Europe/Berlin")  # the config's time_zone
    out = os.path.join(env.tmp, "clock.png")
    t0 = time.time()
    img, dt, err = snapshot(env, env.arm(env.kioskd), cfg, out)
    t1 = time.time()
    if img is None:
        return report("clock snapshot", False, err)
    expected = {}
    for sec in range(int(t0) - 1, int(t1) + 2):
        lt = datetime.datetime.fromtimestamp(sec, tz)
        expected[scaled(lt.hour, lt.minute, lt.second)] = lt.strftime("%H:%M:%S")
    hist = img.histogram()
    top, count = max(hist.items(), key=lambda kv: kv[1])
    share = count / (img.width * img.height)
    ok = top in expected and share > 0.8 and (img.width, img.height) == (1920, 1080)
    hexcol = "#%02X%02X%02X" % top
    report("clock snapshot background is the scaled colour of the time", ok,
           f"{img.width}x{img.height}, background {hexcol} on {share:.0%} of the pixels"
           + (f" = {expected[top]} Europe/Berlin" if top in expected else f", expected one of {sorted('#%02X%02X%02X' % c for c in expected)}")
           + f", {dt:.1f} s{err}")
    # The digits are drawn: a good share of pixels that are neither the background nor near it.
    other = sum(c for p, c in hist.items() if max(abs(p[i] - top[i]) for i in range(3)) > 60)
    report("clock snapshot shows text", other > 5000, f"{other} text pixels")


def compare_with_reference(env, name, img_arm, config, *extra):
    if not env.ref:
        return report(f"{name}: arm64 matches amd64", None, "no amd64 kioskd to compare with")
    out = os.path.join(env.tmp, f"{name}-amd64.png")
    ref, _, err = snapshot(env, [env.ref], config, out, *extra)
    if ref is None:
        return report(f"{name}: arm64 matches amd64", False, f"amd64 snapshot failed: {err}")
    n, worst = pngpix.diff(img_arm, ref)
    block = pngpix.block_diff(img_arm, ref)
    total = img_arm.width * img_arm.height
    # Same drawing code; cairo, pango and freetype may be other versions (Debian 13 here, the
    # host's on amd64), so glyph edges may be antialiased differently: a few pixels, and no
    # 16×16 block whose mean colour moves by more than 24 (another digit moves blocks by ~255).
    ok = n <= total * 0.02 and block <= 24
    report(f"{name}: arm64 matches amd64 ({os.path.relpath(env.ref, CHECKOUT)})", ok,
           f"{n} of {total} pixels differ, by at most {worst}; largest 16x16 block mean difference {block:.1f}")
    return ref


def amber(p):  # the scoreboard theme's primary #FFB300, also where shaded darker
    return p[0] > 90 and p[0] * 0.5 < p[1] < p[0] * 0.85 and p[2] < p[0] * 0.3


def check_counter(env, state_dir=None):
    body = source_config("scoreboard.toml")
    if state_dir:
        cfg = config_file(env, "score-state.toml", f'state_dir = "{state_dir}"\n' + body)
        name = "counter snapshot with saved values"
    else:
        cfg = config_file(env, "score.toml", 'state = "volatile"\n' + body)
        name = "counter snapshot"
    out = os.path.join(env.tmp, name.replace(" ", "-") + ".png")
    img, dt, err = snapshot(env, env.arm(env.kioskd), cfg, out)
    if img is None:
        return report(name, False, err)
    windows = pngpix.column_runs(img, amber, 0, img.height, 100)
    report(name + ": six digit windows", len(windows) == 6, f"amber columns {windows}, {dt:.1f} s{err}")
    compare_with_reference(env, name, img, cfg)
    if state_dir is None:
        env.counter_zero = (img, windows)
    elif getattr(env, "counter_zero", None) and len(windows) == 6:
        # HOME 042, AWAY 001 against 000 000: exactly windows 2, 3 and 6 changed.
        zero, _ = env.counter_zero
        changed = [pngpix.region_diff(img, zero, x0, x1, 0, img.height) > 500 for x0, x1 in windows]
        report(name + ": digits 042 001 where 000 000 was", changed == [False, True, True, False, False, True],
               "changed windows " + "".join("x" if c else "." for c in changed))


def check_paint(env):
    cfg = config_file(env, "paint.toml", 'state = "volatile"\n' + source_config("painting-kiosk.toml"))
    out = os.path.join(env.tmp, "paint.png")
    stroke = ["--stroke", "0.25,0.55:0.75,0.55"]
    img, dt, err = snapshot(env, env.arm(env.kioskd), cfg, out, *stroke)
    if img is None:
        return report("paint stroke snapshot", False, err)
    bg = (0xFA, 0xFA, 0xFA)
    y = int(img.height * 0.55)
    xs = range(int(img.width * 0.3), int(img.width * 0.7), 16)
    on = [img.pixel(x, y) for x in xs]
    off = [img.pixel(x, int(img.height * 0.40)) for x in xs]
    painted = sum(1 for p in on if max(abs(p[i] - bg[i]) for i in range(3)) > 100)
    clean = sum(1 for p in off if p == bg)
    colour = "#%02X%02X%02X" % on[len(on) // 2]
    ok = painted == len(on) and clean == len(off)
    report("paint stroke drawn along its path, canvas clean beside it", ok,
           f"{painted}/{len(on)} pixels on the path painted ({colour}), {clean}/{len(off)} beside it background, {dt:.1f} s{err}")
    compare_with_reference(env, "paint stroke snapshot", img, cfg, *stroke)


def check_control(env):
    state = os.path.join(env.tmp, "state")
    os.makedirs(state, exist_ok=True)
    sock = os.path.join(env.tmp, "control.sock")
    cfg = config_file(env, "daemon.toml", f'state_dir = "{state}"\n' + source_config("scoreboard.toml")
                      + f'\n[control]\nsocket = "{sock}"\n')
    log = open(os.path.join(env.tmp, "daemon.log"), "w+")
    d = subprocess.Popen(env.arm(env.kioskd, "--config", cfg, "--backend", "headless"), env=env.env,
                         stdout=log, stderr=subprocess.STDOUT, cwd=CHECKOUT, preexec_fn=no_core)
    try:
        deadline = time.time() + 60
        while not os.path.exists(sock) and d.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        if not os.path.exists(sock):
            log.seek(0)
            return report("kioskctl against kioskd: daemon up", False,
                          f"no control socket (daemon exit {d.poll()}): {log_summary(log.read())}")
        report("kioskctl against kioskd: daemon up, control socket made", True)

        def ctl(*a):
            p, _ = env.run(env.arm(env.kioskctl, *a, "--socket", sock), timeout=60)
            return p

        p = ctl("status")
        report("kioskctl status", p.returncode == 0 and "score" in p.stdout,
               " | ".join(p.stdout.strip().splitlines()[:3]) if p.returncode == 0 else f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
        steps = [(("counter", "home", "set", "41"), None), (("counter", "home", "inc"), None),
                 (("counter", "home", "get"), "42"), (("counter", "away", "inc"), None),
                 (("counter", "away", "get"), "1")]
        for a, want in steps:
            p = ctl(*a)
            ok = p.returncode == 0 and (want is None or p.stdout.strip() == want)
            report("kioskctl " + " ".join(a), ok, (f"read back {p.stdout.strip()!r}" + (f", want {want!r}" if want else ""))
                   if p.returncode == 0 else f"exit {p.returncode}: {(p.stdout + p.stderr).strip()[-300:]}")
    finally:
        if d.poll() is None:
            d.send_signal(signal.SIGTERM)
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait()
        log.seek(0)
        text = log.read()
        crashed = "Fatal error" in text or d.returncode not in (0, -signal.SIGTERM)
        report("kioskd stopped cleanly on SIGTERM", not crashed,
               f"exit {d.returncode}" + (f": {log_summary(text)}" if crashed else ""))
    # A clean stop writes the state journal's values into the state files and empties it: what is
    # left is the journal's header alone (JOURNAL_HEADER bytes: magic, generation, CRC), no record.
    files = {f: open(os.path.join(state, f)).read().strip() for f in os.listdir(state) if f.endswith(".state")}
    home = [v for f, v in files.items() if "home" in f]
    journal = os.path.join(state, "journal.log")
    left = os.path.getsize(journal) if os.path.exists(journal) else 0
    header_only = left == 0 or (left == JOURNAL_HEADER and open(journal, "rb").read(8) == b"kioskdJ2")
    report("counter value on disk after the stop", bool(home) and "42" in home[0] and header_only,
           f"{files}, journal {left} bytes")
    check_counter(env, state_dir=state)


# The state journal's file header (Sources/KioskDaemon/StateJournalFormat.swift, headerSize).
JOURNAL_HEADER = 20

CHECKS = {"config": check_configs, "clock": check_clock, "counter": check_counter,
          "paint": check_paint, "control": check_control}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin")
    ap.add_argument("--sysroot")
    ap.add_argument("--ref-kioskd")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (PNGs, logs)")
    args = ap.parse_args()
    env = Env(args)
    print(f"tier1: kioskd {env.kioskd}\ntier1: sysroot {env.sysroot}\ntier1: amd64 reference {env.ref or '(none)'}", flush=True)
    t = time.time()
    names = args.only.split(",") if args.only else list(CHECKS)
    for n in names:
        try:
            CHECKS[n](env)
        except Exception as e:  # a check that breaks is a failure, and the others still run
            report(n, False, f"{type(e).__name__}: {e}")
    failed = [n for n, ok in results if ok is False]
    if args.keep or failed:
        print(f"tier1: files kept in {env.tmp}")
    else:
        shutil.rmtree(env.tmp, ignore_errors=True)
    print(f"tier1: {sum(1 for _, ok in results if ok)} passed, {len(failed)} failed, "
          f"{sum(1 for _, ok in results if ok is None)} skipped in {time.time() - t:.0f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
