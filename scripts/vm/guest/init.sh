#!/bin/sh
# /init of the kernel tests' initramfs (busybox sh, PID 1), built by scripts/vm/vmharness.py:
# loads the modules, mounts the host root read-only over 9p and runs the guest script chrooted into it.
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
while read -r m; do insmod "/lib/modules/$m" 2>/dev/null; done < /modules.order
mkdir -p /host
if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose hostroot /host; then
  echo "@@KIOSK:harness-error:9p mount failed@@"; poweroff -f
fi
# aarch64: the guest root is not the host's, so the checkout comes as a second share, mounted at
# its own path (the harness made the mount point in the root).
repo=$(sed -n 's/.*kiosk\.repo=\([^ ]*\).*/\1/p' /proc/cmdline)
if grep -q 'kiosk\.reposhare=1' /proc/cmdline \
    && ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose repo "/host$repo"; then
  echo "@@KIOSK:harness-error:9p mount of the checkout failed@@"; poweroff -f
fi
# A scenario's boot hook (busybox sh, sourced with the host root on /host) may take over here,
# e.g. exec switch_root into an overlay of the host root with systemd as init.
boot=$(sed -n 's/.*kiosk\.boot=\([^ ]*\).*/\1/p' /proc/cmdline)
# shellcheck disable=SC1090 # the hook is named on the kernel command line
if [ -n "$boot" ]; then . "/host$boot"; fi
mount --rbind /dev /host/dev
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t tmpfs tmpfs /host/run
# The guest gets a scratch /tmp; a checkout that lives under the host's /tmp stays visible at its path.
case "$repo" in /tmp/*) mkdir -p /keep; mount -o bind "/host$repo" /keep ;; esac
mount -t tmpfs tmpfs /host/tmp
case "$repo" in /tmp/*) mkdir -p "/host$repo"; mount -o bind /keep "/host$repo" ;; esac
script=$(sed -n 's/.*kiosk\.script=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "@@KIOSK:init:$(cut -d' ' -f1 /proc/uptime)@@"
chroot /host /bin/bash "$script"
echo "@@KIOSK:guest-exit:$?@@"
sync
poweroff -f
