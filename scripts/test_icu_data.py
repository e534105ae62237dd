"""Checks of scripts/icu-data.py on the toolchain's own ICU data: the cut package reads back as
an ICU common data package with the items kioskd reaches (time zones, root and English, the core
property files) and without the others (German, converters, dictionaries), a tenth or less of
the size; and the archive it makes (its one output line) holds an object that defines icudtNN_dat
with that data. (How a link takes it, or nothing of it: scripts/test_size_map.py.)

    python3 -m unittest discover -s scripts -p 'test_icu_data.py'
"""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("icu_data", os.path.join(HERE, "icu-data.py"))
icu_data = importlib.util.module_from_spec(spec)
spec.loader.exec_module(icu_data)


class IcuDataTests(unittest.TestCase):
    def test_keep_rules(self):
        for name in ["zoneinfo64.res", "metaZones.res", "root.res", "en.res", "en_GB.res", "pool.res",
                     "supplementalData.res", "zone/en.res", "zone/root.res", "coll/ucadata.icu", "unames.icu",
                     "brkitr/word.brk", "nfkc.nrm"]:
            self.assertTrue(icu_data.keep(name), name)
        for name in ["de.res", "zh_Hant_TW.res", "zone/fr.res", "coll/zh.res", "ibm-1047_P100-1995.cnv",
                     "brkitr/cjdict.dict", "translit/root.res", "rbnf/en.res"]:
            self.assertFalse(icu_data.keep(name), name)

    def test_write_reads_back(self):
        header = bytes([32, 0, 0xDA, 0x27]) + bytes(28)
        items = [("icudt76l/b.res", b"\x01\x02\x03"), ("icudt76l/a.res", b"x" * 40)]
        blob = icu_data.write_common_data(header, items)
        _, back = icu_data.read_common_data(blob)
        # Sorted by name, and each item's bytes (padded to 16) where the table of contents says.
        self.assertEqual([n for n, _ in back], ["icudt76l/a.res", "icudt76l/b.res"])
        self.assertEqual(back[0][1][:40], b"x" * 40)
        self.assertEqual(back[1][1][:3], b"\x01\x02\x03")

    @unittest.skipUnless(shutil.which("swift") and shutil.which("clang"), "needs the Swift toolchain")
    def test_the_toolchains_data(self):
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run(["python3", os.path.join(HERE, "icu-data.py"), "--out", out],
                               check=True, capture_output=True, text=True)
            lines = r.stdout.splitlines()
            self.assertEqual(len(lines), 1, r.stdout)
            archive = lines[0]
            self.assertRegex(os.path.basename(archive), r"^libkioskd_icudt\d+\.a$")
            self.assertEqual(os.path.dirname(archive), os.path.abspath(out))
            symbol = os.path.basename(archive)[len("libkioskd_"):-len(".a")] + "_dat"
            dat = os.path.join(out, symbol.removesuffix("_dat") + "_kioskd.dat")
            with open(dat, "rb") as f:
                _, items = icu_data.read_common_data(f.read())
            names = {n.split("/", 1)[1] for n, _ in items}
            for needed in ["zoneinfo64.res", "metaZones.res", "timezoneTypes.res", "root.res", "en.res",
                           "zone/en.res", "supplementalData.res"]:
                self.assertIn(needed, names)
            for dropped in ["de.res", "zone/de.res", "brkitr/cjdict.dict", "translit/root.res"]:
                self.assertNotIn(dropped, names)
            with open(os.path.join(out, "items.txt")) as f:
                rows = [line.split() for line in f]
            full = sum(int(size) for _, size, _ in rows)
            self.assertLess(os.path.getsize(dat), full / 5)
            # The archive's one member defines icudtNN_dat, the data's size, in a symbol index.
            self.assertEqual(subprocess.run(["ar", "t", archive], check=True, capture_output=True, text=True).stdout.split(),
                             [symbol.removesuffix("_dat") + "_kioskd.o"])
            symbols = subprocess.run(["nm", "-S", archive], check=True, capture_output=True, text=True).stdout
            line = next(l for l in symbols.splitlines() if l.endswith(" " + symbol))
            self.assertEqual(int(line.split()[1], 16), os.path.getsize(dat))
            self.assertIn(symbol, subprocess.run(["nm", "-s", archive], check=True, capture_output=True, text=True).stdout.split("\n\n")[0])


if __name__ == "__main__":
    unittest.main()
