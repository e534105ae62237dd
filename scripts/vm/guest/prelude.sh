# shellcheck shell=bash
# Guest prelude of the kernel tests (sourced first by every guest script the harness writes,
# scripts/vm/vmharness.py): runs as root in the VM, chrooted into the host root, cwd = the checkout.
# Defines mark, wait_host, ask_host, wait_for_file and wait_log, then starts udev (unless
# KIOSK_VM_UDEV=0) and marks udev-ready.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp SYSTEMD_IGNORE_CHROOT=1 LANG=C.UTF-8
cd "$REPO" || exit 1
# shellcheck source=lib/common.sh
. "$REPO/scripts/vm/guest/lib/common.sh"
# The host answers on the second serial port, kept open (fd 5) for the whole script: the 8250
# driver clears its receive FIFO whenever the port is opened, so a line the host sent while it
# was closed could be cut.
stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec 5</dev/ttyS1
# wait_host [TIMEOUT]: waits for one line from the host into $HOST_REPLY.
wait_host() {
  HOST_REPLY=""
  if ! IFS= read -r -t "${1:-120}" HOST_REPLY <&5; then mark harness-error "no host reply"; return 1; fi
  HOST_REPLY="${HOST_REPLY%$'\r'}"
}
mkdir -p /run/udev
t0=$(cut -d' ' -f1 /proc/uptime)
if [ "${KIOSK_VM_UDEV:-1}" = 1 ]; then
  /lib/systemd/systemd-udevd --daemon >/dev/null 2>&1
  udevadm trigger --action=add >/dev/null 2>&1
  udevadm settle --timeout=30 >/dev/null 2>&1
fi
mark udev-ready "$t0 $(cut -d' ' -f1 /proc/uptime)"
