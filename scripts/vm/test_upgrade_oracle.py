"""Unit tests of the upgrade scenario's screen oracle (scripts/vm/scenarios_upgrade.py, no VM):
the score in the museum theme passes; the text console, a pairing code over the score and the
theme's background alone do not.

  python3 -m unittest discover -s scripts/vm -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vmharness  # noqa: E402
from test_vmharness import frame, paint  # noqa: E402

# Through the harness's loader, as vmtest.py imports it: a second import would register the
# scenario twice.
vmharness.load_scenarios()
_upgrade = sys.modules["kiosk_vm_scenarios_upgrade"]
MUSEUM, PRIMARY, TEXT, score_problem = _upgrade.MUSEUM, _upgrade.PRIMARY, _upgrade.TEXT, _upgrade.score_problem

W, H = 160, 100


def score() -> "frame":
    """Four digit windows in the primary colour on the museum background, light digits in them."""
    img = frame(MUSEUM, W, H)
    for i in range(4):
        x0 = 6 + i * 38
        img = paint(img, x0, 30, x0 + 32, 85, PRIMARY)
        img = paint(img, x0 + 10, 40, x0 + 22, 75, MUSEUM)
    return img


class ScoreOracle(unittest.TestCase):
    def test_the_score_passes(self):
        self.assertIsNone(score_problem(score()))

    def test_the_text_console_fails_on_its_corner(self):
        p = score_problem(frame((0, 0, 0), W, H))
        self.assertIsNotNone(p)
        self.assertIn("not the museum background", p)

    def test_the_background_alone_fails_on_the_windows(self):
        p = score_problem(frame(MUSEUM, W, H))
        self.assertIsNotNone(p)
        self.assertIn("digit windows", p)

    def test_a_pairing_code_over_the_score_fails(self):
        img = paint(score(), 50, 10, 110, 95, MUSEUM)
        for k in range(0, 50, 6):  # the QR code's dark modules
            img = paint(img, 55 + k, 15, 58 + k, 90, TEXT)
        p = score_problem(img)
        self.assertIsNotNone(p)
        self.assertIn("over the score", p)


if __name__ == "__main__":
    unittest.main()
