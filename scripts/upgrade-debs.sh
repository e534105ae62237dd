#!/usr/bin/env bash
# Version N+1 of the arm64 package and the signed repository before and after it, for the VM's
# upgrade test (scenario kioskd-upgrade-apt, scripts/vm/scenarios_upgrade.py):
#   scripts/upgrade-debs.sh [--out DIR]          (default out/upgrade; run as root, like build-arm64.sh)
# N is the package scripts/package.sh --arch arm64 built (out/deb/READY.arm64). N+1 is the same
# source with VERSION and Sources/CKioskVersion/version.c set to VERSION+upgradetest1, cross-built
# (scripts/build-arm64.sh in a copy of the checkout: with its build cache only version.c is
# compiled again and the binaries linked, as KioskCore reads the version through
# CKioskVersionShim; the next build of N does the same back) and packaged: the same code,
# another version, which kioskd reports (kioskd --version, kioskctl status) and writes into its
# state directory.
# Writes DIR/apt-n (the repository holding N), DIR/apt-n1 (the same repository once N+1 was added,
# as a real archive moves on), DIR/version-n, DIR/version-n1 (the packages' versions).
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/upgrade
[ "${1:-}" = --out ] && out=$2
fail() { echo "upgrade-debs: $*" >&2; exit 1; }
n_deb=$(head -n 1 out/deb/READY.arm64 2>/dev/null) || true
if [ -z "$n_deb" ] || [ ! -f "$n_deb" ]; then fail "no arm64 package N: scripts/package.sh --arch arm64 first (out/deb/READY.arm64)"; fi
upstream=$(tr -d ' \n' < VERSION)
next=$upstream+upgradetest1
grep -q "return \"$upstream\";" Sources/CKioskVersion/version.c || fail "Sources/CKioskVersion/version.c does not say $upstream (VERSION)"
T0=$SECONDS

mkdir -p "$out"
out=$(cd "$out" && pwd)
src=$out/src
rsync -a --delete --exclude '/.git/' --exclude '/.build*/' --exclude '/out/' --exclude '/vm/work/' ./ "$src/"
echo "$next" > "$src/VERSION"
sed -i "s/return \"$upstream\";/return \"$next\";/" "$src/Sources/CKioskVersion/version.c"
# The arm64 library packages package.sh reads the Depends from (fetched once for N): shared, not
# downloaded again for N+1.
if [ -d out/deb/cache-arm64 ]; then
    mkdir -p "$src/out/deb"
    ln -sfn "$PWD/out/deb/cache-arm64" "$src/out/deb/cache-arm64"
fi
( cd "$src" && bash scripts/build-arm64.sh && bash scripts/package.sh --arch arm64 ) > "$out/build-n1.log" 2>&1 \
    || { tail -n 30 "$out/build-n1.log" >&2; fail "building N+1 ($next) failed; log: $out/build-n1.log"; }
n1_deb=$(head -n 1 "$src/out/deb/READY.arm64")
echo "upgrade-debs: N+1 built and packaged in $((SECONDS - T0)) s: $n1_deb"

rm -rf "$out/apt" "$out/apt.db" "$out/apt-n" "$out/apt-n1"
bash scripts/apt-repo.sh --out "$out/apt" "$n_deb" > /dev/null
cp -a "$out/apt" "$out/apt-n"
bash scripts/apt-repo.sh --out "$out/apt" "$n1_deb" > /dev/null
mv "$out/apt" "$out/apt-n1"
dpkg-deb -f "$n_deb" Version > "$out/version-n"
dpkg-deb -f "$n1_deb" Version > "$out/version-n1"
echo "upgrade-debs: $out/apt-n ($(cat "$out/version-n")), $out/apt-n1 ($(cat "$out/version-n1")) in $((SECONDS - T0)) s"
