#!/usr/bin/env python3
"""kioskd against a real Home Assistant (python3 stdlib only).

Starts mosquitto on a free loopback port, two kioskd (headless, [mqtt] on that broker; the
second with the id "Hall.East", whose entity ids get a hash, and two outputs) and Home
Assistant in the root made by scripts/ha/setup.sh (chroot in a private mount namespace, the
host's network), onboards Home Assistant through its HTTP API, adds the MQTT integration through
the config-flow API, then checks:
  (a) each kiosk's device and entities: the ids docs/mqtt.md names are asked for, and Home
      Assistant made exactly the ids kioskd asks for (default_entity_id);
  (b) buttons, number, selects and switch pressed in Home Assistant reach the kiosk (kioskctl);
  (c) changes made with kioskctl reach Home Assistant's states;
  (d) the second kiosk's per-output scene select changes that output only, and follows it;
  (e) a third kiosk on config/scoreboard-clock.toml (a game clock and a shot clock): its clock's
      buttons and sensors appear, Start pressed in Home Assistant starts the clock (kioskctl
      status), the remaining sensor moves and the running sensor follows.
One PASS/FAIL line per check, then 'N passed, N failed'; exit 1 on any failure.
"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

KIOSK_ID = "ha-ci"
DEV = "kioskd_ha_ci"  # "kioskd_" + the id in lower case, "-" as "_"
COUNTERS = [("home", "HOME"), ("away", "AWAY")]
# A second kiosk whose id has upper case and a character other than "-" (the entity ids get a
# hash) and whose counter name is upper case.
KIOSK2_ID = "Hall.East"
COUNTERS2 = [("HOME", "Home")]
# Its two outputs (docs/config.md "Several outputs") and the scenes each shows.
OUTPUTS2 = [("HDMI-A-1", ["score"]), ("DSI-1", ["score", "clock"])]


def entity_slug(s):
    """docs/mqtt.md's rule: lower case, "-" and other characters "_", and a hash (FNV-1a of the
    UTF-8 bytes, hexadecimal) appended when a character other than "-" was replaced."""
    out, replaced = "", False
    for ch in s.lower():
        if ch.isascii() and (ch.isalnum() or ch == "_"):
            out += ch
        else:
            out += "_"
            replaced = replaced or ch != "-"
    if not replaced:
        return out
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return f"{out}_{h:x}"


DEV2 = "kioskd_" + entity_slug(KIOSK2_ID)
# The third kiosk: config/scoreboard-clock.toml (scene "board" with a game clock and a shot clock).
KIOSK3_ID = "ha-clock"
DEV3 = "kioskd_ha_clock"
CLOCK_SCENE = "board"


def clock_entities(dev, scene):
    """The clock's entity ids docs/mqtt.md names."""
    c = f"{dev}_clock_{entity_slug(scene)}"
    return sorted([f"button.{c}_{b}" for b in ("start", "stop", "reset", "next_period", "reset_shot")]
                  + [f"sensor.{c}_remaining", f"sensor.{c}_period", f"binary_sensor.{c}_running"])
SCENES = ["score", "clock"]

T0 = time.monotonic()
results = []  # (ok, name, detail)
procs = []  # (name, Popen)
workdirs = []  # removed on an interrupt


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def check(name, ok, detail=""):
    results.append((ok, name, detail))
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not detail else f": {detail}"), flush=True)
    return ok


class Fatal(Exception):
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def wait_until(what, seconds, fn, interval=0.2):
    """Calls fn until it returns a true value or `seconds` pass; returns the last value."""
    end = time.monotonic() + seconds
    while True:
        v = fn()
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)


def start(name, argv, logpath, **kw):
    f = open(logpath, "wb")
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                         start_new_session=True, **kw)
    f.close()
    procs.append((name, p))
    return p


def stop_all():
    """SIGTERM to each process group, newest first (Home Assistant before the broker), each waited
    for (bounded), then SIGKILL."""
    for name, p in reversed(procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            log(f"{name} did not stop within 20 s of SIGTERM: SIGKILL")
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


class HA:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.token = None

    def request(self, method, path, body=None, form=None, timeout=30):
        headers = {}
        data = None
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            raw = e.read()
            status = e.code
        text = raw.decode("utf-8", "replace")
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text

    def ok(self, method, path, body=None, form=None):
        status, data = self.request(method, path, body=body, form=form)
        if status not in (200, 201):
            raise Fatal(f"{method} {path} answered {status}: {data}")
        return data

    def state(self, entity_id):
        status, data = self.request("GET", f"/api/states/{entity_id}")
        return data if status == 200 else None

    def template(self, tpl):
        status, data = self.request("POST", "/api/template", body={"template": tpl})
        if status != 200:
            raise Fatal(f"template {tpl!r} answered {status}: {data}")
        return data

    def service(self, domain, service, **data):
        return self.ok("POST", f"/api/services/{domain}/{service}", body=data)


def documented_entities(dev, counters, outputs=()):
    """The entity ids docs/mqtt.md names."""
    ids = [f"select.{dev}_scene", f"select.{dev}_theme", f"switch.{dev}_panel_blanked"]
    for name, _ in outputs:
        ids += [f"select.{dev}_scene_{entity_slug(name)}", f"switch.{dev}_panel_blanked_{entity_slug(name)}"]
    for name, _ in counters:
        name = entity_slug(name)
        ids += [f"number.{dev}_{name}", f"button.{dev}_{name}_increment",
                f"button.{dev}_{name}_decrement", f"button.{dev}_{name}_reset"]
    ids += [f"sensor.{dev}_{s}" for s in ("fps", "frame_ms_p99", "frame_gap_ms", "uptime", "output")]
    ids += [f"binary_sensor.{dev}_time_synced"]
    return sorted(ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="the root made by scripts/ha/setup.sh")
    ap.add_argument("--kioskd", required=True)
    ap.add_argument("--kioskctl", required=True)
    ap.add_argument("--themes", required=True, help="theme_dir for kioskd")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kioskd-ha-")
    workdirs.append(work)
    os.chmod(work, 0o755)
    hadir = os.path.join(work, "ha")
    os.mkdir(hadir)
    logs = {"mosquitto": f"{work}/mosquitto.log", "kioskd": f"{work}/kioskd.log", "kioskd2": f"{work}/kioskd2.log",
            "kioskd3": f"{work}/kioskd3.log", "hass": f"{hadir}/home-assistant.log", "hass-stdout": f"{work}/hass.out"}
    sock = f"{work}/control.sock"
    sock2 = f"{work}/control2.sock"
    sock3 = f"{work}/control3.sock"
    failed_hard = False

    def ctl(*a, json_out=True, sock=sock):
        argv = [args.kioskctl, a[0], "--socket", sock] + (["--json"] if json_out else []) + list(a[1:])
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        if r.returncode != 0:
            raise Fatal(f"kioskctl {' '.join(a)} exited {r.returncode}: {r.stdout}{r.stderr}")
        return json.loads(r.stdout) if json_out else r.stdout

    def kiosk_status():
        return ctl("status")

    def counter(name):
        return ctl("counter", name, "get")["value"]

    try:
        # Broker.
        bport = free_port()
        with open(f"{work}/mosquitto.conf", "w") as f:
            f.write(f"listener {bport} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    "user root\nlog_dest stderr\n")
        start("mosquitto", ["/usr/sbin/mosquitto", "-c", f"{work}/mosquitto.conf"], logs["mosquitto"])
        if not wait_until("broker", 10, lambda: accepts(bport), 0.05):
            raise Fatal(f"mosquitto does not listen on 127.0.0.1:{bport}")
        log(f"mosquitto on 127.0.0.1:{bport}")

        # kioskd: the kiosk the checks drive, and the second one.
        def start_kiosk(name, kid, counter_list, scenes, sock_path, outputs=()):
            counters = "".join(f'[[scene.score.counter]]\nname = "{n}"\nlabel = "{l}"\n' for n, l in counter_list)
            heads = "".join(f'[[output]]\nconnector = "{c}"\nscenes = {json.dumps(sc)}\n' for c, sc in outputs)
            clock = '[scene.clock]\nkind = "clock"\n' if "clock" in scenes else ""
            with open(f"{work}/{name}.toml", "w") as f:
                f.write(f'''theme = "scoreboard"
theme_dir = "{args.themes}"
state_dir = "{work}/{name}-state"
[display]
backend = "headless"
headless_size = "320x180"
{heads}[scenes]
order = {json.dumps(scenes)}
[scene.score]
kind = "counter"
digits = 3
min = 0
roll_ms = 0
{counters}{clock}[control]
socket = "{sock_path}"
[mqtt]
broker = "mqtt://127.0.0.1:{bport}"
id = "{kid}"
keepalive = 5
''')
            proc = start(name, [args.kioskd, "--config", f"{work}/{name}.toml", "--backend", "headless"], logs[name])

            def kiosk_up():
                if proc.poll() is not None:
                    raise Fatal(f"{name} exited with {proc.returncode}")
                try:
                    return ctl("status", sock=sock_path)
                except Exception:
                    return None
            if not wait_until(name, 30, kiosk_up, 0.1):
                raise Fatal(f"{name}'s control socket did not answer within 30 s")
            log(f"{name} ({kid}) answers on its control socket")
        start_kiosk("kioskd", KIOSK_ID, COUNTERS, SCENES, sock)
        start_kiosk("kioskd2", KIOSK2_ID, COUNTERS2, ["score", "clock"], sock2, OUTPUTS2)

        # Home Assistant: chroot in a private mount namespace; its config dir bound at /mnt.
        hport = free_port()
        with open(f"{hadir}/configuration.yaml", "w") as f:
            f.write(f"""homeassistant:
  name: kioskd test
http:
  server_host: 127.0.0.1
  server_port: {hport}
api:
config:
onboarding:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
    homeassistant.setup: info
""")
        root = args.root
        # The root (a shared cache) read-only; /tmp a tmpfs; the config dir the only thing kept.
        sh = (f'set -e; mount --bind "{root}" "{root}"; mount -o remount,bind,ro "{root}"; '
              f'mount --rbind /dev "{root}/dev"; mount -t proc proc "{root}/proc"; '
              f'mount -t tmpfs tmpfs "{root}/tmp"; mount --bind "{hadir}" "{root}/mnt"; '
              f'exec chroot "{root}" env -i PATH=/opt/ha/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC '
              f'/opt/ha/bin/hass -c /mnt --skip-pip --log-file /mnt/home-assistant.log --log-no-color')
        ha_start = time.monotonic()
        hass = start("hass", ["unshare", "--mount", "--propagation", "private", "sh", "-c", sh], logs["hass-stdout"])
        ha = HA(hport)

        def ha_up():
            if hass.poll() is not None:
                raise Fatal(f"Home Assistant exited with {hass.returncode}")
            try:
                status, data = ha.request("GET", "/api/onboarding", timeout=5)
                return status == 200
            except OSError:
                return False
        if not wait_until("hass", 180, ha_up, 0.5):
            raise Fatal("Home Assistant's HTTP API did not answer within 180 s")
        log(f"Home Assistant answers on 127.0.0.1:{hport} after {time.monotonic() - ha_start:.1f} s")

        # Onboarding: user → token → core_config → analytics → integration.
        client_id = ha.base + "/"
        r = ha.ok("POST", "/api/onboarding/users", body={
            "client_id": client_id, "name": "CI", "username": "ci", "password": "kioskd-ci-password",
            "language": "en"})
        tok = ha.ok("POST", "/auth/token", form={
            "grant_type": "authorization_code", "code": r["auth_code"], "client_id": client_id})
        ha.token = tok["access_token"]
        ha.ok("POST", "/api/onboarding/core_config", body={})
        ha.ok("POST", "/api/onboarding/analytics", body={})
        ha.ok("POST", "/api/onboarding/integration", body={
            "client_id": client_id, "redirect_uri": client_id + "?auth_callback=1"})
        steps = ha.request("GET", "/api/onboarding")[1]
        check("onboarding: every step done", isinstance(steps, list) and all(s.get("done") for s in steps), str(steps))
        cfg = ha.ok("GET", "/api/config")
        ha_version = cfg.get("version")
        log(f"Home Assistant {ha_version}")

        # The MQTT integration through the config-flow API.
        flow = ha.ok("POST", "/api/config/config_entries/flow", body={"handler": "mqtt", "show_advanced_options": False})
        if flow.get("type") == "menu":
            flow = ha.ok("POST", f"/api/config/config_entries/flow/{flow['flow_id']}", body={"next_step_id": "broker"})
        if flow.get("type") != "form" or flow.get("step_id") != "broker":
            raise Fatal(f"the MQTT config flow did not ask for the broker: {flow}")
        res = ha.ok("POST", f"/api/config/config_entries/flow/{flow['flow_id']}", body={
            "broker": "127.0.0.1", "port": bport,
            "other_settings": {"set_client_cert": False, "set_ca_cert": "off", "transport": "tcp"}})
        check("MQTT integration added through the config flow", res.get("type") == "create_entry",
              json.dumps(res)[:600])
        if res.get("type") != "create_entry":
            raise Fatal("no MQTT config entry")

        # (a) The devices and their entities.
        # What kioskd asks for: the default_entity_id of every component of its retained
        # discovery messages; and the ids docs/mqtt.md names must be among them.
        r = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(bport), "-t", "homeassistant/device/+/config",
                            "-C", "2", "-W", "5", "--retained-only"], capture_output=True, text=True, timeout=20)
        asked = {}
        for line in r.stdout.splitlines():
            msg = json.loads(line)
            asked[msg["device"]["name"]] = sorted(c.get("default_entity_id", "(none)") for c in msg["components"].values())
        want1 = asked.get(f"kioskd {KIOSK_ID}", [])
        want2 = asked.get(f"kioskd {KIOSK2_ID}", [])
        want = sorted(want1 + want2)
        for kid, dev, counters, outputs, w in ((KIOSK_ID, DEV, COUNTERS, (), want1), (KIOSK2_ID, DEV2, COUNTERS2, OUTPUTS2, want2)):
            doc = documented_entities(dev, counters, outputs)
            check(f"(a) kiosk {kid} asks for the {len(doc)} documented entity ids ({len(w)} in all)",
                  set(doc) <= set(w), f"not asked for: {sorted(set(doc) - set(w))}; asked: {w}")

        def mqtt_entities():
            return sorted(ha.template("{{ integration_entities('mqtt') | list | tojson }}"))
        wait_until("entities", 60, lambda: set(want) <= set(mqtt_entities()), 0.5)
        got = mqtt_entities()
        missing = [e for e in want if e not in got]
        extra = [e for e in got if e not in want]
        check(f"(a) Home Assistant's entity ids are exactly those kioskd asks for ({len(want1)} + {len(want2)} entities of 2 kiosks)",
              not missing and not extra, f"missing {missing}, unexpected {extra}")
        for kid, w in ((KIOSK_ID, want1), (KIOSK2_ID, want2)):
            first = next((e for e in got if e in w), "none.none")
            dev = ha.template("{% set d = device_id('" + first + "') %}"
                              "{{ {'name': device_attr(d, 'name'), 'manufacturer': device_attr(d, 'manufacturer'),"
                              " 'model': device_attr(d, 'model'), 'entities': device_entities(d) | list | sort} | tojson }}")
            check(f"(a) one device 'kioskd {kid}' (kioskd, kiosk display) holds its {len(w)} entities",
                  dev.get("name") == f"kioskd {kid}" and dev.get("manufacturer") == "kioskd"
                  and dev.get("model") == "kiosk display" and sorted(dev.get("entities") or []) == w,
                  json.dumps(dev))

        def st(e):
            return (ha.state(e) or {}).get("state")

        num = f"number.{DEV}_home"
        v = wait_until("available", 30, lambda: st(num) not in (None, "unavailable", "unknown") and st(num))
        try:
            zero = float(v) == 0
        except (TypeError, ValueError):
            zero = False
        check("(a) entities available (number has the kiosk's value 0)", zero, f"{num} is {st(num)!r} after 30 s")
        # What Home Assistant made of each component (entity id, friendly name, state).
        for e in got:
            s = ha.state(e) or {}
            log(f"  {e:45} {s.get('attributes', {}).get('friendly_name', '')!r:40} {s.get('state')}")

        out = wait_until("output", 30, lambda: st(f"sensor.{DEV}_output") not in (None, "unavailable", "unknown") and st(f"sensor.{DEV}_output"))
        check("(a) diagnostic sensor output reads the kiosk's status", bool(out) and "headless" in str(out), f"state {out!r}")

        # (b) Home Assistant → kiosk.
        def expect_kiosk(name, action, fn, want_value, seconds=10):
            """Runs action (a Home Assistant service call), then waits for fn() == want_value."""
            last = [None]

            def probe():
                last[0] = fn()
                return last[0] == want_value
            try:
                action()
                ok = wait_until(name, seconds, probe, 0.1)
                check(name, ok, f"kiosk shows {last[0]!r}, expected {want_value!r} within {seconds} s")
            except Exception as e:
                check(name, False, f"{type(e).__name__}: {e}")

        for name, _ in COUNTERS:
            expect_kiosk(f"(b) button {name} +1 → counter {name} 1", lambda: ha.service("button", "press", entity_id=f"button.{DEV}_{name}_increment"), lambda: counter(name), 1)
            expect_kiosk(f"(b) button {name} +1 again → counter {name} 2", lambda: ha.service("button", "press", entity_id=f"button.{DEV}_{name}_increment"), lambda: counter(name), 2)
            expect_kiosk(f"(b) button {name} −1 → counter {name} 1", lambda: ha.service("button", "press", entity_id=f"button.{DEV}_{name}_decrement"), lambda: counter(name), 1)
            expect_kiosk(f"(b) number {name} set 42 → counter {name} 42", lambda: ha.service("number", "set_value", entity_id=f"number.{DEV}_{name}", value=42), lambda: counter(name), 42)
            expect_kiosk(f"(b) button {name} reset → counter {name} 0", lambda: ha.service("button", "press", entity_id=f"button.{DEV}_{name}_reset"), lambda: counter(name), 0)
        expect_kiosk(f"(b) second kiosk: button {DEV2}_home_increment → counter HOME 1",
                     lambda: ha.service("button", "press", entity_id=f"button.{DEV2}_home_increment"),
                     lambda: ctl("counter", "HOME", "get", sock=sock2)["value"], 1)
        expect_kiosk("(b) select scene clock → kiosk scene clock", lambda: ha.service("select", "select_option", entity_id=f"select.{DEV}_scene", option="clock"), lambda: kiosk_status()["scene"], "clock")
        expect_kiosk("(b) select scene score → kiosk scene score", lambda: ha.service("select", "select_option", entity_id=f"select.{DEV}_scene", option="score"), lambda: kiosk_status()["scene"], "score")
        expect_kiosk("(b) select theme night → kiosk theme night", lambda: ha.service("select", "select_option", entity_id=f"select.{DEV}_theme", option="night"), lambda: kiosk_status()["theme"], "night")
        expect_kiosk("(b) switch panel_blanked on → kiosk blanked", lambda: ha.service("switch", "turn_on", entity_id=f"switch.{DEV}_panel_blanked"), lambda: kiosk_status()["blanked"], True)
        expect_kiosk("(b) switch panel_blanked off → kiosk shown", lambda: ha.service("switch", "turn_off", entity_id=f"switch.{DEV}_panel_blanked"), lambda: kiosk_status()["blanked"], False)

        # (c) kiosk → Home Assistant.
        def expect_ha(name, command, entity, test, seconds=15, sock=sock):
            """Runs kioskctl COMMAND (on the kiosk of `sock`), then waits for test(entity's state)."""
            last = [None]

            def probe():
                last[0] = st(entity)
                try:
                    return test(last[0])
                except (TypeError, ValueError):
                    return False
            try:
                ctl(*command, sock=sock)
                ok = wait_until(name, seconds, probe, 0.2)
                check(name, ok, f"{entity} is {last[0]!r} after {seconds} s")
            except Exception as e:
                check(name, False, f"{type(e).__name__}: {e}")

        expect_ha("(c) kioskctl counter home set 7 → number home 7", ("counter", "home", "set", "7"), num, lambda s: float(s) == 7)
        expect_ha("(c) kioskctl counter away inc → number away 1", ("counter", "away", "inc"), f"number.{DEV}_away", lambda s: float(s) == 1)
        expect_ha("(c) kioskctl scene clock → select scene clock", ("scene", "clock"), f"select.{DEV}_scene", lambda s: s == "clock")
        expect_ha("(c) kioskctl theme default → select theme default", ("theme", "default"), f"select.{DEV}_theme", lambda s: s == "default")
        expect_ha("(c) kioskctl blank on → switch on", ("blank", "on"), f"switch.{DEV}_panel_blanked", lambda s: s == "on")
        expect_ha("(c) kioskctl blank off → switch off", ("blank", "off"), f"switch.{DEV}_panel_blanked", lambda s: s == "off")

        # (d) The second kiosk's outputs: DSI-1's select changes DSI-1 only, and follows kioskctl.
        dsi = f"select.{DEV2}_scene_dsi_1"
        scenes2 = lambda: [o["scene"] for o in ctl("status", sock=sock2)["outputs"]]
        check("(d) DSI-1's select offers the scenes DSI-1 shows", (ha.state(dsi) or {}).get("attributes", {}).get("options") == ["score", "clock"],
              json.dumps(ha.state(dsi)))
        expect_kiosk("(d) select DSI-1 scene clock → DSI-1 shows clock, HDMI-A-1 still score",
                     lambda: ha.service("select", "select_option", entity_id=dsi, option="clock"), scenes2, ["score", "clock"])
        expect_ha("(d) kioskctl scene score --output DSI-1 → DSI-1's select score", ("scene", "score", "--output", "DSI-1"), dsi,
                  lambda s: s == "score", sock=sock2)

        # (e) The example scoreboard with a game clock, as shipped, with this run's broker.
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        example = open(os.path.join(repo, "config", "scoreboard-clock.toml")).read()
        with open(f"{work}/kioskd3.toml", "w") as f:
            f.write(f'theme_dir = "{args.themes}"\nstate_dir = "{work}/kioskd3-state"\n' + example
                    + f'\n[display]\nbackend = "headless"\nheadless_size = "320x180"\n[control]\nsocket = "{sock3}"\n'
                    + f'[mqtt]\nbroker = "mqtt://127.0.0.1:{bport}"\nid = "{KIOSK3_ID}"\nkeepalive = 5\n')
        k3 = start("kioskd3", [args.kioskd, "--config", f"{work}/kioskd3.toml", "--backend", "headless"], logs["kioskd3"])

        def k3_up():
            if k3.poll() is not None:
                raise Fatal(f"kioskd3 exited with {k3.returncode}")
            try:
                return ctl("status", sock=sock3)
            except Exception:
                return None
        if not wait_until("kioskd3", 30, k3_up, 0.1):
            raise Fatal("kioskd3's control socket did not answer within 30 s")
        log(f"kioskd3 ({KIOSK3_ID}, config/scoreboard-clock.toml) answers on its control socket")
        clock_ids = clock_entities(DEV3, CLOCK_SCENE)
        wait_until("clock entities", 60, lambda: set(clock_ids) <= set(mqtt_entities()), 0.5)
        got3 = [e for e in mqtt_entities() if e.startswith(("button.", "sensor.", "binary_sensor.")) and f"{DEV3}_clock_" in e]
        check(f"(e) the clock's {len(clock_ids)} entities appear (Start/Stop/Reset/Next period/Reset shot clock, remaining, period, running)",
              got3 == clock_ids, f"got {got3}, expected {clock_ids}")
        c = f"{DEV3}_clock_{CLOCK_SCENE}"
        remaining0 = wait_until("remaining", 30, lambda: st(f"sensor.{c}_remaining") == "10:00" and st(f"sensor.{c}_remaining"))
        check("(e) the remaining sensor reads 10:00, the period sensor 1, running off",
              remaining0 == "10:00" and st(f"sensor.{c}_period") == "1" and st(f"binary_sensor.{c}_running") == "off",
              f"remaining {st(f'sensor.{c}_remaining')!r}, period {st(f'sensor.{c}_period')!r}, running {st(f'binary_sensor.{c}_running')!r}")

        def clock3():
            return ctl("status", sock=sock3)["clocks"][0]["clock"]
        expect_kiosk("(e) button Clock start pressed in Home Assistant → kioskd's status: the clock runs",
                     lambda: ha.service("button", "press", entity_id=f"button.{c}_start"), lambda: clock3()["running"], True)

        def moved():
            v = st(f"sensor.{c}_remaining") or ""
            m, _, sec = v.partition(":")
            return m.isdigit() and sec.isdigit() and len(sec) == 2 and (int(m) * 60 + int(sec)) < 600 and v
        seen = wait_until("remaining moves", 15, moved, 0.2)
        check("(e) the remaining sensor moves while the clock runs", bool(seen), f"still {st(f'sensor.{c}_remaining')!r}")
        running = wait_until("running on", 10, lambda: st(f"binary_sensor.{c}_running") == "on")
        check("(e) the running binary sensor is on", bool(running), f"{st(f'binary_sensor.{c}_running')!r}")
        expect_kiosk("(e) button Clock stop → the clock stops", lambda: ha.service("button", "press", entity_id=f"button.{c}_stop"),
                     lambda: clock3()["running"], False)
        left = clock3()["remaining_ms"]
        shown = wait_until("remaining settles", 10, lambda: st(f"sensor.{c}_remaining") == f"{-(-left // 1000) // 60}:{-(-left // 1000) % 60:02d}"
                           and st(f"sensor.{c}_remaining"))
        check("(e) stopped: the remaining sensor shows the time kioskd kept (whole seconds rounded up)", bool(shown),
              f"sensor {st(f'sensor.{c}_remaining')!r}, kioskd {left} ms")
        expect_kiosk("(e) button Clock next period → period 2", lambda: ha.service("button", "press", entity_id=f"button.{c}_next_period"),
                     lambda: clock3()["period"], 2)
        period2 = wait_until("period sensor", 10, lambda: st(f"sensor.{c}_period") == "2")
        check("(e) the period sensor follows: 2", bool(period2), f"{st(f'sensor.{c}_period')!r}")
    except Fatal as e:
        failed_hard = True
        check("run", False, str(e))
    except Exception as e:  # an unexpected error is a failure with its reason, not a traceback only
        failed_hard = True
        check("run", False, f"{type(e).__name__}: {e}")
    finally:
        stop_all()

    failed = sum(1 for ok, _, _ in results if not ok)
    passed = len(results) - failed
    if failed or failed_hard:
        for name, path, n in (("Home Assistant log", logs["hass"], 120), ("hass stdout", logs["hass-stdout"], 40),
                              ("kioskd log", logs["kioskd"], 200), ("second kioskd log", logs["kioskd2"], 60),
                              ("third kioskd log", logs["kioskd3"], 60), ("mosquitto log", logs["mosquitto"], 40)):
            try:
                lines = open(path, errors="replace").read().splitlines()
            except OSError:
                lines = ["(none)"]
            print(f"----- {name} ({path}), last {n} lines -----")
            print("\n".join(lines[-n:]))
    else:
        # Home Assistant's remarks on the discovery message, if any, even when every check passed.
        try:
            notes = [l for l in open(logs["hass"], errors="replace") if "kioskd" in l and ("WARNING" in l or "ERROR" in l)]
        except OSError:
            notes = []
        for l in notes[:20]:
            print("NOTE Home Assistant: " + l.rstrip())
    print(f"{passed} passed, {failed} failed ({time.monotonic() - T0:.0f} s)")
    if not args.keep:
        subprocess.run(["rm", "-rf", "--one-file-system", work])
    else:
        print(f"work directory kept: {work}")
    return 1 if failed or failed_hard else 0


if __name__ == "__main__":
    def on_term(*_):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        stop_all()
        for w in workdirs:
            subprocess.run(["rm", "-rf", "--one-file-system", w])
        print("interrupted")
        sys.exit(130)
