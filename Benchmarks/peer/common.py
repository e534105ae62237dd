"""Shared start-up and command line for the pygame peer scenes.

Each scene script runs as a normal kiosk program (a window, or the whole screen under
KMSDRM) and has three extra modes used by kioskd-bench:
  --first-frame   draw one frame, print "first-frame", exercise the scene briefly, exit
  --bench N       render N frames of the scene and print per-frame times (ms) as JSON
  --idle S        run the normal loop for S seconds after the first frame, print CPU use as JSON
"""
import argparse
import json
import os
import resource
import sys
import time

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
import pygame  # noqa: E402

BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
REGULAR = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def parse(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--size", default="1920x1080", help="WIDTHxHEIGHT")
    p.add_argument("--first-frame", action="store_true")
    p.add_argument("--bench", type=int, default=0, metavar="N")
    p.add_argument("--idle", type=float, default=0, metavar="SECONDS")
    p.add_argument("--strokes", default="10,1000,10000", help="paint: finished-stroke counts to time a segment at")
    a = p.parse_args()
    try:
        a.stroke_counts = [int(n) for n in a.strokes.split(",")]
    except ValueError:
        p.error("--strokes: expected counts like 10,1000,10000, got %r" % a.strokes)
    w, h = a.size.split("x")
    a.width, a.height = int(w), int(h)
    return a


def font(path, px):
    """A TTF font at px pixels (DejaVu when installed, pygame's own font otherwise)."""
    return pygame.font.Font(path if os.path.exists(path) else None, max(8, int(px)))


def open_screen(args):
    pygame.display.init()
    pygame.font.init()
    pygame.mouse.set_visible(False)
    return pygame.display.set_mode((args.width, args.height))


def first_frame():
    print("first-frame", flush=True)


def report_peak_rss():
    """Prints this process's peak resident set (VmHWM) for kioskd-bench."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                print("peak-rss-kib", line.split()[1], flush=True)


def emit(obj):
    print(json.dumps(obj), flush=True)


def timed(fn):
    """Runs fn() and returns its wall time in ms (time.perf_counter)."""
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


class IdleMeter:
    """CPU seconds and voluntary context switches (wake-ups) of this process over a run."""

    def __init__(self):
        self.ru = resource.getrusage(resource.RUSAGE_SELF)
        self.t = time.monotonic()

    def report(self, scene):
        ru = resource.getrusage(resource.RUSAGE_SELF)
        wall = time.monotonic() - self.t
        emit({"scene": scene, "wall_s": wall,
              "cpu_s": (ru.ru_utime - self.ru.ru_utime) + (ru.ru_stime - self.ru.ru_stime),
              "nvcsw": ru.ru_nvcsw - self.ru.ru_nvcsw})


def stroke_points(i, width, height):
    """Stroke i of the benchmark painting: 8 points along a short line (the same formula as kioskd-bench)."""
    import math
    fx = (i * 0.6180339887) % 1.0
    fy = (i * 0.4142135623) % 1.0
    cx, cy = 0.25 + 0.5 * fx, 0.25 + 0.5 * fy
    a = i * 0.7
    return [(int((cx + 0.06 * j / 7 * math.cos(a)) * width), int((cy + 0.06 * j / 7 * math.sin(a)) * height))
            for j in range(8)]


def bail(message):
    sys.stderr.write(message + "\n")
    sys.exit(2)
