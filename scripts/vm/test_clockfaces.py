"""Unit tests of clockfaces.py (no VM): python3 -m unittest discover -s scripts/vm -p 'test_*.py'."""

import unittest

from clockfaces import Shown, change_lags_ns, face_error_ns, face_upper_ns, parse_shown, truth_ns

S = 1_000_000_000
MS = 1_000_000


class ClockFacesTests(unittest.TestCase):
    def test_faces(self):
        self.assertEqual(face_upper_ns("0:57"), 57 * S)
        self.assertEqual(face_upper_ns("1:00"), 60 * S)
        self.assertEqual(face_upper_ns("12.3"), 12 * S + 300 * MS)
        self.assertEqual(face_upper_ns("0.0"), 0)
        self.assertEqual(face_upper_ns("3"), 3 * S)
        with self.assertRaises(ValueError):
            face_upper_ns("12:3")

    def test_parse(self):
        lines = parse_shown("100 0:57 true 2,200 0:56 false,junk")
        self.assertEqual(lines, [Shown(100, "0:57", True, "2"), Shown(200, "0:56", False, None)])

    def test_error(self):
        # 12.3 is shown while 12.2 s < left ≤ 12.3 s.
        self.assertEqual(face_error_ns("12.3", 12 * S + 250 * MS), 0)
        self.assertEqual(face_error_ns("12.3", 12 * S + 300 * MS), 0)
        self.assertEqual(face_error_ns("12.3", 12 * S + 310 * MS), -10 * MS)  # early: shows less than left
        self.assertEqual(face_error_ns("12.3", 12 * S + 190 * MS), 10 * MS + 1)  # late
        self.assertEqual(face_error_ns("0.0", 0), 0)

    def test_lags(self):
        since, left = 10 * S, 60_000
        self.assertEqual(truth_ns(since, left, since + 3 * S), 57 * S)
        lines = [Shown(since + 2 * S + 500 * MS, "0:58", True, None), Shown(since + 3 * S + 4 * MS, "0:57", True, None),
                 Shown(since + 3 * S + 500 * MS, "0:57", True, None), Shown(since + 3 * S + 999 * MS, "0:56", True, None)]
        self.assertEqual([lag for _, lag in change_lags_ns(lines, since, left)], [4 * MS, -1 * MS])


if __name__ == "__main__":
    unittest.main()
