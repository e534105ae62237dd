"""Checks of scripts/size-map.py --essentials-only and of how kioskd's cut-down ICU data is linked,
on two small static programs linked as kioskd's release link is (the toolchain's static runtime,
lld, --gc-sections, the archive scripts/icu-data.py makes named before the autolinked
libraries, the map options of --link-options):

- one that imports FoundationEssentials only: the check passes, and nothing is taken from the
  ICU data archive (a link without ICU pays nothing for that step);
- one that imports Foundation and formats a Europe/Berlin time: the check fails, naming
  Foundation's archive members and the symbol our object pulled them in for; ICU reads the cut
  data (5 MB, not the toolchain's 34 MB) and the time is right.

    python3 -m unittest discover -s scripts -p 'test_size_map.py'
"""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("size_map", os.path.join(HERE, "size-map.py"))
size_map = importlib.util.module_from_spec(spec)
spec.loader.exec_module(size_map)

ESSENTIALS = """import FoundationEssentials
let data = Data("kioskd".utf8)
print(data.count, Date(timeIntervalSince1970: 86_400).timeIntervalSince1970)
"""
FOUNDATION = """import Foundation
let zone = TimeZone(identifier: "Europe/Berlin")!
let f = DateFormatter()
f.locale = Locale(identifier: "en_US_POSIX")
f.timeZone = zone
f.dateFormat = "yyyy-MM-dd HH:mm"
print(f.string(from: Date(timeIntervalSince1970: 1_790_000_000)))
"""


@unittest.skipUnless(shutil.which("swiftc") and shutil.which("clang"), "needs the Swift toolchain")
class EssentialsOnlyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.icu_archive = subprocess.run(["python3", os.path.join(HERE, "icu-data.py"), "--out", os.path.join(d, "icu")],
                                         check=True, capture_output=True, text=True).stdout.strip()
        links = {}
        for name, source in [("essentials", ESSENTIALS), ("foundation", FOUNDATION)]:
            out = os.path.join(d, name)
            os.makedirs(out)
            with open(os.path.join(out, "main.swift"), "w") as f:
                f.write(source)
            opts = subprocess.run(["python3", os.path.join(HERE, "size-map.py"), "--link-options", out],
                                  check=True, capture_output=True, text=True).stdout.split()
            # Both at once: the links are most of this test's time.
            links[name] = subprocess.Popen(
                ["swiftc", "-static-stdlib", "-use-ld=lld", os.path.join(out, "main.swift"), cls.icu_archive,
                 "-o", os.path.join(out, "prog"), "-Xlinker", "--gc-sections"] + opts,
                cwd=out, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for name, p in links.items():
            log = p.communicate()[0]
            if p.returncode != 0:
                raise RuntimeError(f"linking the {name} program failed:\n{log}")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, name, *extra):
        out = os.path.join(self.tmp.name, name)
        return subprocess.run(["python3", os.path.join(HERE, "size-map.py"), os.path.join(out, "kioskd.map"),
                               "--essentials-only=fail", *extra], capture_output=True, text=True)

    def loaded(self, name):
        return size_map.read_map(os.path.join(self.tmp.name, name, "kioskd.map"), size_map.group_of)[0]

    def test_essentials_alone_passes_and_takes_no_icu_data(self):
        r = self.check("essentials")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("FoundationEssentials alone", r.stdout)
        self.assertIn("FoundationEssentials", r.stdout)  # the table of loaded bytes per library
        groups = self.loaded("essentials")
        self.assertGreater(groups["FoundationEssentials"], 0)
        for g in size_map.NOT_ESSENTIALS:
            self.assertEqual(groups[g], 0, g)
        with open(os.path.join(self.tmp.name, "essentials", "kioskd.why")) as f:
            self.assertNotIn("libkioskd_icudt", f.read())
        run = subprocess.run([os.path.join(self.tmp.name, "essentials", "prog")], capture_output=True, text=True, check=True)
        self.assertEqual(run.stdout, "6 86400.0\n")

    def test_foundation_fails_naming_member_and_symbol(self):
        r = self.check("foundation")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("not FoundationEssentials alone", r.stdout)
        self.assertRegex(r.stdout, r"Foundation \(swift-corelibs-foundation\): [\d,]+ bytes loaded")
        self.assertRegex(r.stdout, r"libFoundation\.a\(\w+\.swift\.o\)")
        # What pulled it in: our program's object, the member, the symbol (mangled and plain).
        self.assertRegex(r.stdout, r"main[-\w]*\.o\n +-> \S+lib(Foundation|FoundationInternationalization)\.a\(\S+\)\n +for \$s\S+")
        warn = self.check("foundation", "--essentials-only=warn")
        self.assertEqual(warn.returncode, 0)
        self.assertIn("WARNING only", warn.stdout)

    def test_foundation_reads_the_cut_icu_data(self):
        groups = self.loaded("foundation")
        dat = [f for f in os.listdir(os.path.dirname(self.icu_archive)) if f.endswith("_kioskd.dat")]
        self.assertEqual(groups["ICU data"], os.path.getsize(os.path.join(os.path.dirname(self.icu_archive), dat[0])))
        self.assertLess(groups["ICU data"], 8_000_000)  # the toolchain's own is 34 MB
        self.assertGreater(groups["ICU code (swift-foundation-icu)"], 0)
        with open(os.path.join(self.tmp.name, "foundation", "kioskd.why")) as f:
            why = f.read()
        self.assertIn("libkioskd_icudt", why)
        self.assertNotIn("icu_packaged_data", why)
        run = subprocess.run([os.path.join(self.tmp.name, "foundation", "prog")], capture_output=True, text=True, check=True)
        self.assertEqual(run.stdout, "2026-09-21 16:13\n")


if __name__ == "__main__":
    unittest.main()
