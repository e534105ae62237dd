"""Unit tests of the kernel-test harness's own oracles (no VM): waits that time out fail and say
what they waited for; the black-frame and console-restored checks reject wrong frames.

  python3 -m unittest discover -s scripts/vm -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmharness  # noqa: E402
from vmharness import Image, VMError, black_frame_problem, console_restored_problem, rss_growth_without_warmup  # noqa: E402

W, H = 64, 48


def frame(rgb=(0, 0, 0), w=W, h=H) -> Image:
    return Image(w, h, bytes(rgb) * (w * h))


def paint(img: Image, x0: int, y0: int, x1: int, y1: int, rgb) -> Image:
    d = bytearray(img.data)
    for y in range(y0, y1):
        for x in range(x0, x1):
            o = (y * img.width + x) * 3
            d[o:o + 3] = bytes(rgb)
    return Image(img.width, img.height, bytes(d))


def console_text() -> Image:
    """A stand-in for tty1 with the banner: grey text rows on black (well over MIN_CONSOLE_TEXT lit pixels)."""
    img = frame()
    for row in range(3):
        img = paint(img, 0, row * 16 + 2, W, row * 16 + 12, (170, 170, 170))
    return img


class FakeSession(vmharness.Session):
    """A Session whose screendumps come from a list (the last one repeats), or one list per head
    (a dict); no QEMU."""

    def __init__(self, frames):
        self.frames = {h: list(f) for h, f in frames.items()} if isinstance(frames, dict) else {None: list(frames)}
        self.shots = 0
        self.last_shot = ""

    def screendump(self, label: str = "", head=None) -> Image:
        self.shots += 1
        self.last_shot = f"shot{self.shots:02d}-{label}{'' if head is None else f'-h{head}'}.ppm"
        frames = self.frames[head]
        return frames.pop(0) if len(frames) > 1 else frames[0]


class WaitsFailOnTimeout(unittest.TestCase):
    def test_wait_screen_returns_the_frame_that_matches(self):
        red = frame((255, 0, 0))
        s = FakeSession([frame(), frame(), red])
        self.assertIs(s.wait_screen(lambda i: i.pixel(0, 0) == (255, 0, 0), 5, "x", what="red"), red)

    def test_wait_screen_timeout_raises_naming_what_was_awaited(self):
        s = FakeSession([frame()])
        with self.assertRaises(VMError) as e:
            s.wait_screen(lambda i: i.pixel(0, 0) == (255, 0, 0), 0.5, "fill", what="the whole screen red")
        self.assertIn("the whole screen red", str(e.exception))
        self.assertIn("not seen within 0.5s", str(e.exception))
        self.assertIn("-fill.ppm", str(e.exception))

    def test_settled_returns_once_two_frames_agree_and_differ_from_the_old_one(self):
        old = frame()
        new = frame((0, 0, 255))
        s = FakeSession([old, new, new])
        self.assertEqual(s.settled("n", "a new frame", differs_from=old).pixel(0, 0), (0, 0, 255))

    def test_settled_timeout_raises_when_the_frame_never_changes(self):
        old = frame()
        s = FakeSession([old])
        with self.assertRaises(VMError) as e:
            s.settled("tap", "a new frame after the tap", differs_from=old, timeout=0.5)
        self.assertIn("a new frame after the tap", str(e.exception))
        self.assertIn(f"{0} pixels differ from the frame before", str(e.exception))

    def test_settled_timeout_raises_when_the_screen_keeps_changing(self):
        s = FakeSession([frame((i, 0, 0)) for i in range(40)])
        with self.assertRaises(VMError) as e:
            s.settled("busy", "a steady frame", timeout=0.5)
        self.assertIn("no settled frame within 0.5s", str(e.exception))


class Heads(unittest.TestCase):
    def test_one_head_keeps_the_display_as_named(self):
        self.assertEqual(vmharness.display_device("VGA"), "VGA")
        self.assertEqual(vmharness.display_device("virtio-gpu-pci,max_outputs=2"), "virtio-gpu-pci,max_outputs=2")
        self.assertEqual(vmharness.heads_kernel_args(1), "")

    def test_two_heads_name_the_device_and_force_the_second_on(self):
        self.assertEqual(vmharness.display_device("virtio-gpu-pci", 2), "virtio-gpu-pci,max_outputs=2,id=video0,edid=off")
        self.assertEqual(vmharness.heads_kernel_args(2), "video=Virtual-2:1280x800e")
        self.assertEqual(vmharness.heads_kernel_args(3), "video=Virtual-2:1280x800e video=Virtual-3:1280x800e")

    def test_two_heads_on_bochs_are_refused(self):
        with self.assertRaises(VMError):
            vmharness.display_device("VGA", 2)

    def test_waits_take_the_named_heads_screendumps(self):
        red, blue = frame((255, 0, 0)), frame((0, 0, 255))
        s = FakeSession({0: [red], 1: [frame(), blue]})
        self.assertIs(s.wait_screen(lambda i: i.pixel(0, 0) == (0, 0, 255), 5, "x", what="blue", head=1), blue)
        self.assertIn("-h1", s.last_shot)
        with self.assertRaises(VMError) as e:
            s.wait_screen(lambda i: i.pixel(0, 0) == (0, 0, 255), 0.3, "x", what="blue on head 0", head=0)
        self.assertIn("blue on head 0", str(e.exception))

    def test_screendump_of_a_head_the_scenario_does_not_have_fails(self):
        sc = vmharness.Scenario("x", "smoke.sh", lambda s: None, display="virtio-gpu-pci")
        s = vmharness.Session.__new__(vmharness.Session)
        s.sc, s.shots, s.rundir = sc, 0, "/nonexistent"
        with self.assertRaises(VMError) as e:
            s.screendump("x", head=1)
        self.assertIn("1 head(s)", str(e.exception))


class Clock(unittest.TestCase):
    def test_the_scaled_colour_and_the_second_it_shows(self):
        t = 1773495369.4  # 2026-03-14 13:36:09 UTC
        self.assertEqual(vmharness.clock_rgb(t), (138, 153, 38))
        img = frame(vmharness.clock_rgb(t + 1))
        self.assertEqual(vmharness.clock_second(img, t, t + 0.5), 1)
        self.assertIsNone(vmharness.clock_second(img, t + 3, t + 3.5))


class BlackFrame(unittest.TestCase):
    def test_all_black_passes(self):
        self.assertIsNone(black_frame_problem(frame()))

    def test_one_lit_pixel_fails_and_says_where(self):
        img = paint(frame(), 40, 30, 41, 31, (255, 255, 255))
        p = black_frame_problem(img)
        self.assertIsNotNone(p)
        self.assertIn(f"1 of {W * H} pixels are not black", p)
        self.assertIn("(40, 30, 41, 31)", p)

    def test_a_dark_grey_frame_fails(self):
        self.assertIn(f"{W * H} of {W * H}", black_frame_problem(frame((1, 1, 1))))


class QemuPlaceholder(unittest.TestCase):
    """virtio-gpu blanked: QEMU's "Display output is not active." line is the only thing allowed."""
    GREY = vmharness.QEMU_PLACEHOLDER_GREY

    def test_the_placeholder_line_passes_only_when_allowed(self):
        img = paint(frame(w=1280, h=800), 520, 386, 749, 399, self.GREY)   # where QEMU 7.2 draws it
        self.assertIsNone(black_frame_problem(img, qemu_placeholder=True))
        self.assertIn("pixels are not black", black_frame_problem(img))

    def test_another_colour_fails(self):
        img = paint(frame(w=1280, h=800), 520, 386, 749, 399, (255, 255, 255))
        self.assertIn("not QEMU's placeholder grey", black_frame_problem(img, qemu_placeholder=True))

    def test_a_bigger_grey_area_fails(self):
        img = paint(frame(w=1280, h=800), 520, 386, 749, 420, self.GREY)
        self.assertIsNotNone(black_frame_problem(img, qemu_placeholder=True))

    def test_grey_off_centre_fails(self):
        img = paint(frame(w=1280, h=800), 0, 0, 200, 16, self.GREY)
        self.assertIsNotNone(black_frame_problem(img, qemu_placeholder=True))


class ConsoleRestored(unittest.TestCase):
    def test_the_same_console_passes(self):
        c = console_text()
        self.assertIsNone(console_restored_problem(c, Image(c.width, c.height, c.data)))

    def test_a_black_screen_fails(self):
        self.assertEqual(console_restored_problem(console_text(), frame()), "the restored screen is black")

    def test_the_cursor_cell_is_tolerated(self):
        c = console_text()
        self.assertIsNone(console_restored_problem(c, paint(c, 16, 32, 24, 48, (170, 170, 170))))

    def test_more_than_one_cell_fails(self):
        c = console_text()
        p = console_restored_problem(c, paint(c, 16, 32, 25, 48, (170, 170, 170)))
        self.assertIsNotNone(p)
        self.assertIn("within (16, 32, 25, 48)", p)

    def test_the_display_clients_frame_left_on_screen_fails(self):
        p = console_restored_problem(console_text(), frame((255, 0, 0)))
        self.assertIn(f"{W * H} pixels differ", p)

    def test_a_console_without_text_cannot_be_compared(self):
        self.assertIn("no text to compare with", console_restored_problem(frame(), console_text()))

    def test_another_size_fails(self):
        self.assertIn("restored screen is 32x48", console_restored_problem(console_text(), frame(w=32)))


class Images(unittest.TestCase):
    def test_diff_bbox_and_lit(self):
        a = frame()
        b = paint(paint(a, 3, 4, 5, 6, (9, 9, 9)), 10, 1, 11, 2, (9, 9, 9))
        self.assertEqual(b.diff_bbox(a), (3, 1, 11, 6))
        self.assertIsNone(a.diff_bbox(frame()))
        self.assertEqual(b.lit(), 5)
        self.assertEqual(b.differs(a), 5)


class Scenarios(unittest.TestCase):
    def test_every_scenario_names_existing_guest_files(self):
        scenarios = vmharness.load_scenarios()
        self.assertGreaterEqual(len(scenarios), 20)
        for sc in scenarios.values():
            for f in (sc.guest, sc.prelude):
                self.assertTrue(os.path.isfile(os.path.join(vmharness.GUEST_DIR, f)), f"{sc.name}: {f}")



class EnduranceRSSTests(unittest.TestCase):
    """The endurance scenario's leak oracle: warm-up steps pass, a steady climb fails."""

    def test_one_late_warmup_step_is_not_a_leak(self):
        ci = [46108] * 6 + [48392] * 4  # measured: one 2.3 MB step at cycle 7, then flat
        self.assertEqual(rss_growth_without_warmup(46108, ci, 2), 0)
        two = [46108, 50416] + [50416] * 4 + [52000] * 4  # two steps, then flat
        self.assertEqual(rss_growth_without_warmup(46108, two, 2), 0)

    def test_a_steady_climb_is_a_leak(self):
        leak = [46108 + 200 * (i + 1) for i in range(10)]  # 200 kB a cycle
        self.assertEqual(rss_growth_without_warmup(46108, leak, 2), 1600)
        falling = [46108, 45000, 46000, 46108]  # falls, then rises back: 1000 + 108 kB of rises
        self.assertEqual(rss_growth_without_warmup(46108, falling, 2), 0)


class PowerCutOracle(unittest.TestCase):
    """The power-cut scenario's check after a cut under a concurrent burst (two counters, each
    with its clients' acknowledged values in the order they were written)."""

    @staticmethod
    def acks(home, away):
        return {"HOME": list(home), "AWAY": list(away)}

    def check(self, before, acks, after, clients=None):
        return vmharness.power_cut_problems(2, before, acks, after, clients or {"HOME": 4, "AWAY": 4})

    def test_every_ack_present_and_a_few_unanswered_applied_pass(self):
        # Answers arrive out of order across clients; 2 HOME requests applied but unanswered.
        a = self.acks([11, 13, 12, 14], [6, 5])
        self.assertEqual(self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 16, "AWAY": 6}), [])
        self.assertEqual(self.check({"HOME": 10, "AWAY": 4}, self.acks([], []), {"HOME": 10, "AWAY": 8}), [])

    def test_a_lost_acknowledged_increment_fails(self):
        a = self.acks([11, 12, 13, 14], [5])
        p = self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 13, "AWAY": 5})
        self.assertEqual(len(p), 1, p)
        self.assertIn("HOME is 13 after the cut; 14 was acknowledged", p[0])

    def test_more_applied_than_acknowledged_plus_in_flight_fails(self):
        a = self.acks([11, 12], [5])
        p = self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 12, "AWAY": 10})
        self.assertEqual(len(p), 1, p)
        self.assertIn("applied twice: 1", p[0])
        # One client on AWAY: one more than acknowledged is all that may be there.
        p = self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 12, "AWAY": 7}, {"HOME": 1, "AWAY": 1})
        self.assertEqual(len(p), 1, p)

    def test_a_value_acknowledged_twice_fails(self):
        a = self.acks([11, 12, 12], [])
        p = self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 13, "AWAY": 4})
        self.assertEqual(len(p), 1, p)
        self.assertIn("values acknowledged twice: [12]", p[0])

    def test_an_acknowledged_value_not_above_the_start_fails(self):
        a = self.acks([10, 11], [])
        p = self.check({"HOME": 10, "AWAY": 4}, a, {"HOME": 11, "AWAY": 4})
        self.assertTrue(any("not above the start value 10" in x for x in p), p)


if __name__ == "__main__":
    unittest.main()
