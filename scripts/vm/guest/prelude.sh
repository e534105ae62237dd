# shellcheck shell=bash
# Guest prelude of the kernel tests (sourced first by every guest script the harness writes,
# scripts/vm/vmharness.py): runs as root in the VM, chrooted into the host root, cwd = the checkout.
# Opens the host's answer port (lib/common.sh), then starts udev (unless
# KIOSK_VM_UDEV=0) and marks udev-ready.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp SYSTEMD_IGNORE_CHROOT=1 LANG=C.UTF-8
cd "$REPO" || exit 1
# shellcheck source=lib/common.sh
. "$REPO/scripts/vm/guest/lib/common.sh"
open_host_port
mkdir -p /run/udev
t0=$(cut -d' ' -f1 /proc/uptime)
if [ "${KIOSK_VM_UDEV:-1}" = 1 ]; then
  /lib/systemd/systemd-udevd --daemon >/dev/null 2>&1
  udevadm trigger --action=add >/dev/null 2>&1
  udevadm settle --timeout=30 >/dev/null 2>&1
fi
mark udev-ready "$t0 $(cut -d' ' -f1 /proc/uptime)"
