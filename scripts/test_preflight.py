"""Checks of scripts/preflight.sh: on a PATH with most tools taken away, a fake dpkg-query and apt
lists of its own, what is missing must be named, with the package that provides it, all in one
run, and a step switched off by its skip variable must not be checked.

    python3 -m unittest discover -s scripts -p 'test_preflight.py'
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PREFLIGHT = os.path.join(HERE, "preflight.sh")
TEST_SH = os.path.join(HERE, "test.sh")

# What preflight.sh itself runs; everything else is absent from the stripped PATH.
BASICS = ["bash", "env", "dirname", "basename", "date", "sed", "tr", "grep", "cut", "sort", "xargs",
          "awk", "id", "mktemp", "rm", "ls", "timeout", "df", "head", "tail", "cat", "sleep", "wc"]

FAKE_DPKG_QUERY = """#!/bin/sh
# dpkg-query -W -f=FORMAT PKG...: every package installed except those in $FAKE_ABSENT.
shift 2
for p in "$@"; do
    case " $FAKE_ABSENT " in *" $p "*) echo "dpkg-query: no packages found matching $p" >&2 ;;
    *) echo "$p installed" ;; esac
done
"""


class Preflight(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kioskd-preflight-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.bin = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin)
        for name in BASICS:
            path = shutil.which(name)
            self.assertIsNotNone(path, f"{name} is needed to run preflight.sh in this test")
            os.symlink(path, os.path.join(self.bin, name))
        self.stub("dpkg-query", FAKE_DPKG_QUERY)
        self.apt = os.path.join(self.tmp, "apt")
        os.makedirs(self.apt)
        self.write_list("apt-always.txt", "# always needed\npkg-present\nkioskd-test-absent-a\n")
        self.write_list("apt-arm.txt", "# an aarch64 list\n# needed unless: KIOSK_ARM64=0\nkioskd-test-absent-arm\n")
        self.write_list("apt-armvm.txt", "# needed unless: KIOSK_ARM64=0 KIOSK_ARM64_VM=0\nkioskd-test-absent-armvm\n")

    def stub(self, name, text):
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)

    def write_list(self, name, text):
        with open(os.path.join(self.apt, name), "w") as f:
            f.write(text)

    def run_preflight(self, **env):
        e = {"PATH": self.bin, "HOME": self.tmp, "LANG": "C.UTF-8",
             "KIOSK_SWIFT_DIR": os.path.join(self.tmp, "no-swift"),
             "KIOSK_PREFLIGHT_APT_DIR": self.apt,
             "KIOSK_CI_CACHE": os.path.join(self.tmp, "cache"),
             "FAKE_ABSENT": "kioskd-test-absent-a kioskd-test-absent-arm kioskd-test-absent-armvm"}
        e.update(env)
        p = subprocess.run(["bash", PREFLIGHT], env=e, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def missing_lines(self, err):
        return [line[4:] for line in err.splitlines() if line.startswith("  - ")]

    def assertNamed(self, err, what, provider):
        lines = [m for m in self.missing_lines(err) if m.startswith(what + " — ")]
        self.assertTrue(lines, f"{what!r} is not named as missing in:\n{err}")
        self.assertIn(provider, lines[0], f"{what!r} is named without {provider!r}: {lines[0]}")

    def assertNotNamed(self, err, what):
        self.assertFalse([m for m in self.missing_lines(err) if m.startswith(what + " — ")],
                         f"{what!r} is named as missing, but its step is skipped:\n{err}")

    def test_everything_missing_is_named_at_once_with_its_package(self):
        rc, out, err = self.run_preflight()
        self.assertEqual(rc, 1, f"stdout:\n{out}\nstderr:\n{err}")
        self.assertNamed(err, "apt package kioskd-test-absent-a (scripts/apt-always.txt)", "not installed")
        self.assertNamed(err, "apt package kioskd-test-absent-arm (scripts/apt-arm.txt)", "not installed")
        self.assertNotNamed(err, "apt package pkg-present (scripts/apt-always.txt)")
        self.assertNamed(err, "command shellcheck", "apt package shellcheck")
        self.assertNamed(err, "command lintian", "apt package lintian")
        self.assertNamed(err, "command python3", "apt package python3")
        self.assertNamed(err, "command arch-test", "apt package arch-test")
        self.assertNamed(err, "command qemu-system-x86_64", "apt package qemu-system-x86")
        self.assertNamed(err, "command qemu-system-aarch64", "apt package qemu-system-arm")
        self.assertNamed(err, "command qemu-aarch64-static", "apt package qemu-user-static")
        self.assertNamed(err, "swift (a Swift 6 toolchain)", "swift.org")
        # The count in the heading is the number of items listed, and one install line names them.
        count = int(re.search(r"preflight: (\d+) missing", err).group(1))
        self.assertEqual(count, len(self.missing_lines(err)))
        install = [line for line in err.splitlines() if line.startswith("preflight: apt-get install")]
        self.assertEqual(len(install), 1, err)
        for pkg in ("kioskd-test-absent-a", "arch-test", "shellcheck", "qemu-system-x86", "qemu-user-static"):
            self.assertIn(f" {pkg} ", install[0] + " ")

    def test_skipped_steps_are_not_checked(self):
        rc, _, err = self.run_preflight(KIOSK_ARM64="0", KIOSK_VM_TESTS="0", KIOSK_BROWSER_TESTS="0",
                                        KIOSK_HA_TESTS="0", KIOSK_FUZZ="0", KIOSK_BENCH="0")
        self.assertEqual(rc, 1, err)
        for what in ("apt package kioskd-test-absent-arm (scripts/apt-arm.txt)", "command arch-test",
                     "command qemu-aarch64-static", "command qemu-system-aarch64", "command qemu-system-x86_64",
                     "command mmdebstrap", "command rsync", "command evemu-play"):
            self.assertNotNamed(err, what)
        # What every run needs is still checked.
        self.assertNamed(err, "apt package kioskd-test-absent-a (scripts/apt-always.txt)", "not installed")
        self.assertNamed(err, "command shellcheck", "apt package shellcheck")

    def test_arm64_vm_off_keeps_the_rest_of_the_arm64_job(self):
        _, _, err = self.run_preflight()
        self.assertNamed(err, "apt package kioskd-test-absent-armvm (scripts/apt-armvm.txt)", "not installed")
        _, _, err = self.run_preflight(KIOSK_ARM64_VM="0")
        self.assertNotNamed(err, "apt package kioskd-test-absent-armvm (scripts/apt-armvm.txt)")
        self.assertNotNamed(err, "command qemu-system-aarch64")
        self.assertNotNamed(err, "command arch-test")
        self.assertNamed(err, "command qemu-aarch64-static", "apt package qemu-user-static")
        self.assertNamed(err, "apt package kioskd-test-absent-arm (scripts/apt-arm.txt)", "not installed")

    def test_a_qemu_that_cannot_start_and_an_old_swift_are_named(self):
        self.stub("qemu-system-x86_64", "#!/bin/sh\necho \"qemu: could not load PC BIOS 'bios-256k.bin'\" >&2\nexit 1\n")
        os.makedirs(os.path.join(self.tmp, "swift", "usr", "bin"))
        with open(os.path.join(self.tmp, "swift", "usr", "bin", "swift"), "w") as f:
            f.write("#!/bin/sh\necho 'Swift version 5.10 (swift-5.10-RELEASE)'\n")
        os.chmod(os.path.join(self.tmp, "swift", "usr", "bin", "swift"), 0o755)
        _, _, err = self.run_preflight(KIOSK_SWIFT_DIR=os.path.join(self.tmp, "swift"))
        self.assertNamed(err, "qemu-system-x86_64 with the tests' devices (exit 1: qemu: could not load PC BIOS "
                         "'bios-256k.bin' )", "apt package qemu-system-x86")
        self.assertNamed(err, "Swift 6 (swift --version says: Swift version 5.10 (swift-5.10-RELEASE))", "Swift 6")
        self.assertNotNamed(err, "command qemu-system-x86_64")

    def test_a_swift_that_cannot_run_is_named_with_the_toolchains_packages(self):
        os.makedirs(os.path.join(self.tmp, "swift", "usr", "bin"))
        with open(os.path.join(self.tmp, "swift", "usr", "bin", "swift"), "w") as f:
            f.write("#!/bin/sh\necho 'swift: error while loading shared libraries: libncurses.so.6' >&2\nexit 127\n")
        os.chmod(os.path.join(self.tmp, "swift", "usr", "bin", "swift"), 0o755)
        _, _, err = self.run_preflight(KIOSK_SWIFT_DIR=os.path.join(self.tmp, "swift"))
        self.assertNamed(err, "a Swift toolchain that runs (swift --version: swift: error while loading shared "
                         "libraries: libncurses.so.6)", "scripts/apt-swift.txt")

    def test_skip_variables_of_the_lists_are_those_test_sh_honours(self):
        with open(TEST_SH) as f:
            test_sh = f.read()
        seen = 0
        for name in sorted(os.listdir(HERE)):
            if not re.fullmatch(r"apt-.*\.txt", name):
                continue
            with open(os.path.join(HERE, name)) as f:
                lines = f.read().splitlines()
            for line in lines:
                m = re.match(r"#\s*needed unless:\s*(.*)", line)
                if not m:
                    continue
                for assignment in m.group(1).split():
                    self.assertRegex(assignment, r"^KIOSK_[A-Z0-9_]+=0$", f"{name}: {line.strip()}")
                    var = assignment[:-2]
                    self.assertIn(f"${{{var}:-1}}", test_sh, f"{name} names {var}, which scripts/test.sh does not honour")
                    seen += 1
        self.assertGreater(seen, 0, "no scripts/apt-*.txt has a `# needed unless:` line")


if __name__ == "__main__":
    unittest.main()
