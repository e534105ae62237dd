# shellcheck shell=bash
# drm-hotplug-virtio: a disconnected head starts inactive; the GPU removed by the guest kernel
# (PCI remove) and added back (bus rescan) is followed by the probe.
# shellcheck source=lib/probe.sh
. "$REPO/scripts/vm/guest/lib/probe.sh"
gpu=$(readlink -f /sys/class/drm/card0/device)
mark gpu "$gpu"
mark noconn "$(printf 'status\nquit\n' | "$KIOSK_VMTOOL" drm --output Virtual-2 2>/dev/null | head -n 1)"
probe_start --api atomic
cmd fill fill 00ff00
wait_host 90
echo 1 > "$gpu/remove"
cmd gone wait-inactive 60
wait_host 90
echo 1 > /sys/bus/pci/rescan
cmd back wait-active 60
cmd status status
wait_host 60
probe_term
probe_log 20
