"""The horn through ALSA on a real kernel: snd-aloop's loopback card, kioskd playing on
hw:Loopback,0,0 (`[audio] device`) and kiosk-vmtool recording hw:Loopback,1,0. The recording
must hold the built-in horn's two tones (440 and 554 Hz, measured), last `horn_seconds`, and
begin within 50 ms of the request. Both instants are CLOCK_MONOTONIC of the guest's one kernel:
kioskd stamps the request when it takes it (`kioskctl horn`'s answer, `requested_ns`); the capture
dates the first loud frame from the reads of the half second after it (the smallest
`now − (frames captured − frame) / rate`: the device's position lags the truth, so this is never
early, and so close to the frame that a device clock drifting from CLOCK_MONOTONIC adds little),
so the first loud sample's instant is on the same clock. snd-aloop moves both streams on the kernel's jiffies (4 ms at HZ=250) and
starts copying the played samples at the jiffy the playback started: the instant found is that
of the stream's start within one jiffy (it may read up to 4 ms before the real start, hence the
lower bound of −5 ms).
`mute = true` must give silence, and a device that does not exist an unavailable horn while the
clock keeps drawing.
kioskd-horn-clock: the horn sounded by a game clock running out, measured from the instant of the
frame that shows 0.0 (kioskd's "game clock reached zero" log line: frame_ns and zero_ns, on the
same CLOCK_MONOTONIC), silent when muted and after a restart once the period has ended."""

import json
import re

from clockfaces import NS_PER_MS, change_lags_ns, check_lags, face_error_ns, parse_shown, truth_ns
from vmharness import Session, scenario

TONES = (440.0, 554.37)
HORN_SECONDS = 1.0
# volume = 80: the two sines' sum peaks at 0.9 × 0.8 of full scale.
PEAK = 0.9 * 0.8 * 32767


def load(payload: str):
    try:
        return json.loads(payload)
    except ValueError:
        return None


def started(s: Session) -> bool:
    """snd-aloop's card is up and kioskd started on it (the guest's aloop and kioskd-up markers)."""
    aloop = s.wait_marker("aloop", 120)
    s.result("aloop", aloop)
    s.expect(aloop.startswith("ok") and "Loopback" in aloop, f"snd-aloop's Loopback card is up ({aloop})")
    if not aloop.startswith("ok"):
        return False
    up = s.wait_marker("kioskd-up", 120)
    s.expect(up != "failed", "kioskd started with [audio] device = \"hw:Loopback,0,0\"")
    return up != "failed"


def check_horn_heard(s: Session, capture: dict, what: str = "") -> None:
    """The recording holds the built-in horn: its two tones, its length, its level."""
    peaks = capture.get("peaks_hz") or []
    s.expect(len(peaks) == 2 and all(abs(p - t) <= 4 for p, t in zip(sorted(peaks), TONES)),
             f"{what}the recording's two strongest frequencies are the horn's {TONES} Hz ({peaks})")
    length = capture.get("sound_seconds") or 0
    s.expect(abs(length - HORN_SECONDS) <= 0.05, f"{what}the horn lasted {length:.3f} s (horn_seconds = {HORN_SECONDS}, ± 50 ms)")
    peak = capture.get("peak") or 0
    s.expect(abs(peak - PEAK) <= 0.05 * PEAK, f"{what}its level follows volume = 80: peak {peak} (≈ {PEAK:.0f})")


def silent(capture: dict) -> bool:
    """A recording that ran and heard nothing."""
    return capture.get("frames", 0) > 0 and capture.get("peak", 99999) < 100 and capture.get("onset_ns") is None


@scenario("kioskd-horn", display="none", timeout=420, guest="kioskd-horn.sh")
def kioskd_horn(s: Session) -> None:
    """kioskctl horn on snd-aloop: the tones measured, its length, ≤ 50 ms from the request to the first sound; mute is silent; no device leaves the horn unavailable."""
    if not started(s):
        return
    ready = load(s.wait_marker("ready-status", 60)) or {}
    audio = ready.get("audio") or {}
    s.result("ready_audio", audio)
    s.expect(audio.get("available") is True and audio.get("device") == "hw:Loopback,0,0",
             f"status: the horn is available on hw:Loopback,0,0 ({audio})")

    answer = load(s.wait_marker("sound-answer", 60)) or {}
    capture = load(s.wait_marker("sound-capture", 60)) or {}
    status = load(s.wait_marker("sound-status", 60)) or {}
    s.result("sound_answer", answer)
    s.result("sound_capture", capture)
    if capture.get("onset_ns") is not None and capture.get("onset_from_start_ns") is not None:
        s.result("onset_dated_from_frame0_minus_near_ms", round((capture["onset_from_start_ns"] - capture["onset_ns"]) / 1e6, 2))
    last = (status.get("audio") or {}).get("last_horn") or {}
    s.result("last_horn", last)
    s.expect(answer.get("result") == "sounding", f"kioskctl horn: sounding ({answer})")
    onset, requested = capture.get("onset_ns"), answer.get("requested_ns")
    s.expect(onset is not None, f"the recording has the horn ({capture})")
    s.expect(capture.get("overruns") == 0, f"the capture lost no samples (overruns: {capture.get('overruns')})")
    if onset is not None and requested is not None:
        delay_ms = (onset - requested) / 1e6
        s.result("request_to_first_sound_ms", round(delay_ms, 2))
        s.expect(-5 <= delay_ms <= 50, f"the first loud sample came {delay_ms:.1f} ms after the request (≤ 50 ms)")
    check_horn_heard(s, capture)
    s.expect(last.get("write_latency_ms") is not None and last["write_latency_ms"] < 50,
             f"status reports the request → first write time ({last})")
    s.expect(last.get("underruns") == 0, f"the device never ran dry while the horn played ({last})")

    s.expect(s.wait_marker("reload-mute", 60).strip() != "", "kioskctl reload with mute = true")
    muted = load(s.wait_marker("muted-answer", 60)) or {}
    mcap = load(s.wait_marker("muted-capture", 60)) or {}
    s.wait_marker("muted-status", 60)
    s.result("muted_answer", muted)
    s.result("muted_capture", mcap)
    s.expect(muted.get("result") == "muted", f"kioskctl horn while muted answers \"muted\" ({muted})")
    s.expect(silent(mcap),
             f"with mute = true the recording is silent (peak {mcap.get('peak')})")

    s.wait_marker("reload-nodevice", 60)
    horn = s.wait_marker("nodevice-horn", 60)
    s.result("nodevice_horn", horn)
    s.expect("the horn is unavailable" in horn and "hw:NoSuchCard,0,0" in horn and "HTTP 503" in horn,
             f"kioskctl horn without a device: a clear error naming it ({horn})")
    parts = s.wait_marker("nodevice-status", 60).split(" @ ")
    before, after = (load(parts[0]) or {}), (load(parts[-1]) or {})
    a = after.get("audio") or {}
    s.result("nodevice_audio", a)
    s.expect(a.get("available") is False and "hw:NoSuchCard,0,0" in (a.get("error") or ""),
             f"status: the horn is unavailable and says why ({a})")
    s.expect((after.get("frames") or 0) > (before.get("frames") or 0),
             f"the clock kept drawing ({before.get('frames')} → {after.get('frames')} frames)")
    log = s.wait_marker("horn-log", 30)
    s.result("horn_log", log)
    s.expect("horn is unavailable" in log, f"kioskd logged one warning for the missing device ({log})")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")


ZERO_RE = re.compile(r"frame_ns=(\d+).*?zero_ns=(\d+)")


@scenario("kioskd-horn-clock", display="none", timeout=600, guest="kioskd-horn-clock.sh")
def kioskd_horn_clock(s: Session) -> None:
    """A 3 s game clock running out on snd-aloop: the horn's tones begin ≤ 50 ms after the frame that shows 0.0; mute is silent; a restart after the period ended is silent."""
    if not started(s):
        return
    s.result("ready_status", load(s.wait_marker("ready-status", 60)) or {})
    zeros_seen = 0
    for name in ("sound", "muted", "again"):
        if name == "muted":
            s.wait_marker("reload-true", 60)
        if name == "again":
            s.wait_marker("reload-false", 60)
        start = load(s.wait_marker(f"{name}-start", 90)) or {}
        capture = load(s.wait_marker(f"{name}-capture", 60)) or {}
        kept = load(s.wait_marker(f"{name}-kept", 60)) or {}
        zeros = [tuple(map(int, m.groups())) for m in ZERO_RE.finditer(s.wait_marker(f"{name}-zero", 60))]
        status = load(s.wait_marker(f"{name}-status", 60)) or {}
        s.result(f"{name}_capture", capture)
        s.result(f"{name}_kept", kept)
        s.expect(start.get("ok") is True, f"{name}: kioskctl clock start ({start})")
        s.expect(len(zeros) == zeros_seen + 1, f"{name}: the clock ran out once ({len(zeros) - zeros_seen} new 'reached zero' lines)")
        if len(zeros) != zeros_seen + 1:
            return
        zeros_seen += 1
        frame_ns, zero_ns = zeros[-1]
        s.result(f"{name}_frame_minus_zero_ms", round((frame_ns - zero_ns) / 1e6, 2))
        s.expect(frame_ns >= zero_ns, f"{name}: the frame showing 0.0 is not before the clock reached zero")
        if kept.get("sinceMonotonicNs") is not None:
            planned = kept["sinceMonotonicNs"] + kept["remainingMs"] * 1_000_000
            s.result(f"{name}_zero_minus_kept_start_plus_length_ms", round((zero_ns - planned) / 1e6, 3))
            s.expect(abs(zero_ns - planned) <= 1_000_000,
                     f"{name}: the clock reached zero at its kept start + {kept['remainingMs']} ms")
        else:
            s.expect(False, f"{name}: the kept record has the start instant ({kept})")
        if name == "muted":
            s.expect(silent(capture), f"muted: the clock running out made no sound (peak {capture.get('peak')})")
            continue
        last = (status.get("audio") or {}).get("last_horn") or {}
        s.result(f"{name}_last_horn", last)
        s.expect(last.get("requested_ns") == frame_ns, f"{name}: status's last horn was requested for the frame's instant ({last})")
        onset = capture.get("onset_ns")
        s.expect(onset is not None, f"{name}: the recording has the horn ({capture})")
        s.expect(capture.get("overruns") == 0, f"{name}: the capture lost no samples (overruns: {capture.get('overruns')})")
        if onset is not None:
            delay_ms = (onset - frame_ns) / 1e6
            s.result(f"{name}_onset_minus_frame_ms", round(delay_ms, 2))
            s.expect(-5 <= delay_ms <= 50, f"{name}: the first loud sample came {delay_ms:.1f} ms after the 0.0 frame (≤ 50 ms)")
        check_horn_heard(s, capture, f"{name}: ")

    s.expect(s.wait_marker("stop-exit", 30) == "0", "kioskd exits 0 on SIGTERM before the restart")
    up = s.wait_marker("kioskd-up", 120)
    s.expect(up != "failed", "kioskd started again")
    up_ms = int(s.wait_marker("restart-up-ms", 60) or "0")
    rcap = load(s.wait_marker("restart-capture", 60)) or {}
    rzero = s.wait_marker("restart-zero", 30)
    rstatus = load(s.wait_marker("restart-status", 30)) or {}
    s.result("restart_up_ms", up_ms)
    s.result("restart_capture", rcap)
    clocks = rstatus.get("clocks") or [{}]
    s.result("restart_clocks", clocks)
    s.expect(up_ms <= 12_000, f"kioskd's first frame came {up_ms} ms into the 15 s recording (≥ 3 s recorded after it)")
    s.expect(rzero == "", f"after the restart the ended period is not reported again ({rzero!r})")
    s.expect(silent(rcap), f"after the restart the recording is silent (peak {rcap.get('peak')})")
    s.expect((clocks[0].get("clock") or {}).get("remaining_ms") == 0, f"the restarted clock shows 0.0 ({clocks})")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")


ZERO_EVENT_RE = re.compile(r"event=(.*?) frame_ns=(\d+).*?zero_ns=(\d+)")


def clock_of(answer: dict) -> dict:
    """The clock of a `kioskctl clock --json` answer, or of status's first clock."""
    if "clocks" in answer:
        return ((answer.get("clocks") or [{}])[0]).get("clock") or {}
    return answer.get("clock") or {}


@scenario("kioskd-horn-shot", display="none", timeout=420, guest="kioskd-horn-shot.sh")
def kioskd_horn_shot(s: Session) -> None:
    """A 2 s shot clock running out under a 1:00 game clock on snd-aloop: the horn's tones begin ≤ 50 ms after the frame that shows the shot clock at 0.0; the game clock runs on, every face the truth's; the shot clock stops when the period ends."""
    if not started(s):
        return
    s.wait_marker("ready-status", 60)
    start = load(s.wait_marker("shot-start", 90)) or {}
    capture = load(s.wait_marker("shot-capture", 60)) or {}
    kept = load(s.wait_marker("shot-kept", 60)) or {}
    zeros = ZERO_EVENT_RE.findall(s.wait_marker("shot-zero", 60))
    status = load(s.wait_marker("shot-status", 60)) or {}
    shown = parse_shown(s.wait_marker("shot-shown", 60))
    s.result("capture", capture)
    s.result("kept", kept)
    s.expect(start.get("ok") is True, f"kioskctl clock start ({start})")
    s.expect(len(zeros) == 1 and zeros[0][0] == "shot clock expired", f"the shot clock ran out once, nothing else did ({zeros})")
    since = kept.get("sinceMonotonicNs")
    s.expect(since is not None and kept.get("remainingMs") == 60_000, f"the kept game clock runs since T with 1:00 left ({kept})")
    if len(zeros) != 1 or since is None:
        return
    frame_ns, zero_ns = int(zeros[0][1]), int(zeros[0][2])
    s.result("start_in_recording_s", round((since - capture.get("start_ns", since)) / 1e9, 2))
    s.result("frame_minus_zero_ms", round((frame_ns - zero_ns) / 1e6, 2))
    s.expect(zero_ns == since + 2_000 * NS_PER_MS, "the shot clock reached zero exactly 2 s after the start the game clock keeps")
    s.expect(frame_ns >= zero_ns, "the frame showing the shot clock at 0.0 is not before it reached zero")
    at_zero = [x for x in shown if x.frame_ns == frame_ns]
    s.expect(bool(at_zero) and at_zero[0].shot == "0.0" and at_zero[0].running,
             f"the frame log's frame at that instant shows the shot clock at 0.0, the game clock running ({at_zero})")
    last = (status.get("audio") or {}).get("last_horn") or {}
    s.result("last_horn", last)
    s.expect(last.get("requested_ns") == frame_ns, f"status's last horn was requested for the 0.0 frame's instant ({last})")
    onset = capture.get("onset_ns")
    s.expect(onset is not None and capture.get("overruns") == 0,
             f"the recording has the horn, no samples lost (the start came {(since - capture.get('start_ns', since)) / 1e9:.1f} s into the 12 s recording; {capture})")
    if onset is not None:
        delay_ms = (onset - frame_ns) / 1e6
        s.result("onset_minus_frame_ms", round(delay_ms, 2))
        s.expect(-5 <= delay_ms <= 50, f"the first loud sample came {delay_ms:.1f} ms after the frame showing the shot clock at 0.0 (≤ 50 ms)")
        check_horn_heard(s, capture)

    # The game clock runs on: running in status with time left; every frame after the shot
    # clock's zero shows the truth's face, and its faces come on time (never early; a late frame
    # is the host's load, so the promptest is what must be within one frame).
    c = clock_of(status)
    s.result("status_clock", c)
    s.expect(c.get("running") is True and c.get("shot_remaining_ms") == 0 and 0 < (c.get("remaining_ms") or 0) < 60_000,
             f"after the shot clock's zero the game clock still runs, the shot clock stays at 0 ({c})")
    after = [x for x in shown if x.frame_ns >= frame_ns]
    wrong = [(x.game, x.frame_ns) for x in after if face_error_ns(x.game, truth_ns(since, 60_000, x.frame_ns)) != 0]
    s.expect(len(after) >= 3 and not wrong, f"every frame after the shot clock's zero shows the game clock's true face ({len(after)} frames; off: {wrong[:3]})")
    check_lags(s, "the game clock after the shot clock's zero", [lag for _, lag in change_lags_ns(after, since, 60_000)])

    # The shot clock stops with the game clock (docs/scoreboard.md): the game clock set to 0:01,
    # the shot clock to 2 s, started: the period ends at the start + 1 s, the shot clock there.
    for name in ("stop1", "set1", "shot-reset", "start2"):
        s.result(name, clock_of(load(s.wait_marker(name, 60)) or {}))
    kept2 = load(s.wait_marker("kept2", 60)) or {}
    ended = clock_of(load(s.wait_marker("ended-status", 60)) or {})
    more = ZERO_EVENT_RE.findall(s.wait_marker("ended-zero", 60))
    s.result("ended", ended)
    s.expect(s.results.get("shot-reset", {}).get("shot_remaining_ms") == 2_000 and s.results.get("set1", {}).get("remaining_ms") == 1_000,
             "set 0:01 and reset --shot (2 s) while stopped")
    s.expect(ended == {"period": 1, "remaining_ms": 0, "running": False, "shot_remaining_ms": 1_000},
             f"the period ended and the shot clock stopped with it, exactly 1 s left ({ended})")
    s.expect(len(more) == 2 and more[1][0] == "period 1 ended" and kept2.get("sinceMonotonicNs") is not None
             and int(more[1][2]) == kept2["sinceMonotonicNs"] + 1_000 * NS_PER_MS,
             f"the period ended exactly 1 s after the start, and the shot clock did not run out ({more}, {kept2})")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
