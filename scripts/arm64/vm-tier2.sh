#!/usr/bin/env bash
# The aarch64 kernel tests: Debian 13's arm64 kernel under qemu-system-aarch64 (TCG, `virt`) with
# the cached Debian 13 arm64 root (scripts/vm/arm64-root.sh) and the cross-built aarch64 binaries
# (.build-arm64/READY, scripts/build-arm64.sh); the package scenario installs the arm64 .deb
# (out/deb/READY.arm64, scripts/package.sh); the upgrade scenario upgrades it to N+1 from the signed
# repository (out/upgrade, scripts/upgrade-debs.sh). Prints each scenario's time; exits 1 when one fails
# or something it needs is missing.
#   scripts/arm64/vm-tier2.sh [SCENARIO…]
# Environment: KIOSK_ARM64_READY (default .build-arm64/READY), KIOSK_DEB (the arm64 .deb),
# KIOSK_UPGRADE_REPOS (default out/upgrade), KIOSK_VM_CPU (default cortex-a72). Runs as root (the root build and its mount point).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
T0=$SECONDS
ready=${KIOSK_ARM64_READY:-.build-arm64/READY}
scenarios=("$@")
if [ ${#scenarios[@]} = 0 ]; then
  # The clock on bochs-drm (pixels, SIGTERM gives the console back), two uinput fingers painting,
  # a connector hotplug on virtio-gpu, two outputs on one virtio-gpu ([[output]]), the .deb under systemd.
  # kioskd-upgrade-apt (N -> N+1 from the signed repository, the refused downgrade) is named
  # explicitly once scripts/upgrade-debs.sh made its repositories.
  scenarios=(kioskd-clock-bochs input-kioskd-paint-rot90 kioskd-connector-hotplug-virtio kioskd-two-outputs kioskd-package-apt)
fi

t=$SECONDS
if ! prep=$(python3 scripts/vm/vmtest.py --arch aarch64 --prepare); then
  echo "vm-tier2: preparing the arm64 root, kernel and initramfs FAILED" >&2; exit 1
fi
echo "vm-tier2: prepared in $((SECONDS - t)) s: $prep"

[ -f "$ready" ] || { echo "vm-tier2: no $ready: build the aarch64 binaries first (scripts/build-arm64.sh)" >&2; exit 1; }
kioskd=$(sed -n 's/^kioskd=//p' "$ready")
vmtool=$(sed -n 's/^kiosk-vmtool=//p' "$ready")
for b in "$kioskd" "$vmtool"; do
  [ -x "$b" ] || { echo "vm-tier2: $b (from $ready) is not executable" >&2; exit 1; }
done
deb=${KIOSK_DEB:-}
if [ -z "$deb" ] && [ -f out/deb/READY.arm64 ]; then deb=$(head -n 1 out/deb/READY.arm64); fi

fail=0
for sc in "${scenarios[@]}"; do
  args=(--arch aarch64 --kioskd "$kioskd" --vmtool "$vmtool" --scenario "$sc")
  if [ "$sc" = kioskd-package-apt ]; then
    if [ -z "$deb" ] || [ ! -f "$deb" ]; then
      echo "vm-tier2: $sc: no arm64 .deb (KIOSK_DEB or out/deb/READY.arm64; scripts/package.sh --arch arm64)" >&2
      fail=1; continue
    fi
    args+=(--deb "$deb")
  fi
  if [ "$sc" = kioskd-upgrade-apt ]; then
    export KIOSK_UPGRADE_REPOS=${KIOSK_UPGRADE_REPOS:-$PWD/out/upgrade}
    if [ ! -d "$KIOSK_UPGRADE_REPOS/apt-n1" ]; then
      echo "vm-tier2: $sc: no repositories N and N+1 in $KIOSK_UPGRADE_REPOS (scripts/upgrade-debs.sh)" >&2
      fail=1; continue
    fi
  fi
  t=$SECONDS
  out=$(python3 scripts/vm/vmtest.py "${args[@]}")
  rc=$?
  echo "$out" | grep '^RESULT '
  if [ $rc = 0 ]; then
    echo "vm-tier2: $sc ok in $((SECONDS - t)) s"
  else
    echo "vm-tier2: $sc FAILED (exit $rc) in $((SECONDS - t)) s"; fail=1
  fi
done
echo "vm-tier2: done in $((SECONDS - T0)) s$([ $fail = 0 ] || echo ', with failures')"
exit $fail
