# shellcheck shell=sh
# Boot hook for the kernel tests (scripts/vm/vmharness.py, `boot=` of a scenario): sourced by the
# initramfs /init (busybox sh, PID 1) with the host root mounted read-only on /host. It boots
# systemd as PID 1 on an overlay of the host root (tmpfs upper layer, so the guest may install
# and change anything without touching the host) and runs the scenario's guest script from
# kiosk-test.service; the VM powers off when that script ends.
#
# The boot is kept small: default.target is kiosk-test.target (basic.target plus the test
# service); what needs real disks, the network or a first-boot dialogue is masked.

ksb_fail() { echo "@@KIOSK:harness-error:systemd boot: $1@@"; poweroff -f; }

ksb_script=$(sed -n 's/.*kiosk\.script=\([^ ]*\).*/\1/p' /proc/cmdline)
[ -x /host/lib/systemd/systemd ] || ksb_fail "no /lib/systemd/systemd on the host (apt-get install systemd)"
mkdir -p /ovl /newroot
mount -t tmpfs -o mode=0755 tmpfs /ovl || ksb_fail "tmpfs for the overlay"
mkdir -p /ovl/upper /ovl/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/ovl/upper,workdir=/ovl/work /newroot \
    || ksb_fail "overlay mount over the 9p host root failed"

R=/newroot
# A scratch /tmp and /var/tmp: the host's would be walked over 9p by systemd-tmpfiles at boot
# (it empties /tmp). A checkout under /tmp stays visible at its path.
ksb_repo=$(sed -n 's/.*kiosk\.repo=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
mount -t tmpfs -o mode=1777 tmpfs "$R/var/tmp"
case "$ksb_repo" in /tmp/*|/var/tmp/*) mkdir -p "$R$ksb_repo"; mount -o bind "/host$ksb_repo" "$R$ksb_repo" ;; esac
# The checkout as a share of its own (aarch64 root): the overlay shows only the lower root.
case "$ksb_repo" in /tmp/*|/var/tmp/*) ;; *)
  if grep -q " /host$ksb_repo " /proc/mounts; then mount -o bind "/host$ksb_repo" "$R$ksb_repo"; fi ;;
esac
# Container markers in the host root would make systemd run in container mode (no udev, no
# systemd.unit=, …): this is a VM.
rm -f "$R/.dockerenv" "$R/run/.containerenv"
# Real disks and the host's mounts do not exist here.
: > "$R/etc/fstab"
# A machine id of its own, so nothing believes this is a first boot.
tr -d '-' < /proc/sys/kernel/random/uuid > "$R/etc/machine-id"

S=$R/etc/systemd/system
mkdir -p "$S" "$R/etc/systemd/system.conf.d"
# Console markers must stay readable: no boot status lines on the console.
cat > "$R/etc/systemd/system.conf.d/kiosk-test.conf" <<'EOF'
[Manager]
ShowStatus=no
DefaultTimeoutStartSec=60s
DefaultTimeoutStopSec=15s
EOF
for u in systemd-remount-fs.service systemd-timesyncd.service systemd-firstboot.service \
    systemd-machine-id-commit.service systemd-binfmt.service systemd-update-utmp.service \
    systemd-pstore.service systemd-hwdb-update.service ldconfig.service timers.target \
    remote-fs.target swap.target cryptsetup.target getty.target console-getty.service \
    serial-getty@ttyS0.service serial-getty@ttyS1.service serial-getty@ttyAMA0.service e2scrub_reap.service \
    apt-daily.timer apt-daily-upgrade.timer fstrim.timer \
    systemd-journal-catalog-update.service systemd-update-done.service; do
    ln -sf /dev/null "$S/$u"
done
# No generators: none is needed here, and each one runs from 9p at boot and at every
# daemon-reload (sysv, fstab, getty, gpt-auto, … cost tens of seconds under emulation).
mkdir -p "$R/etc/systemd/system-generators"
for g in /host/lib/systemd/system-generators/* /host/usr/lib/systemd/system-generators/*; do
    [ -e "$g" ] && ln -sf /dev/null "$R/etc/systemd/system-generators/${g##*/}"
done
cat > "$S/kiosk-test.target" <<'EOF'
[Unit]
Description=kioskd kernel test
Requires=basic.target
Wants=kiosk-test.service
After=basic.target
AllowIsolate=yes
EOF
ln -sf kiosk-test.target "$S/default.target"
cat > "$S/kiosk-test.service" <<'EOF'
[Unit]
Description=kioskd kernel test: the scenario's guest script
# Early, so the host hears from the guest while the rest of the boot goes on; the prelude waits
# for basic.target itself.
DefaultDependencies=no
After=systemd-journald.socket systemd-udevd.service systemd-udev-trigger.service
Wants=systemd-udevd.service systemd-udev-trigger.service
SuccessAction=poweroff-immediate
FailureAction=poweroff-immediate

[Service]
Type=oneshot
TimeoutStartSec=infinity
StandardInput=null
StandardOutput=journal+console
StandardError=journal+console
ExecStart=/bin/sh /kiosk-test-run.sh
EOF
cat > "$R/kiosk-test-run.sh" <<EOF
#!/bin/sh
/bin/bash '$ksb_script'
rc=\$?
echo "@@KIOSK:guest-exit:\$rc@@" > /dev/console
exit \$rc
EOF

echo "@@KIOSK:init:$(cut -d' ' -f1 /proc/uptime)@@"
mount --move /dev "$R/dev"
mount --move /proc "$R/proc"
mount --move /sys "$R/sys"
exec switch_root "$R" /lib/systemd/systemd
