# shellcheck shell=bash
# boot-smoke: the VM boots, udev runs, the DRM and uinput nodes exist, host and guest take turns.
mark dri "$(cd /dev/dri 2>/dev/null && echo *)"
mark uinput "$( [ -e /dev/uinput ] && echo yes || echo no )"
mark hello
wait_host 60
mark echo "$HOST_REPLY"
