#!/usr/bin/env bash
# Builds (once) the Debian 13 arm64 root that the aarch64 kernel tests export to the VM over 9p
# (scripts/vm/vmharness.py, arch aarch64) and prints its path.
#
#   scripts/vm/arm64-root.sh            # the cached root's path; built first when missing
#   scripts/vm/arm64-root.sh --key      # only the cache key
#
# The root: mmdebstrap trixie arm64 (maintainer scripts run under qemu-user through binfmt_misc)
# with systemd, udev, apt and kioskd's runtime libraries (not kioskd), plus the arm64 kernel
# package for the VM in /kernel/ (downloaded, not installed; the file `package` names it).
# Cached in $KIOSK_CI_CACHE/arm64-root-KEY (default /var/cache/kioskd-ci), KEY = a hash of FORMAT,
# the suite and the package list below: built in a temporary directory next to it and renamed
# into place, so it appears complete or not at all.
# Needs root, mmdebstrap, qemu-user-static, binfmt-support (scripts/apt-vm-arm64.txt).
set -euo pipefail

SUITE=trixie
MIRROR=${KIOSK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${KIOSK_CI_CACHE:-/var/cache/kioskd-ci}
# What the guest scripts and kioskd need at run time (kioskd's runtime libraries, so that the
# package installs offline), busybox-static for the initramfs.
PACKAGES=(
  systemd udev dbus kmod apt adduser passwd procps util-linux e2fsprogs bash coreutils
  busybox-static evemu-tools libinput10 libinput-bin libeatmydata1 tzdata xz-utils
  libcairo2 libpango-1.0-0 libpangocairo-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core
  libdrm2 libudev1 libsystemd0 libssl3t64 libmosquitto1 libqrencode4 libstdc++6 libgcc-s1
)

# Bump FORMAT when the way the root is made changes; the suite and the package list count too.
FORMAT=1
key() { echo "$FORMAT $SUITE ${PACKAGES[*]}" | sha256sum | cut -c1-12; }

if [ "${1:-}" = --key ]; then key; exit 0; fi

dest="$CACHE/arm64-root-$(key)"
if [ -f "$dest/kernel/package" ]; then echo "$dest"; exit 0; fi

[ "$(id -u)" = 0 ] || { echo "arm64-root: building the root needs root" >&2; exit 1; }
for t in mmdebstrap qemu-aarch64-static; do
  command -v "$t" > /dev/null || { echo "arm64-root: $t missing (apt-get install \$(cat scripts/apt-vm-arm64.txt))" >&2; exit 1; }
done
# The maintainer scripts are arm64 programs: binfmt_misc must hand them to qemu-user.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  update-binfmts --enable qemu-aarch64
fi

mkdir -p "$CACHE"
exec 9> "$CACHE/.arm64-root.lock"
flock 9
if [ -f "$dest/kernel/package" ]; then echo "$dest"; exit 0; fi
tmp=$(mktemp -d "$CACHE/.arm64-root-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$SECONDS
echo "arm64-root: building $dest (mmdebstrap $SUITE arm64, emulated maintainer scripts)" >&2
# The kernel package for the VM, with arm64 package lists of its own (the host's apt is amd64).
apt_opts=(-o "Dir::Etc::SourceList=$tmp/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::Cache=$tmp/apt/cache" -o Dir::State::status=/dev/null
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64 -o Debug::NoLocking=1)
mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/kernel"
echo "deb [arch=arm64] $MIRROR $SUITE main" > "$tmp/apt/sources.list"
apt-get "${apt_opts[@]}" -qq update >&2
pkg=$(apt-cache "${apt_opts[@]}" depends linux-image-arm64 | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-arm64\)$/\1/p' | head -n 1)
[ -n "$pkg" ] || { echo "arm64-root: apt-cache depends linux-image-arm64 named no kernel package" >&2; exit 1; }
(cd "$tmp/kernel" && apt-get "${apt_opts[@]}" -qq download "$pkg") >&2
echo "$pkg" > "$tmp/kernel/package"
include=$(IFS=,; echo "${PACKAGES[*]}")
mmdebstrap --arch=arm64 --variant=minbase --include="$include" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  "$SUITE" "$tmp/root" "$MIRROR" >&2
mv "$tmp/kernel" "$tmp/root/kernel"
rm -rf "$dest"
mv "$tmp/root" "$dest"
# Roots of earlier keys are not used again.
for old in "$CACHE"/arm64-root-*; do
    [ -d "$old" ] && [ "$old" != "$dest" ] && { echo "arm64-root: removing old $old" >&2; rm -rf --one-file-system "$old"; }
done
echo "arm64-root: built in $((SECONDS - t0)) s" >&2
echo "$dest"
