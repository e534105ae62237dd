"""Harness self-checks: the VM boots, udev runs, DRM and input nodes exist, host and guest take turns."""

from vmharness import scenario, Session


@scenario("boot-smoke", display="VGA", guest="smoke.sh")
def boot_smoke(s: Session) -> None:
    """Boots with -device VGA: /dev/dri/card0 and /dev/uinput exist, the host answer reaches the guest."""
    dri = s.wait_marker("dri").split()
    s.result("dri", dri)
    s.expect("card0" in dri, f"/dev/dri/card0 exists (saw {dri})")
    s.expect(s.wait_marker("uinput") == "yes", "/dev/uinput exists")
    s.wait_marker("hello")
    img = s.screendump("console")
    s.result("screen", f"{img.width}x{img.height}")
    s.expect(img.width > 0 and img.height > 0, "screendump has a size")
    s.answer("ping-42")
    s.expect(s.wait_marker("echo") == "ping-42", "host answer reached the guest")


@scenario("systemd-smoke", display="VGA", timeout=300, boot="scripts/vm/systemd-boot.sh",
          prelude="systemd-prelude.sh", ready_timeout=240, guest="smoke.sh")
def systemd_smoke(s: Session) -> None:
    """systemd as PID 1 (systemd-boot.sh) reaches basic.target; DRM and uinput nodes; the host answer reaches the guest."""
    b = s.wait_marker("basic", 240).split()
    s.result("basic_target_s", round(float(b[1]) - float(b[0]), 2) if len(b) == 2 else b)
    sd = s.wait_marker("systemd", 60)
    s.result("systemd", sd)
    s.expect("pid1=systemd" in sd, f"systemd is PID 1: {sd}")
    boot_smoke(s)
