"""kioskd upgraded N → N+1 from its signed apt repository under a real systemd while it shows a
score and takes increments from the guest, then downgraded to N (refused by kioskd N: exit 78).

The repositories come from `scripts/upgrade-debs.sh` (KIOSK_UPGRADE_REPOS: a folder with
`apt-n/` and `apt-n1/`, the same reprepro repository before and after N+1 was added, and the files
`version-n`, `version-n1`); the host copies them into the run directory, which the guest sees.
Meant for the aarch64 root (scripts/vm/arm64-root.sh)."""

import os
import shutil
import time
from typing import Optional

from vmharness import Session, VMError, kv, scenario, text_console_problem

# config/themes/museum.toml: the background, the digit windows (primary) and the text colour.
MUSEUM, PRIMARY, TEXT = (0xF4, 0xF1, 0xEA), (0x2E, 0x5E, 0x8C), (0x2B, 0x2B, 0x2B)


def _near(p, rgb, tol: int = 6) -> bool:
    return max(abs(a - b) for a, b in zip(p, rgb)) <= tol


def score_problem(img) -> Optional[str]:
    """None when `img` shows the score scene in the museum theme and nothing over it: the light
    background in two opposite corners, the digit windows (more than 10 % of the screen in the
    primary colour) and no pairing code over them (under 2 % in the text colour; the setup code's
    QR code and letters are about 8 %). Every fourth pixel of every fourth row is looked at."""
    for fx, fy in ((0.03, 0.03), (0.97, 0.97)):
        if not _near(img.pixel_at(fx, fy), MUSEUM):
            return f"pixel at ({fx}, {fy}) is {img.pixel_at(fx, fy)}, not the museum background {MUSEUM}"
    d, stride, n, windows, text = img.data, img.width * 3, 0, 0, 0
    (pr, pg, pb), (tr, tg, tb) = PRIMARY, TEXT
    for y in range(0, img.height, 4):
        row = d[y * stride:(y + 1) * stride]
        for r, g, b in zip(row[0::12], row[1::12], row[2::12]):
            n += 1
            windows += abs(r - pr) <= 6 and abs(g - pg) <= 6 and abs(b - pb) <= 6
            text += abs(r - tr) <= 6 and abs(g - tg) <= 6 and abs(b - tb) <= 6
    if windows * 10 <= n:
        return f"{100 * windows / n:.1f} % of the screen in the digit windows' colour {PRIMARY}, expected more than 10 %"
    if text * 50 >= n:
        return f"{100 * text / n:.1f} % of the screen in the text colour {TEXT}: something (a pairing code?) is over the score"
    return None


def shows_score(img) -> bool:
    return score_problem(img) is None


def _copy_repos(s: Session) -> None:
    src = os.environ.get("KIOSK_UPGRADE_REPOS", "")
    need = ("apt-n", "apt-n1", "version-n", "version-n1")
    if not src or not all(os.path.exists(os.path.join(src, n)) for n in need):
        raise VMError(f"no upgrade repositories (scripts/upgrade-debs.sh; KIOSK_UPGRADE_REPOS): {src!r}")
    for n in need:
        p = os.path.join(src, n)
        (shutil.copytree if os.path.isdir(p) else shutil.copy2)(p, os.path.join(s.rundir, n))
    s.result("versions", [open(os.path.join(src, n)).read().strip() for n in ("version-n", "version-n1")])


@scenario("kioskd-upgrade-apt", display="virtio-gpu-pci", timeout=900, boot="scripts/vm/systemd-boot.sh",
          prelude="systemd-prelude.sh", ready_timeout=240, setup=_copy_repos, guest="kioskd-upgrade.sh")
def upgrade_apt(s: Session) -> None:
    """N from the signed repository, a score, a paired phone, an edited conffile; apt-get upgrade to N+1 during a counter burst keeps them all and shows the score again; a downgrade is refused with exit 78 and the state left alone."""
    vn, vn1 = (open(os.path.join(s.rundir, n)).read().strip() for n in ("version-n", "version-n1"))
    up_n, up_n1 = vn.rsplit("-", 1)[0], vn1.rsplit("-", 1)[0]
    b = s.wait_marker("basic", 240).split()
    s.result("basic_target_s", round(float(b[1]) - float(b[0]), 2) if len(b) == 2 else b)

    inst = kv(s.wait_marker("installed", 300))
    t = inst.get("t", "0 0").split()
    s.result("apt_install_s", round(float(t[1]) - float(t[0]), 2) if len(t) == 2 else t)
    s.expect(inst.get("rc") == "0" and inst.get("version") == vn, f"apt-get install kioskd from the signed repository installs {vn}: {inst}")
    prep = kv(s.wait_marker("prepared", 180))
    s.result("prepared", prep)
    s.expect(prep.get("score") == "42", f"the score was set: {prep.get('score')}")
    s.expect(prep.get("session") == "200" and "phone" in prep.get("devices", ""), f"the phone is paired: {prep}")
    s.expect(prep.get("settings") == "200" and "set from the phone by phone" in prep.get("setting", ""),
             f"the phone's setting is kept in the settings layer: {prep}")
    s.expect(prep.get("version") == f"kioskd {up_n}", f"kioskctl status reports {up_n}: {prep.get('version')}")
    s.wait_marker("score-shown", 60)
    before = s.wait_screen(shows_score, 20, "score-before", what="the score in the museum theme before the upgrade")
    s.answer()

    # While apt upgrades: screendumps one after another, to time how long the score is not shown.
    s.wait_marker("upgrading", 120)
    t_start, gone, back, shots = time.monotonic(), None, None, 0
    while not s.markers("upgraded") and time.monotonic() - t_start < 600:
        img, now = s.screendump("during"), time.monotonic()
        os.unlink(img.path)  # each is 3 MB under its own name: keep none (a run took ~17 000)
        shots += 1
        problem = score_problem(img)
        if problem is not None and gone is None:
            gone = now
            s.result("screen_while_gone", "text console" if text_console_problem(img) is None else problem)
        elif problem is None and gone is not None and back is None:
            back = now
        # About 4 a second: QEMU writes each one (3 MB) on its main loop, on the host's CPU the
        # guest also needs (a run at ~17 a second took minutes to upgrade); 0.25 s is fine enough
        # for the bound below.
        time.sleep(0.25)
    up = kv(s.wait_marker("upgraded", 30))
    t = up.get("t", "0 0").split()
    s.result("apt_upgrade_s", round(float(t[1]) - float(t[0]), 2) if len(t) == 2 else t)
    s.result("upgraded", {k: up.get(k) for k in ("rc", "version", "dpkg", "active", "conf_kept", "dist", "prompt", "acked", "failed",
                                                 "first", "last", "final", "session", "devices", "setting", "gap", "restart", "fails")})
    s.expect(up.get("rc") == "0", f"apt-get upgrade exits 0: {up.get('log')}")
    s.expect(up.get("dpkg") == vn1 and up.get("version") == f"kioskd {up_n1}", f"the unit runs {up_n1}: kioskctl status {up.get('version')}, dpkg {up.get('dpkg')}")
    s.expect(up.get("conf_kept") == "yes" and not up.get("dist"), f"the edited conffile is kept as it was: {up}")
    s.expect(up.get("prompt") == "0", f"dpkg asked nothing about the conffile: {up.get('log')}")
    s.expect(up.get("session") == "200" and "phone" in up.get("devices", ""), f"the phone is still paired: {up}")
    s.expect(up.get("setting") == prep.get("setting"), f"the phone's setting is kept across the upgrade: {prep.get('setting')!r} then {up.get('setting')!r}")
    acked, final = int(up.get("acked", "0") or 0), int(up.get("final", "-1") or -1)
    lost = max(0, 42 + acked - final)
    s.result("changes", {"acknowledged": acked, "refused_or_unanswered": up.get("failed"), "final": final, "lost": lost})
    s.expect(acked > 0 and lost == 0, f"every acknowledged increment is kept: 42 + {acked} acknowledged, final {final}")
    s.expect(up.get("last") == up.get("final"), f"the last acknowledged value is the final one: {up.get('last')} vs {final}")
    gap = None if gone is None else (back - gone if back is not None else None)
    s.result("score_gone_s", {"screendumps": shots, "gap": None if gap is None else round(gap, 2), "journal_stop_to_first_frame_s": up.get("gap")})
    after = s.wait_screen(shows_score, 10, "score-after", what="the score shown by the new kioskd")
    # The target is 5 s on a board. Here most of the gap is the new kioskd's cold start under
    # TCG (quiet host: 4.75 s in all, 4.1 s of it from systemd's start to the first frame; ~30 ms
    # natively), so the VM's bound is 10 s: the emulator's speed, not the upgrade, would fail 5 s.
    s.expect(gap is not None and gap <= 10 or (gone is None and shots >= 3),
             f"the score is back on the screen within 10 s in the VM (screendumps: gone at {gone}, back at {back})")
    s.result("screen_differs_from_before", after.differs(before))
    s.answer()

    down = kv(s.wait_marker("downgraded", 300))
    s.result("downgraded", down)
    s.expect(down.get("dpkg") == vn, f"apt installed {vn} as asked: {down}")
    s.expect(down.get("active") == "failed" and down.get("status") == "78", f"kioskd {up_n} refuses the state {up_n1} wrote: unit {down.get('active')}, exit {down.get('status')}")
    s.expect(f"written by kioskd {up_n1}" in down.get("why", "") and f"this kioskd {up_n}" in down.get("why", ""),
             f"the error names both versions: {down.get('why')}")
    s.expect(down.get("same") == "yes", "the state files are byte for byte what N+1 left")
