"""kioskd's Debian package under a real systemd (PID 1, systemd-boot.sh): `apt-get install` of the
.deb on a root that has kioskd's dependencies but not kioskd, offline, with the package's own
config; the unit the package enables and starts shows the live clock (pixels against the scaled
formula) with the first-boot setup QR code over it (decoded: the address and code `kioskctl status`
names); a phone pairing with that code is the owner, may change a setting (the file under /etc
unchanged), and the code leaves the screen; `apt-get remove` stops it and the text console is
shown again; `apt-get purge` deletes the state (/var/lib/kioskd) and /etc/kioskd.

The .deb comes from `vmtest.py --deb PATH` (KIOSK_DEB); the host copies it into the run directory,
which the guest sees. Meant for the aarch64 root (scripts/vm/arm64-root.sh: Debian 13 with
kioskd's runtime libraries); on x86 the host root must have them too."""

import os
import shutil
import subprocess

from vmharness import Session, VMError, clock_rgb, clock_second, kv, scenario, text_console_problem

# Where the clock's colour is read: a corner the setup card (centred) and the "time not
# synchronised" mark (top left) leave alone.
CORNER = (0.97, 0.03)


def _qr(path: str) -> str:
    """The QR code zbarimg reads in the screendump at `path` ("" when none)."""
    try:
        r = subprocess.run(["zbarimg", "--quiet", "--raw", path], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise VMError("zbarimg is not installed (zbar-tools, scripts/apt-vm.txt)")
    return r.stdout.strip()


def _copy_deb(s: Session) -> None:
    deb = os.environ.get("KIOSK_DEB", "")
    if not deb or not os.path.isfile(deb):
        raise VMError(f"no kioskd .deb (vmtest.py --deb PATH, or KIOSK_DEB): {deb!r}")
    shutil.copy2(deb, os.path.join(s.rundir, os.path.basename(deb)))
    s.result("deb", os.path.basename(deb))


@scenario("kioskd-package-apt", display="virtio-gpu-pci", timeout=600, boot="scripts/vm/systemd-boot.sh",
          prelude="systemd-prelude.sh", ready_timeout=240, setup=_copy_deb, guest="kioskd-package.sh")
def package_apt(s: Session) -> None:
    """The .deb installed offline with apt under systemd: the unit starts and shows the clock; remove stops it and restores the console; purge deletes the state."""
    b = s.wait_marker("basic", 240).split()
    s.result("basic_target_s", round(float(b[1]) - float(b[0]), 2) if len(b) == 2 else b)
    s.result("systemd", s.wait_marker("systemd", 60))
    fresh = kv(s.wait_marker("fresh", 60))
    s.result("fresh", fresh)
    s.expect(fresh.get("bin") == "no" and fresh.get("state") == "no" and "installed" not in fresh.get("kioskd", "").replace("not-installed", ""),
             f"the root has no kioskd before the install: {fresh}")
    console = s.console_before()

    inst = kv(s.wait_marker("installed", 300))
    t = inst.get("t", "0 0").split()
    s.result("apt_install_s", round(float(t[1]) - float(t[0]), 2) if len(t) == 2 else t)
    s.result("installed", {k: inst.get(k) for k in ("rc", "active", "enabled", "user")})
    s.expect(inst.get("rc") == "0", f"apt-get install ./kioskd_*.deb offline exits 0: {inst.get('log')}")
    s.expect(inst.get("active") == "active", f"the package started kioskd.service: {inst.get('active')}")
    s.expect(inst.get("enabled") == "enabled", f"the package enabled kioskd.service: {inst.get('enabled')}")
    s.expect("uid=" in inst.get("user", ""), f"the package created the kioskd user: {inst.get('user')}")
    if inst.get("rc") != "0" or inst.get("active") != "active":
        return

    # First boot, no shell: the packaged config shows the owner's setup code over the clock; the
    # QR code on the screen is the address with the code that `kioskctl status` names.
    setup = kv(s.wait_marker("setup", 60))
    s.result("setup", setup)
    s.expect(setup.get("web", "").startswith('listen = "0.0.0.0:8080";setup = true;'),
             f"the packaged config serves the phone page on the LAN port with the setup code: {setup.get('web')}")
    s.expect(len(setup.get("code", "")) >= 6 and setup.get("url", "").endswith("#pair=" + setup.get("code", "-")),
             f"kioskctl status names the setup code and its address: {setup.get('setup')}")
    shot = s.wait_screen(lambda i: _qr(i.path) != "", 15, "setup", what="a QR code on the screen (the setup card)")
    qr = _qr(shot.path)
    s.result("setup_qr", qr)
    s.expect(qr != "" and qr == setup.get("url"), f"the screen shows the setup QR code of {setup.get('url')!r}: read {qr!r}")
    s.answer()
    paired = kv(s.wait_marker("paired", 90))
    s.result("paired", paired)
    s.expect(paired.get("pair") == "200" and paired.get("cookie") == "yes" and paired.get("role") == "owner",
             f"the phone pairs with the setup code as the owner: {paired}")
    s.expect(paired.get("settings") == "200" and "set from the phone by owner phone" in paired.get("hour_format", ""),
             f"the owner changes a setting from the phone: {paired}")
    s.expect(paired.get("conf_same") == "yes", "the config file under /etc is not written by the phone's change")
    s.expect(paired.get("setup", "").startswith("done: owner owner phone paired "), f"status says setup is done: {paired.get('setup')}")
    gone = s.wait_screen(lambda i: _qr(i.path) == "", 15, "setup-gone", what="the setup QR code leaves the screen once the owner paired")
    s.result("after_setup", f"no QR code, centre {gone.pixel_at(0.5, 0.5)}")

    # The live clock: the background is the scaled colour of the guest's second, and it changes.
    t1 = float(s.wait_marker("shot1", 30))
    img1 = s.screendump("clock1")
    s.answer()
    t1b = float(s.wait_marker("shot1-done", 30))
    off = clock_second(img1, t1, t1b, at=CORNER)
    s.result("clock1", {"rgb": img1.pixel_at(*CORNER), "expected": clock_rgb(t1), "second_offset": off})
    s.expect(off is not None, f"the unit shows the clock: background {img1.pixel_at(*CORNER)}, "
                              f"expected about {clock_rgb(t1)} (guest time {t1:.1f})")
    t2 = float(s.wait_marker("shot2", 30))
    img2 = s.wait_screen(lambda i: i.pixel_at(*CORNER) != img1.pixel_at(*CORNER), 8, "clock2",
                         what="the clock background changes with the next second")
    s.answer()
    t2b = float(s.wait_marker("shot2-done", 30))
    off2 = clock_second(img2, t2, t2b, at=CORNER)
    s.result("clock2", {"rgb": img2.pixel_at(*CORNER), "expected": clock_rgb(t2), "second_offset": off2})
    s.expect(off2 is not None, f"the next second's colour too: {img2.pixel_at(*CORNER)} vs {clock_rgb(t2)}")
    unit = kv(s.wait_marker("unit", 30))
    s.result("unit", unit)
    s.expect(unit.get("User") == "kioskd", f"the unit runs as kioskd: {unit.get('User')}")

    rm = kv(s.wait_marker("removed", 180))
    s.result("removed", {k: rm.get(k) for k in ("rc", "active", "bin", "state", "conf", "getty")})
    s.expect(rm.get("rc") == "0", f"apt-get remove kioskd exits 0: {rm.get('log')}")
    s.expect(rm.get("active") in ("inactive", "unknown"), f"remove stopped kioskd.service: {rm.get('active')}")
    s.expect(rm.get("bin") == "no", "remove deleted /usr/bin/kioskd")
    s.expect(rm.get("conf") == "yes", "remove kept the conffile /etc/kioskd/kioskd.toml")
    s.expect(rm.get("state") == "yes", "remove kept the state directory /var/lib/kioskd")
    if rm.get("getty") == "active":
        # The package's prerm gives tty1 its login prompt back (the unit conflicts with it):
        # the screen is the text console with the prompt, not the banner from before.
        after = s.wait_screen(lambda i: text_console_problem(i) is None, 15, "after-remove",
                              what="the text console (login prompt on tty1) after apt-get remove")
        s.result("console_after_remove", f"text console with getty, {after.lit()} lit pixels")
    else:
        s.expect_console_back(console, "after-remove", "after apt-get remove the text console is shown again as it was")
        s.result("console_after_remove", "as before kioskd")
    s.answer()

    pg = kv(s.wait_marker("purged", 180))
    s.result("purged", {k: pg.get(k) for k in ("rc", "status", "state", "private", "etc", "unit")})
    s.expect(pg.get("rc") == "0", f"apt-get purge kioskd exits 0: {pg.get('log')}")
    s.expect(pg.get("state") == "no" and pg.get("private") == "no", f"purge deleted /var/lib/kioskd: {pg}")
    s.expect(pg.get("etc") == "no", "purge deleted /etc/kioskd")
    s.expect(pg.get("unit") == "no", "the unit file is gone")
    s.expect("install ok installed" not in pg.get("status", "") and "config-files" not in pg.get("status", ""),
             f"dpkg knows kioskd no more: {pg.get('status')}")

