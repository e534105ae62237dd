"""The game clock's faces as kioskd's frame log gives them ("game clock shown" at --log-level
debug, compacted by the guest's `shown_lines` to "FRAME_NS GAME RUNNING [SHOT]"), checked against
the truth: a clock running since the monotonic instant T with R left shows, at instant t, the
time left R − (t − T) rounded up to its face's unit (a tenth for `S.t`, a second for `M:SS` and
the shot clock's `S`). A frame that shows another face must come at or after the instant the
truth reaches that face, and at most one frame later (docs/scoreboard.md)."""

import re
from typing import NamedTuple, Optional

NS_PER_MS = 1_000_000
FRAME_NS = 17 * NS_PER_MS  # one frame at 60 Hz


class Shown(NamedTuple):
    frame_ns: int
    game: str
    running: bool
    shot: Optional[str]


def parse_shown(payload: str) -> list[Shown]:
    """The guest's compacted frame log ("FRAME_NS GAME RUNNING [SHOT]" joined by ",")."""
    out = []
    for item in payload.split(","):
        w = item.split()
        if len(w) >= 3 and w[0].isdigit():
            out.append(Shown(int(w[0]), w[1], w[2] == "true", w[3] if len(w) > 3 else None))
    return out


FACE_RE = re.compile(r"^(?:(\d+):(\d\d)|(\d+)\.(\d)|(\d+))$")


def face_upper_ns(face: str) -> int:
    """The most time left that `face` shows (counting down): it appears the instant this much is
    left. "0:57" → 57 s, "12.3" → 12.3 s, "3" (the shot clock) → 3 s."""
    m = FACE_RE.match(face)
    if not m:
        raise ValueError(f"not a clock face: {face!r}")
    if m.group(1) is not None:
        return (int(m.group(1)) * 60 + int(m.group(2))) * 1_000_000_000
    if m.group(3) is not None:
        return (int(m.group(3)) * 10 + int(m.group(4))) * 100_000_000
    return int(m.group(5)) * 1_000_000_000


def face_unit_ns(face: str) -> int:
    return 100_000_000 if "." in face else 1_000_000_000


def truth_ns(since_ns: int, remaining_ms: int, at_ns: int) -> int:
    """Time left at `at_ns` of a clock running since `since_ns` with `remaining_ms` left then."""
    return max(0, remaining_ms * NS_PER_MS - (at_ns - since_ns))


def face_error_ns(face: str, truth: int) -> int:
    """How far the truth is from what `face` shows: 0 when the face is the truth's; positive when
    the face shows more time than is left (late, by that much), negative when less (early)."""
    upper = face_upper_ns(face)
    lower = upper - face_unit_ns(face)
    if truth > upper:
        return upper - truth
    if truth <= lower and upper > 0:
        return lower - truth + 1
    return 0


def change_lags_ns(lines: list[Shown], since_ns: int, remaining_ms: int, shot: bool = False) -> list[tuple[Shown, int]]:
    """For each line that shows another game (or shot) face than the line before it, the time
    from the instant the truth reached that face to the frame: ≥ 0 (never early) and, for a
    clock that is on time, below one frame."""
    out = []
    for prev, cur in zip(lines, lines[1:]):
        a, b = (prev.shot, cur.shot) if shot else (prev.game, cur.game)
        if b is None or a == b:
            continue
        reached = since_ns + remaining_ms * NS_PER_MS - face_upper_ns(b)
        out.append((cur, cur.frame_ns - reached))
    return out


def check_lags(s, what: str, lags: list[int]) -> None:
    """Faces come on time: none before the truth reached it, and the promptest within one frame.
    Each lag is the truth's error plus how late the frame was woken; under emulation on a loaded
    host a frame can be woken tens of ms late, but a clock off by X shows no lag below X."""
    s.result(f"{what}: lags_ms", [round(x / 1e6, 2) for x in lags])
    early = [round(x / 1e6, 2) for x in lags if x < 0]
    s.expect(len(lags) >= 3 and not early, f"{what}: {len(lags)} faces, none before the truth reached it (early: {early})")
    if lags:
        s.expect(min(lags) <= FRAME_NS, f"{what}: the promptest face came {min(lags) / 1e6:.2f} ms after the truth (≤ one frame, 17 ms)")
