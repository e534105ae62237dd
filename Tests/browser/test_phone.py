#!/usr/bin/env python3
"""The phone page in a real browser: Debian's chromium, driven headless by Playwright.

Starts kioskd (headless backend; a scoreboard with counters HOME and AWAY, a paint and a clock
scene; [web] on a free loopback port), pairs a phone-sized page (390 x 844) with a code from
`kioskctl pair --print`, taps `HOME +1` three times and `AWAY +1` once, and checks what the page,
`kioskctl` and the kiosk's screen say. A second browser context pairs as a viewer by scanning
the QR code on the kiosk's screen (zbarimg reads it from `kioskctl screenshot`), sees the taps
live and is refused changes. A second kioskd with two outputs checks the Screen page per output;
a third with a game clock (run_clock) checks the clock on the Score page: shown, started and
stopped as `kioskctl status` says, set and adjusted to exact values, and a viewer who sees it run
but cannot change it.

    test_phone.py [--bin DIR] [--chromium PATH] [--screenshots DIR]

--screenshots also writes the page's scoreboard, paint and clock views (web-score.png,
web-paint.png, web-clock.png), the page beside the kiosk's screen (web-phone-and-kiosk.png) and
the game clock (web-gameclock.png) and the owner's Settings page (web-settings.png).
Prints one line per check and ends with "N passed, N failed"; exit status 1 when a check failed.
"""
import argparse
import json
import re
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

from playwright.sync_api import sync_playwright, expect

PHONE = {"width": 390, "height": 844}
SCREEN = (1280, 720)
LIVE_MS = 200          # a change appears on every open page within this
MINUS = "\u2212"


# ---------------------------------------------------------------- results

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok    {name}" + (f": {detail}" if detail else ""), flush=True)
        else:
            self.failed += 1
            print(f"FAIL  {name}" + (f": {detail}" if detail else ""), flush=True)
        return ok


class Stop(Exception):
    """A step the later checks depend on failed."""


# ---------------------------------------------------------------- PNG (no imaging library needed)

def read_png(path):
    """Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what cairo writes); returns (w, h, rows of (r, g, b))."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError(f"{path}: PNG depth {depth} colour type {color} interlace {interlace} not supported")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(line[i] for i in range(stride) if i % 4 < 3))
        prev = line
    return w, h, rows


def differing(a, b, box):
    """Pixels that differ between two decoded PNGs inside box (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = box
    n = 0
    for y in range(y0, y1):
        ra, rb = a[2][y], b[2][y]
        for x in range(x0, x1):
            if ra[3 * x:3 * x + 3] != rb[3 * x:3 * x + 3]:
                n += 1
    return n


# ---------------------------------------------------------------- kioskd

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# The scoreboard kiosk: counters HOME and AWAY, a paint and a clock scene on one screen.
SCOREBOARD = f"""[display]
backend = "headless"
headless_size = "{SCREEN[0]}x{SCREEN[1]}"
[scenes]
order = ["score", "paint", "clock"]
[scene.score]
kind = "counter"
digits = 3
roll_ms = 0
[[scene.score.counter]]
name = "home"
label = "HOME"
[[scene.score.counter]]
name = "away"
label = "AWAY"
[scene.paint]
kind = "paint"
[scene.clock]
kind = "clock"
time_zone = "UTC"
"""

# Two screens (config/two-screens.toml's shape): the hall's HDMI-A-1 shows the score, the
# upright DSI-1 panel the score and the clock.
TWO_SCREENS = """[display]
backend = "headless"
[[output]]
connector = "HDMI-A-1"
mode = "640x360"
scenes = ["score"]
[[output]]
connector = "DSI-1"
mode = "320x240"
rotation = 90
scenes = ["score", "clock"]
[scene.score]
kind = "counter"
[[scene.score.counter]]
name = "home"
label = "HOME"
[scene.clock]
kind = "clock"
time_zone = "UTC"
"""


class Kiosk:
    def __init__(self, bindir, tmp, body=SCOREBOARD, setup=False):
        self.kioskd = os.path.join(bindir, "kioskd")
        self.kioskctl_bin = os.path.join(bindir, "kioskctl")
        for b in (self.kioskd, self.kioskctl_bin):
            if not os.access(b, os.X_OK):
                raise Stop(f"no {b}: build kioskd and kioskctl first (swift build), or pass --bin")
        self.dir = tmp
        self.sock = os.path.join(tmp, "c.sock")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        state = os.path.join(tmp, "state")
        os.makedirs(os.path.join(state, "paintings"))
        self.config = os.path.join(tmp, "kioskd.toml")
        with open(self.config, "w") as f:
            f.write(f"""state_dir = "{state}"
theme = "default"
{body}
[control]
socket = "{self.sock}"
[web]
listen = "127.0.0.1:{self.port}"
url = "{self.base}"
setup = {"true" if setup else "false"}
""")
        self.log_path = os.path.join(tmp, "kioskd.log")
        self.proc = None

    def add_painting(self, png):
        """A saved painting for the gallery (as the paint scene's idle save leaves them)."""
        shutil.copy(png, os.path.join(self.dir, "state", "paintings", "painting-20261124-101500.png"))

    def start(self):
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([self.kioskd, "--config", self.config, "--log-level", "info"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise Stop(f"kioskd exited with {self.proc.returncode}:\n{self.log_text()}")
            if time.monotonic() > deadline:
                raise Stop(f"kioskd did not answer status and listen on port {self.port} within 60 s:\n{self.log_text()}")
            if os.path.exists(self.sock) and self.ctl("status", check=False).returncode == 0:
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    pass
            time.sleep(0.05)  # bounded polling of "kioskd answers and listens"

    def log_text(self):
        try:
            return open(self.log_path).read()[-4000:]
        except OSError:
            return ""

    def ctl(self, *args, check=True):
        r = subprocess.run([self.kioskctl_bin, *args, "--socket", self.sock], capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            raise Stop(f"kioskctl {' '.join(args)} exited {r.returncode}: {r.stdout}{r.stderr}")
        return r

    def ctl_json(self, *args):
        return json.loads(self.ctl(*args, "--json").stdout)

    def screenshot(self, path):
        self.ctl("screenshot", path)
        return read_png(path)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def zbar(path):
    """The QR codes zbarimg reads in a PNG (an empty list when none)."""
    r = subprocess.run(["zbarimg", "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", path],
                       capture_output=True, text=True, timeout=60)
    return [line for line in r.stdout.splitlines() if line]


# ---------------------------------------------------------------- the page

# Records, in the page, when each counter's value changed (epoch ms) and when each button was
# pressed, from the DOM itself.
RECORDER = """
(() => {
  window.__changes = [];
  window.__taps = [];
  const now = () => performance.timeOrigin + performance.now();
  document.addEventListener('click', e => {
    const b = e.target.closest('button');
    if (b) window.__taps.push({label: b.getAttribute('aria-label'), t: now()});
  }, true);
  new MutationObserver(() => {
    for (const card of document.querySelectorAll('.counter')) {
      const v = card.querySelector('.value').textContent;
      const last = [...window.__changes].reverse().find(c => c.counter === card.dataset.counter);
      if (!last || last.value !== v) window.__changes.push({counter: card.dataset.counter, value: v, t: now()});
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
})();
"""


def value(page, counter):
    return page.locator(f'[data-counter="{counter}"] .value')


def pair_page(page, url, name):
    page.goto(url)
    expect(page.get_by_label("Device name")).to_be_visible()
    page.get_by_label("Device name").fill(name)
    page.get_by_role("button", name="Pair", exact=True).click()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=10000)


def run(args, res):
    tmp = tempfile.mkdtemp(prefix="k-pw-", dir="/tmp")
    kiosk = Kiosk(args.bin, tmp)
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    if args.screenshots:
        kiosk.add_painting(os.path.join(repo, "docs", "screenshots", "paint.png"))
    kiosk.start()
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=args.chromium, headless=True)
    try:
        phone = dict(viewport=PHONE, device_scale_factor=2 if args.screenshots else 1, is_mobile=True, has_touch=True)
        operator_ctx = browser.new_context(**phone)
        viewer_ctx = browser.new_context(**phone)
        op = operator_ctx.new_page()
        vw = viewer_ctx.new_page()
        errors = []
        for p in (op, vw):
            p.on("pageerror", lambda e: errors.append(str(e)))

        # --- Pairing: the operator types nothing but a name (the code comes in the URL).
        paired = kiosk.ctl_json("pair", "--print")
        res.check("kioskctl pair --print gives a code and the page's URL with it",
                  paired.get("code") and paired.get("url", "").startswith(kiosk.base) and paired["code"] in paired["url"], json.dumps(paired))
        pair_page(op, paired["url"], "Scorekeeper's phone")
        res.check("operator paired: the scoreboard shows HOME and AWAY",
                  op.get_by_role("button", name="HOME +1", exact=True).is_visible()
                  and op.get_by_role("button", name="AWAY +1", exact=True).is_visible())
        res.check("operator: the pairing code is gone from the address bar", paired["code"] not in op.url, op.url)
        reused = op.request.post(kiosk.base + "api/pair", data={"code": paired["code"], "name": "again"})
        res.check("a used code is refused", reused.status in (401, 403, 404, 410), f"HTTP {reused.status} {reused.text()}")

        # --- The viewer scans the QR code on the kiosk's screen.
        shown = kiosk.ctl_json("pair", "--role", "viewer")
        qr_png = os.path.join(tmp, "qr.png")
        kiosk.screenshot(qr_png)
        if shutil.which("zbarimg"):
            codes = zbar(qr_png)
            res.check("the kiosk's screen shows a QR code of exactly the viewer's URL", codes == [shown["url"]], f"{codes} vs {shown['url']}")
            if args.screenshots:
                shutil.copy(qr_png, os.path.join(args.screenshots, "web-pairing-qr.png"))
        else:
            print("skip  QR code on the screen: zbarimg is not installed (apt-get install zbar-tools)")
        pair_page(vw, shown["url"], "Lobby tablet")
        res.check("viewer paired: its page knows it is a viewer",
                  vw.locator("#viewer-note").is_visible() and not vw.get_by_role("button", name="HOME +1", exact=True).is_visible())
        gone_png = os.path.join(tmp, "gone.png")
        deadline = time.monotonic() + 5
        while True:
            kiosk.screenshot(gone_png)
            left = zbar(gone_png) if shutil.which("zbarimg") else []
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # bounded polling of "the overlay is gone"
        res.check("the QR code is gone from the screen once used", left == [], f"{left}")

        # --- Taps.
        before_png = os.path.join(tmp, "before.png")
        before = kiosk.screenshot(before_png)
        for p in (op, vw):
            p.evaluate(RECORDER)
        home_inc = op.get_by_role("button", name="HOME +1", exact=True)
        for _ in range(3):
            home_inc.click()
        op.get_by_role("button", name="AWAY +1", exact=True).click()
        expect(value(op, "home")).to_have_text("3")
        expect(value(op, "away")).to_have_text("1")
        res.check("operator's page shows HOME 3 and AWAY 1", True,
                  f"{value(op, 'home').text_content()} and {value(op, 'away').text_content()}")
        expect(value(vw, "home")).to_have_text("3")
        expect(value(vw, "away")).to_have_text("1")
        res.check("viewer's page shows HOME 3 and AWAY 1", True)

        got = kiosk.ctl_json("counter", "home", "get")
        res.check("kioskctl counter home get says 3", got.get("value") == 3, json.dumps(got))
        r = kiosk.ctl("counter", "home", "get")
        res.check("kioskctl counter home get prints 3", r.stdout.strip().split()[-1] == "3", r.stdout.strip())

        # Live: when the viewer's DOM showed each of HOME's values, against the operator's taps.
        taps = [t for t in op.evaluate("window.__taps") if t["label"] == "HOME +1"]
        seen = [c for c in vw.evaluate("window.__changes") if c["counter"] == "home"]
        lat = []
        for i, tap in enumerate(taps, start=1):
            first = next((c for c in seen if c["value"] == str(i)), None)
            lat.append(None if first is None else round(first["t"] - tap["t"], 1))
        res.check(f"viewer sees each HOME +1 live within {LIVE_MS} ms of the operator's tap",
                  len(taps) == 3 and all(x is not None and x <= LIVE_MS for x in lat), f"latencies ms: {lat}")

        # The kiosk's screen: HOME's digits (left half, below the label) changed, and so did AWAY's.
        after_png = os.path.join(tmp, "after.png")
        deadline = time.monotonic() + 5
        while True:
            after = kiosk.screenshot(after_png)
            w, h = after[0], after[1]
            home_box = (0, h * 30 // 100, w // 2, h * 95 // 100)
            away_box = (w // 2, h * 30 // 100, w, h * 95 // 100)
            dh, da = differing(before, after, home_box), differing(before, after, away_box)
            if (dh and da) or time.monotonic() > deadline:
                break
            time.sleep(0.05)  # bounded polling of "the frame shows the new values"
        area = (home_box[2] - home_box[0]) * (home_box[3] - home_box[1])
        res.check("kioskctl screenshot: HOME's digits changed", dh > area // 200, f"{dh} of {area} pixels differ")
        res.check("kioskctl screenshot: AWAY's digits changed", da > area // 200, f"{da} pixels differ")
        label_box = (0, 0, w, h * 25 // 100)
        res.check("kioskctl screenshot: the labels did not change", differing(before, after, label_box) == 0)

        # --- The viewer may not change anything.
        status = vw.evaluate("""async () => {
            const r = await fetch('api/counter/home/inc', {method: 'POST'});
            return {status: r.status, body: await r.json()};
        }""")
        res.check("viewer: POST api/counter/home/inc is refused 403 with a JSON error",
                  status["status"] == 403 and "viewer" in status["body"].get("error", ""), json.dumps(status))
        # A page that still offers the button (it did not know its role) shows the refusal.
        vw.evaluate("document.body.classList.remove('viewer'); for (const b of document.querySelectorAll('[data-change]')) b.disabled = false;")
        vw.get_by_role("button", name="HOME +1", exact=True).click()
        alert = vw.locator(".error span").last
        expect(alert).to_contain_text("403")
        res.check("viewer: the page shows the 403 and the kiosk's reason", "viewer" in alert.text_content(), alert.text_content())
        res.check("the viewer's refused tap changed nothing", kiosk.ctl_json("counter", "home", "get").get("value") == 3)

        # --- kioskctl changes reach the page live; reset asks first.
        kiosk.ctl("counter", "away", "set", "7")
        expect(value(op, "away")).to_have_text("7", timeout=2000)
        res.check("a change by kioskctl appears on the page", True)
        op.get_by_role("button", name="HOME reset", exact=True).click()
        dialog = op.locator("#confirm")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Cancel").click()
        res.check("reset asks first; cancel keeps the value", kiosk.ctl_json("counter", "home", "get").get("value") == 3)
        op.get_by_role("button", name="HOME reset", exact=True).click()
        dialog.get_by_role("button", name="Reset").click()
        expect(value(op, "home")).to_have_text("0")
        res.check("reset confirmed: HOME is 0", kiosk.ctl_json("counter", "home", "get").get("value") == 0)
        op.get_by_role("button", name=f"HOME {MINUS}1", exact=True).click()
        alert = op.locator(".error span").last
        expect(alert).to_contain_text("422")
        res.check("an API error is shown with its message", "HOME" in alert.text_content() and "0" in alert.text_content(), alert.text_content())

        op.get_by_role("button", name="HOME set to…", exact=True).click()
        setto = op.locator("#setto")
        setto.get_by_label("Value").fill("12")
        setto.get_by_role("button", name="Set", exact=True).click()
        expect(value(op, "home")).to_have_text("12")
        res.check("set to… 12: the page and kioskctl say 12", kiosk.ctl_json("counter", "home", "get").get("value") == 12)

        # --- The theme: the page takes the kiosk's colours, live.
        kiosk.ctl("theme", "light")
        expect(op.locator("body")).to_have_css("background-color", "rgb(250, 250, 250)", timeout=3000)
        res.check("a theme switched on the kiosk repaints the page in its colours (light: #FAFAFA)", True)

        # --- The clock's colour mode: the picker on the Clock page switches it on the kiosk.
        kiosk.ctl("scene", "clock")
        op.goto(kiosk.base + "#clock")
        literal = op.get_by_role("button", name="Clock mode literal", exact=True)
        scaled = op.get_by_role("button", name="Clock mode scaled", exact=True)
        expect(scaled).to_have_attribute("aria-pressed", "true", timeout=3000)
        expect(literal).to_have_attribute("aria-pressed", "false")
        literal.click()
        expect(literal).to_have_attribute("aria-pressed", "true", timeout=2000)
        expect(scaled).to_have_attribute("aria-pressed", "false")
        # In literal mode the colour is the time's digits read as hex: "13:35:16 #133516".
        summary = kiosk.ctl_json("status").get("scene_summary", "")
        m = re.fullmatch(r"(\d\d):(\d\d):(\d\d) #([0-9A-F]{6})", summary)
        res.check("clock mode picker: the kiosk shows the literal colour (status summary)",
                  bool(m) and m.group(4) == m.group(1) + m.group(2) + m.group(3), summary)
        kiosk.ctl("clock", "mode", "scaled")
        expect(scaled).to_have_attribute("aria-pressed", "true", timeout=2000)
        res.check("kioskctl clock mode scaled: the page's picker follows live", True)

        # --- Revoking: the viewer's open page loses access at once and asks to pair again.
        kiosk.ctl("devices", "revoke", "Lobby tablet")
        expect(vw.get_by_label("Device name")).to_be_visible(timeout=5000)
        res.check("a revoked device's open page shows the pairing form", not vw.locator(".counter").first.is_visible())

        # --- The connection: lost, shown, and back by itself.
        kiosk.stop()
        expect(op.locator("#lost")).to_be_visible(timeout=5000)
        res.check("kioskd stopped: the page says the connection is lost", "reconnecting" in op.locator("#lost").text_content())
        kiosk.start()
        expect(op.locator("#lost")).to_be_hidden(timeout=30000)
        kiosk.ctl("counter", "home", "set", "5")
        expect(value(op, "home")).to_have_text("5", timeout=2000)
        res.check("kioskd back: the page reconnects by itself and is live again", True)

        res.check("no script error on the pages", not errors, "; ".join(errors))

        if args.screenshots:
            take_screenshots(args, kiosk, op, browser, tmp)
    finally:
        browser.close()
        pw.stop()
        kiosk.stop()
        if res.failed:
            print(f"kioskd log ({kiosk.log_path}):\n{kiosk.log_text()}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run_owner(args, res):
    """A fresh kiosk: the setup code on its screen (the code status reads is the QR code's), a
    page pairs as owner with it, sees the Devices tab, pairs a tablet from it and revokes it."""
    tmp = tempfile.mkdtemp(prefix="k-pw3-", dir="/tmp")
    kiosk = Kiosk(args.bin, tmp, setup=True)
    kiosk.start()
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=args.chromium, headless=True)
    try:
        phone = dict(viewport=PHONE, device_scale_factor=2 if args.screenshots else 1, is_mobile=True, has_touch=True)
        owner = browser.new_context(**phone).new_page()
        tablet = browser.new_context(**phone).new_page()
        setup = kiosk.ctl_json("status").get("setup") or {}
        res.check("a fresh kiosk waits for an owner with a code on its screen",
                  setup.get("state") == "waiting" and setup.get("shown") and setup.get("code"), json.dumps(setup))
        shot = os.path.join(tmp, "setup.png")
        kiosk.screenshot(shot)
        res.check("the screen's QR code is the setup code of the status", zbar(shot) == [setup.get("url")], f"{zbar(shot)} vs {setup.get('url')}")

        pair_page(owner, setup["url"], "Owner's phone")
        session = owner.request.get(kiosk.base + "api/session").json()
        res.check("paired with the setup code as owner", session.get("role") == "owner", json.dumps(session))
        done = kiosk.ctl_json("status").get("setup") or {}
        res.check("setup is done and the code left the screen", done.get("state") == "done" and not done.get("shown"), json.dumps(done))
        owner.get_by_role("link", name="Devices").click()
        expect(owner.locator("#device-list li[data-device=\"Owner's phone\"]")).to_be_visible()

        owner.get_by_label("Show the code on the kiosk's screen too").uncheck()
        owner.get_by_role("button", name="Pair a new operator").click()
        link = owner.locator("#pair-opened a")
        expect(link).to_be_visible()
        pair_page(tablet, link.get_attribute("href"), "Tablet")
        res.check("the tablet paired from the owner's code is an operator",
                  tablet.request.get(kiosk.base + "api/session").json().get("role") == "operator")
        run_settings(args, res, kiosk, owner, tablet, tmp)
        owner.get_by_role("link", name="Screen").click()
        owner.get_by_role("link", name="Devices").click()
        expect(owner.locator('#device-list li[data-device="Tablet"]')).to_be_visible()
        owner.get_by_role("button", name="Revoke Tablet").click()
        owner.locator("#confirm-ok").click()
        expect(owner.locator('#device-list li[data-device="Tablet"]')).to_have_count(0)
        expect(tablet.locator("#view-pair")).to_be_visible(timeout=10000)
        res.check("the revoked tablet is refused at once", tablet.request.get(kiosk.base + "api/status").status == 401)
        res.check("the tablet's page does not show the Devices tab",
                  not tablet.get_by_role("link", name="Devices").is_visible())
        expect(owner.locator("#recent-errors-reload")).to_be_visible()
    finally:
        browser.close()
        pw.stop()
        kiosk.stop()


def setting(kiosk, key):
    """The value `kioskctl config show` gives for key: {"key", "toml", "value", "source", "layer", …} or None."""
    a = kiosk.ctl_json("config", "show")
    return next((v for v in a["values"] if v["key"] == key), None)


def summary(kiosk):
    """The scene on screen as `kioskctl status` sums it up: a scoreboard's labels and digits as drawn ("HOME 000 AWAY 000")."""
    return kiosk.ctl_json("status").get("scene_summary")


def run_settings(args, res, kiosk, owner, operator, tmp):
    """The owner's Settings tab: a label, the digits and the brightness schedule changed with one
    Save, shown by kioskctl and on the kiosk's screen, the config file untouched; digits = 0
    refused at its field with nothing changed; "reset to file"; an operator has no Settings tab
    and is refused 403."""
    errors = []
    owner.on("pageerror", lambda e: errors.append(str(e)))
    with open(kiosk.config, "rb") as f:
        file_bytes = f.read()
    label_key, digits_key, sched_key = "scene.score.counter[0].label", "scene.score.digits", "display.brightness.schedule"

    # The operator: no tab, and the API refuses.
    res.check("an operator's page has no Settings tab", operator.get_by_role("link", name="Settings").count() == 0
              or not operator.get_by_role("link", name="Settings").is_visible())
    refused = operator.evaluate("""async () => {
        const r = await fetch('api/settings', {method: 'PATCH', headers: {'Content-Type': 'application/json'},
                                               body: JSON.stringify({'scene.score.counter[0].label': 'HACKED'})});
        return {status: r.status, body: await r.json()};
    }""")
    res.check("an operator's PATCH api/settings is refused 403 and changes nothing",
              refused["status"] == 403 and "only an owner may change settings" in refused["body"].get("error", "")
              and setting(kiosk, label_key)["value"] == "HOME", json.dumps(refused))

    # The owner: the tab, its fields with their sources.
    owner.get_by_role("link", name="Settings").click()
    label = owner.get_by_label("home: label (team name)", exact=True)
    expect(label).to_have_value("HOME", timeout=5000)
    field = lambda key: owner.locator(f'.setting[data-key="{key}"]')
    res.check("each field says where its value comes from (the file's line)",
              re.search(r"from the file \(.*kioskd\.toml:\d+\)", field(label_key).locator(".source").text_content()) is not None,
              field(label_key).locator(".source").text_content())
    res.check("the note says network, MQTT credentials and listen addresses are set only in the file",
              "set only in the config" in owner.locator("#view-settings .note").text_content())
    widest = owner.evaluate("() => Math.max(...[...document.querySelectorAll('#view-settings *')].map(e => e.getBoundingClientRect().right))")
    res.check("the Settings page fits the phone's width", widest <= PHONE["width"], f"right edge at {widest} px")
    small = owner.evaluate("""() => [...document.querySelectorAll('#view-settings input, #view-settings select, #view-settings textarea, #view-settings button')]
        .filter(e => e.offsetParent && e.getBoundingClientRect().height < 44).map(e => e.id || e.getAttribute('aria-label') || e.textContent)""")
    res.check("every control is a big touch target (at least 44 px high)", not small, f"{small}")

    res.check("before: kioskctl status shows HOME 000 AWAY 000", summary(kiosk) == "HOME 000 AWAY 000", summary(kiosk))
    before_png = os.path.join(tmp, "settings-before.png")
    before = kiosk.screenshot(before_png)
    label.fill("LIONS")
    owner.get_by_label("Digits", exact=True).fill("2")
    sched = owner.get_by_label(re.compile("^Brightness schedule"))
    # The schedule's "off" period must not hold the time of the test: a screen that is off draws no
    # frame, so the label's change would not be on the screenshot (the kiosk runs on UTC).
    shift = 12 if time.gmtime().tm_hour <= 6 else 0
    hh = lambda h: f"{(h + shift) % 24:02d}:00"
    schedule = [f"{hh(6)} 100%", f"{hh(22)} 20%", f"{hh(1)} off"]
    off_period, dim_period = f"{hh(1)}\u2013{hh(6)} off", "22:00\u201324:00 20%" if shift == 0 else "10:00\u201313:00 20%"
    sched.fill("\n".join(schedule))
    day = field(sched_key).locator(".timeline svg")
    res.check(f"the brightness timeline draws the schedule as typed ({off_period}, {dim_period})",
              off_period in (day.get_attribute("aria-label") or "") and dim_period in day.get_attribute("aria-label"),
              day.get_attribute("aria-label"))
    patches = []
    owner.on("request", lambda r: patches.append(r.post_data) if r.method == "PATCH" else None)
    started = time.monotonic()
    owner.get_by_role("button", name="Save", exact=True).click()
    expect(owner.locator("#settings-status")).to_contain_text("Saved 3 values", timeout=5000)
    saved_ms = (time.monotonic() - started) * 1000
    res.check("Save sends one PATCH with the three keys", len(patches) == 1
              and set(json.loads(patches[0])) == {label_key, digits_key, sched_key}, f"{patches}")
    lab, dig, sch = setting(kiosk, label_key), setting(kiosk, digits_key), setting(kiosk, sched_key)
    res.check("kioskctl config show: label LIONS, digits 2, the schedule, each set from the phone by the owner",
              lab["value"] == "LIONS" and dig["value"] == 2 and sch["value"] == schedule
              and all(v["source"].startswith("set from the phone by Owner's phone at ") for v in (lab, dig, sch)),
              f"{lab} {dig} {sch}")
    res.check("kioskctl status: the scoreboard shows LIONS with 2 digits (was HOME 000 AWAY 000)",
              summary(kiosk) == "LIONS 00 AWAY 00", summary(kiosk))
    res.check("the page's scoreboard follows: LIONS, 0…99",
              owner.locator('[data-counter="home"] .label').text_content() == "LIONS"
              and owner.locator('[data-counter="home"] .range').text_content() == "0\u202699")
    res.check("the page shows the new sources", field(label_key).locator(".source").text_content().startswith("set from the phone by Owner's phone"),
              field(label_key).locator(".source").text_content())
    after_png = os.path.join(tmp, "settings-after.png")
    deadline = time.monotonic() + 5
    while True:
        after = kiosk.screenshot(after_png)
        w, h = after[0], after[1]
        changed = differing(before, after, (0, 0, w // 2, h * 30 // 100))
        if changed or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # bounded polling of "the frame shows the new label"
    tap_to_screen_ms = (time.monotonic() - started) * 1000
    res.check("kioskctl screenshot: HOME's label on the kiosk's screen changed", changed > 100,
              f"{changed} pixels differ; saved in {saved_ms:.0f} ms, on screen within {tap_to_screen_ms:.0f} ms of the tap")
    with open(kiosk.config, "rb") as f:
        res.check("the config file is byte-identical", f.read() == file_bytes)

    # An invalid value: the config's error at its field, nothing changed (not the label either).
    label.fill("TIGERS")
    owner.get_by_label("Digits", exact=True).fill("0")
    owner.get_by_role("button", name="Save", exact=True).click()
    err = field(digits_key).locator(".field-error")
    expect(err).to_be_visible(timeout=5000)
    res.check("digits = 0: the config's error is shown at the Digits field",
              "key 'scene.score.digits'" in err.text_content() and "422" in err.text_content(), err.text_content())
    res.check("no error at any other field", owner.locator(".field-error:visible").count() == 1)
    res.check("digits = 0: nothing changed (digits 2, label LIONS; the form keeps the typed values)",
              setting(kiosk, digits_key)["value"] == 2 and setting(kiosk, label_key)["value"] == "LIONS"
              and summary(kiosk) == "LIONS 00 AWAY 00" and label.input_value() == "TIGERS", summary(kiosk))
    owner.get_by_role("button", name="Undo changes").click()
    expect(label).to_have_value("LIONS", timeout=5000)
    # A bad line of a schedule: its error names the element (schedule[1]); shown at the schedule.
    sched.fill("06:00 100%\n25:00 20%")
    owner.get_by_role("button", name="Save", exact=True).click()
    err = field(sched_key).locator(".field-error")
    expect(err).to_be_visible(timeout=5000)
    res.check("a bad schedule line: the error naming display.brightness.schedule[1] is shown at the schedule; nothing changed",
              "display.brightness.schedule[1]" in err.text_content() and owner.locator(".field-error:visible").count() == 1
              and setting(kiosk, sched_key)["value"] == schedule, err.text_content())
    owner.get_by_role("button", name="Undo changes").click()
    expect(sched).to_have_value("\n".join(schedule), timeout=5000)
    if args.screenshots:
        # The day's card (the schedule set from the phone, its picture and its source) at the top.
        owner.evaluate("""() => { const c = document.querySelector('.setting[data-key="display.brightness.schedule"]').closest('.card');
                                  window.scrollTo(0, c.getBoundingClientRect().top + window.scrollY - 60); }""")
        owner.wait_for_timeout(200)
        owner.screenshot(path=os.path.join(args.screenshots, "web-settings.png"))
        print(f"wrote {args.screenshots}/web-settings.png")

    # Reset to file.
    owner.get_by_role("button", name="Reset home: label (team name) to file").click()
    expect(label).to_have_value("HOME", timeout=5000)
    lab = setting(kiosk, label_key)
    res.check("reset to file: the file's label HOME is back, from the file's line",
              lab["value"] == "HOME" and not lab["layer"] and "kioskd.toml:" in lab["source"]
              and summary(kiosk) == "HOME 00 AWAY 00", f"{json.dumps(lab)}; {summary(kiosk)}")
    res.check("reset to file dropped only that key (digits stay 2)", setting(kiosk, digits_key)["value"] == 2)

    # The other kinds of field: a colour picker, a time zone, the scene order, a select.
    owner.get_by_label("home: colour", exact=True).fill("#ff0000")
    owner.get_by_label("Time zone", exact=True).fill("Europe/Berlin")
    owner.get_by_role("button", name="Move clock up").click()
    owner.get_by_label("Hour format", exact=True).select_option("12")
    owner.get_by_role("button", name="Save", exact=True).click()
    expect(owner.locator("#settings-status")).to_contain_text("Saved 4 values", timeout=5000)
    got = {k: (setting(kiosk, k) or {}).get("value") for k in ("scene.score.counter[0].color", "scene.clock.time_zone", "scenes.order", "scene.clock.hour_format")}
    res.check("colour, time zone, scene order and hour format saved as the config takes them",
              got == {"scene.score.counter[0].color": "#FF0000", "scene.clock.time_zone": "Europe/Berlin",
                      "scenes.order": ["score", "clock", "paint"], "scene.clock.hour_format": 12}, f"{got}")
    res.check("kioskctl status: the scenes in the new order", kiosk.ctl_json("status").get("scenes") == ["score", "clock", "paint"],
              f"{kiosk.ctl_json('status').get('scenes')}")
    with open(kiosk.config, "rb") as f:
        res.check("the config file is still byte-identical", f.read() == file_bytes)
    res.check("no script error on the Settings page", not errors, "; ".join(errors))


def run_outputs(args, res):
    """Two outputs: the Screen page has a scene chooser and a screen switch per output, each
    changing only its output (as `kioskctl status` lists them), and the preview shows either."""
    tmp = tempfile.mkdtemp(prefix="k-pw2-", dir="/tmp")
    kiosk = Kiosk(args.bin, tmp, TWO_SCREENS)
    kiosk.start()
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=args.chromium, headless=True)
    failed = res.failed
    try:
        page = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True).new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        pair_page(page, kiosk.ctl_json("pair", "--print")["url"], "Two screens phone")
        page.goto(kiosk.base + "#screen")
        heads = page.locator("#scene-choices .output h4")
        expect(heads).to_have_count(2)
        res.check("two outputs: one scene chooser per output, named", heads.all_text_contents() == ["HDMI-A-1", "DSI-1"],
                  f"{heads.all_text_contents()}")
        res.check("each chooser offers the scenes its output shows",
                  page.get_by_role("button", name="Scene clock on HDMI-A-1", exact=True).count() == 0
                  and page.get_by_role("button", name="Scene clock on DSI-1", exact=True).is_visible())

        def outputs():
            return [(o["name"], o["scene"], o["blanked"]) for o in kiosk.ctl_json("status")["outputs"]]

        clock = page.get_by_role("button", name="Scene clock on DSI-1", exact=True)
        clock.click()
        expect(clock).to_have_attribute("aria-pressed", "true", timeout=3000)
        expect(page.get_by_role("button", name="Scene score on HDMI-A-1", exact=True)).to_have_attribute("aria-pressed", "true")
        res.check("the second output's chooser changed that output only (kioskctl status)",
                  outputs() == [("HDMI-A-1", "score", False), ("DSI-1", "clock", False)], f"{outputs()}")
        kiosk.ctl("scene", "score", "--output", "DSI-1")
        expect(page.get_by_role("button", name="Scene score on DSI-1", exact=True)).to_have_attribute("aria-pressed", "true", timeout=2000)
        res.check("kioskctl scene --output DSI-1: the page follows live", True)

        page.get_by_role("button", name="Turn the screen DSI-1 off", exact=True).click()
        expect(page.get_by_role("button", name="Turn the screen DSI-1 on", exact=True)).to_be_visible(timeout=3000)
        res.check("the second output's screen switch blanks that output only",
                  outputs() == [("HDMI-A-1", "score", False), ("DSI-1", "score", True)], f"{outputs()}")
        page.get_by_role("button", name="Turn the screen DSI-1 on", exact=True).click()
        expect(page.get_by_role("button", name="Turn the screen DSI-1 off", exact=True)).to_be_visible(timeout=3000)

        # The preview: HDMI-A-1 is 640 wide; DSI-1, 320x240 turned upright, 240.
        width = "() => document.querySelector('#preview-img').naturalWidth"
        page.wait_for_function(f"({width})() === 640")
        page.get_by_label("Screen shown").select_option("DSI-1")
        page.wait_for_function(f"({width})() === 240 && document.querySelector('#preview-caption').textContent.startsWith('screen DSI-1 ·')")
        res.check("the preview shows the output chosen (DSI-1: 240 px wide, upright)", True)
        res.check("no script error on the two-output page", not errors, "; ".join(errors))
    finally:
        browser.close()
        pw.stop()
        kiosk.stop()
        if res.failed > failed:
            print(f"kioskd log ({kiosk.log_path}):\n{kiosk.log_text()}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# A scoreboard with a game clock (config/scoreboard-clock.toml's shape): 10:00 periods, four of
# them, tenths under a minute, a 24-second shot clock, and a muted horn.
CLOCK_BOARD = f"""[display]
backend = "headless"
headless_size = "{SCREEN[0]}x{SCREEN[1]}"
[scene.board]
kind = "counter"
digits = 3
roll_ms = 0
[[scene.board.counter]]
name = "home"
label = "HOME"
[[scene.board.counter]]
name = "away"
label = "AWAY"
[scene.board.clock]
period_length = "10:00"
periods = 4
tenths_below = "1:00"
shot_clock = 24
[audio]
device = "null"
mute = true
"""


def clock_face(ms):
    """What the game clock shows counting down with ms left (tenths under 1:00, rounded up)."""
    n = -(-ms // 100)
    if n < 600:
        return f"{n // 10}.{n % 10}"
    s = -(-n // 10)
    return f"{s // 60}:{s % 60:02d}"


def run_clock(args, res):
    """The game clock on the phone page: shown, started, stopped, set and adjusted to exact
    values (as `kioskctl status` says), next period, the shot clock reset, the horn's mute state;
    a viewer sees the clock run but cannot change it."""
    tmp = tempfile.mkdtemp(prefix="k-pw3-", dir="/tmp")
    kiosk = Kiosk(args.bin, tmp, CLOCK_BOARD)
    kiosk.start()
    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=args.chromium, headless=True)
    failed = res.failed
    try:
        phone = dict(viewport=PHONE, is_mobile=True, has_touch=True)
        op = browser.new_context(**phone).new_page()
        vw = browser.new_context(**phone).new_page()
        errors = []
        for p in (op, vw):
            p.on("pageerror", lambda e: errors.append(str(e)))
        pair_page(op, kiosk.ctl_json("pair", "--print")["url"], "Scorer's phone")

        def clock():
            return kiosk.ctl_json("status")["clocks"][0]["clock"]

        card = op.locator('.gclock[data-scene="board"]')
        time_ = card.get_by_label("Game clock", exact=True)
        expect(time_).to_have_text("10:00", timeout=5000)
        expect(card.get_by_label("Shot clock", exact=True)).to_have_text("24")
        res.check("the page shows the game clock 10:00, period 1 of 4 and the shot clock 24",
                  "Period 1 of 4" in card.locator(".gclock-period").text_content())
        res.check("the page shows the horn muted", "horn muted" in card.locator(".gclock-state").text_content()
                  and card.get_by_role("button", name="Sound the horn").text_content() in ("Horn (muted)", "Horn: no sound device"),
                  card.locator(".gclock-state").text_content())
        box = card.get_by_role("button", name="Start the clock").bounding_box()
        res.check("start/stop is a big touch target (at least 64 px high, half the width)",
                  box["height"] >= 64 and box["width"] >= PHONE["width"] / 2, f"{box}")
        widest = op.evaluate("() => Math.max(...[...document.querySelectorAll('.gclock, .gclock button')].map(e => e.getBoundingClientRect().right))")
        res.check("the clock's card and buttons fit the phone's width", widest <= PHONE["width"], f"right edge at {widest} px")

        # Start: the daemon's status says running; the page counts down by itself.
        card.get_by_role("button", name="Start the clock").click()
        expect(card.get_by_role("button", name="Stop the clock")).to_be_visible(timeout=3000)
        res.check("Start pressed: kioskctl status says the clock runs", clock()["running"] is True, json.dumps(clock()))
        expect(time_).to_have_text(re.compile(r"^9:5\d$"), timeout=3000)
        res.check("the running clock counts down on the page without a new event", True, time_.text_content())

        # Stop: the page shows what the daemon kept.
        card.get_by_role("button", name="Stop the clock").click()
        expect(card.get_by_role("button", name="Start the clock")).to_be_visible(timeout=3000)
        c = clock()
        expect(time_).to_have_text(clock_face(c["remaining_ms"]))
        res.check("Stop pressed: stopped in status, and the page shows the time kept",
                  c["running"] is False and 590_000 <= c["remaining_ms"] < 600_000, json.dumps(c))

        # Set and adjust: exact values.
        def set_to(text):
            card.get_by_role("button", name="Set the clock…").click()
            d = op.locator("#clockset")
            d.get_by_label("Time").fill(text)
            d.get_by_role("button", name="Set", exact=True).click()

        set_to("7:30")
        expect(time_).to_have_text("7:30", timeout=3000)
        res.check("Set 7:30: status says 450000 ms", clock()["remaining_ms"] == 450_000, json.dumps(clock()))
        card.get_by_role("button", name="Clock +1 min").click()
        expect(time_).to_have_text("8:30", timeout=3000)
        card.get_by_role("button", name=f"Clock {MINUS}1 s").click()
        expect(time_).to_have_text("8:29", timeout=3000)
        res.check("+1 min then -1 s: status says 509000 ms", clock()["remaining_ms"] == 509_000, json.dumps(clock()))
        card.get_by_role("button", name=f"Clock {MINUS}1 min").click()
        card.get_by_role("button", name="Clock +1 s").click()
        expect(time_).to_have_text("7:30", timeout=3000)
        res.check("-1 min then +1 s: status says 450000 ms", clock()["remaining_ms"] == 450_000, json.dumps(clock()))
        set_to("45.5")
        expect(time_).to_have_text("45.5", timeout=3000)
        res.check("Set 45.5 (seconds): status says 45500 ms; the page shows tenths in the low-time look",
                  clock()["remaining_ms"] == 45_500 and "low" in time_.get_attribute("class"), json.dumps(clock()))
        if args.screenshots:
            kiosk.ctl("theme", "dark")
            kiosk.ctl("counter", "home", "set", "52")
            kiosk.ctl("counter", "away", "set", "48")
            expect(value(op, "away")).to_have_text("48")
            op.screenshot(path=os.path.join(args.screenshots, "web-gameclock.png"))
            print(f"wrote {args.screenshots}/web-gameclock.png")
        set_to("11:00")
        alert = op.locator(".error span").last
        expect(alert).to_contain_text("422")
        res.check("Set 11:00 is refused with the kiosk's reason; the clock stays", "10:00" in alert.text_content()
                  and clock()["remaining_ms"] == 45_500, alert.text_content())

        # The viewer: sees the clock run, in tenths, but has no buttons and is refused.
        shown = kiosk.ctl_json("pair", "--role", "viewer", "--print")
        pair_page(vw, shown["url"], "Bench tablet")
        vcard = vw.locator('.gclock[data-scene="board"]')
        expect(vcard.get_by_label("Game clock", exact=True)).to_have_text("45.5", timeout=5000)
        res.check("viewer: the clock is shown and no clock button is", vcard.get_by_role("button", name="Start the clock").is_hidden()
                  and vcard.get_by_role("button", name="Next period").is_hidden())
        card.get_by_role("button", name="Start the clock").click()
        expect(vcard.get_by_label("Game clock", exact=True)).to_have_text(re.compile(r"^4[34]\.\d$"), timeout=3000)
        seen = []
        for _ in range(3):
            vw.wait_for_timeout(250)
            seen.append(vcard.get_by_label("Game clock", exact=True).text_content())
        res.check("viewer: the running clock's tenths move on the page", len(set(seen)) == 3
                  and all(re.fullmatch(r"4[2-5]\.\d", x) for x in seen), f"{seen}")
        # Against the daemon: what the viewer's page shows and what status says, read together.
        pairs = []
        for _ in range(3):
            a = vcard.get_by_label("Game clock", exact=True).text_content()
            ms = clock()["remaining_ms"]
            b = vcard.get_by_label("Game clock", exact=True).text_content()
            pairs.append((a, ms, b))
        res.check("viewer: the page's tenth agrees with the daemon's time left (within 0.3 s)",
                  all(float(b) - 0.35 <= ms / 1000 <= float(a) + 0.05 for a, ms, b in pairs), f"{pairs}")
        refused = vw.evaluate("""async () => {
            const r = await fetch('api/clock', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                                body: JSON.stringify({words: ['stop'], scene: 'board'})});
            return {status: r.status, body: await r.json()};
        }""")
        res.check("viewer: POST api/clock is refused 403 and the clock keeps running",
                  refused["status"] == 403 and "viewer" in refused["body"].get("error", "") and clock()["running"] is True, json.dumps(refused))

        # The shot clock and the period.
        op.wait_for_timeout(1200)
        card.get_by_role("button", name="Stop the clock").click()
        expect(card.get_by_role("button", name="Start the clock")).to_be_visible(timeout=3000)
        before = clock()["shot_remaining_ms"]
        card.get_by_role("button", name="Reset the shot clock").click()
        expect(card.get_by_label("Shot clock", exact=True)).to_have_text("24", timeout=3000)
        res.check("Reset shot: the shot clock went back to 24 s (status)", before < 23_000 and clock()["shot_remaining_ms"] == 24_000,
                  f"{before} then {clock()['shot_remaining_ms']}")
        card.get_by_role("button", name="Next period").click()
        expect(card.locator(".gclock-period")).to_have_text("Period 2 of 4", timeout=3000)
        expect(time_).to_have_text("10:00")
        res.check("Next period: period 2, 10:00 (status)", clock()["period"] == 2 and clock()["remaining_ms"] == 600_000, json.dumps(clock()))
        expect(vcard.locator(".gclock-period")).to_have_text("Period 2 of 4", timeout=3000)
        res.check("viewer: follows the period live", True)
        card.get_by_role("button", name="Reset the clock").click()
        op.locator("#confirm").get_by_role("button", name="Reset").click()
        expect(card.locator(".gclock-period")).to_have_text("Period 1 of 4", timeout=3000)
        res.check("Reset (confirmed): period 1 (status)", clock()["period"] == 1, json.dumps(clock()))
        card.get_by_role("button", name="Sound the horn").click()
        op.wait_for_timeout(300)
        horn_errors = [e for e in op.locator(".error span").all_text_contents() if "Horn" in e]
        res.check("the horn button is answered (muted, or no sound device: said so)", not horn_errors
                  or any("sound" in e or "unavailable" in e for e in horn_errors), f"{horn_errors}")
        res.check("no script error on the clock pages", not errors, "; ".join(errors))
    finally:
        browser.close()
        pw.stop()
        kiosk.stop()
        if res.failed > failed:
            print(f"kioskd log ({kiosk.log_path}):\n{kiosk.log_text()}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def take_screenshots(args, kiosk, op, browser, tmp):
    out = args.screenshots
    os.makedirs(out, exist_ok=True)
    kiosk.ctl("theme", "dark")
    kiosk.ctl("counter", "home", "set", "3")
    kiosk.ctl("counter", "away", "set", "1")
    expect(value(op, "away")).to_have_text("1")
    for e in op.locator(".error").all():
        e.evaluate("e => e.remove()")
    for tab, scene in (("score", "score"), ("paint", "paint"), ("clock", "clock")):
        kiosk.ctl("scene", scene)
        # A fresh page, so its preview is taken after the scene changed.
        op.goto(kiosk.base + "#" + tab)
        op.reload()
        expect(op.locator("#conn")).to_have_attribute("data-state", "live")
        if tab != "score":
            op.wait_for_function("() => document.querySelector('#preview-caption').textContent.startsWith('screen ·')")
        op.wait_for_timeout(300)
        op.screenshot(path=os.path.join(out, f"web-{tab}.png"))
        print(f"wrote {out}/web-{tab}.png")
    # The page on a phone beside the kiosk's screen, showing the same scoreboard.
    kiosk.ctl("scene", "score")
    op.goto(kiosk.base + "#score")
    op.reload()
    expect(op.locator("#conn")).to_have_attribute("data-state", "live")
    op.wait_for_timeout(300)
    phone_png = os.path.join(tmp, "phone.png")
    op.screenshot(path=phone_png)
    screen_png = os.path.join(tmp, "screen.png")
    kiosk.ctl("screenshot", screen_png)
    side = browser.new_page(viewport={"width": 1600, "height": 760})
    side.set_content(f"""<body style="margin:0;background:#e8eaed;display:flex;align-items:center;justify-content:center;gap:48px;height:760px;font-family:sans-serif">
      <div style="border:14px solid #111;border-radius:44px;overflow:hidden;width:390px;height:703px;box-shadow:0 10px 30px #0005"><img src="phone.png" style="width:390px"></div>
      <div style="text-align:center"><div style="border:18px solid #222;border-radius:10px;box-shadow:0 10px 30px #0005;line-height:0"><img src="screen.png" style="width:960px"></div>
      <div style="width:160px;height:60px;margin:0 auto;background:linear-gradient(#333,#555)"></div></div></body>""")
    for name, path in (("phone.png", phone_png), ("screen.png", screen_png)):
        side.evaluate("([n, d]) => { for (const i of document.images) if (i.getAttribute('src') === n) i.src = d; }",
                      [name, "data:image/png;base64," + __import__("base64").b64encode(open(path, "rb").read()).decode()])
    side.wait_for_function("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)")
    side.screenshot(path=os.path.join(out, "web-phone-and-kiosk.png"))
    print(f"wrote {out}/web-phone-and-kiosk.png")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("KIOSKD_BIN_DIR", ".build/debug"), help="folder with kioskd and kioskctl")
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"), help="the browser to drive")
    ap.add_argument("--screenshots", metavar="DIR", help="also write the page's screenshots into DIR")
    args = ap.parse_args()
    res = Results()
    try:
        run(args, res)
        run_outputs(args, res)
        run_owner(args, res)
        run_clock(args, res)
    except Stop as e:
        res.check("setup", False, str(e))
    except Exception as e:  # a Playwright expectation or timeout: report it as a failed check
        res.check("browser", False, f"{type(e).__name__}: {e}")
    print(f"{res.passed} passed, {res.failed} failed")
    sys.exit(1 if res.failed or not res.passed else 0)


if __name__ == "__main__":
    main()
