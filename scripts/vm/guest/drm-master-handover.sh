# shellcheck shell=bash
# drm-master-handover: SIGUSR1 makes the probe drop DRM master, a second probe shows its frame,
# SIGUSR2 makes the first take master back (mode set and repaint).
# shellcheck source=lib/probe.sh
. "$REPO/scripts/vm/guest/lib/probe.sh"
probe_start --api atomic
cmd fill fill ff0000
kill -USR1 "$PROBE_KEEP_PID"
mark released "$(wait_count /tmp/probe.log 'released DRM master' 1 30)"
# The second client: a fill and a status, each answered before the next line is sent.
coproc SECOND { exec "$KIOSK_VMTOOL" drm 2>/tmp/second.log; }
# shellcheck disable=SC2153 # set by coproc
second_pid=$SECOND_PID
echo "fill 0000ff" >&"${SECOND[1]}"
reply=""; IFS= read -r -t 60 reply <&"${SECOND[0]}" || reply="error no reply from the second probe"
mark second "$reply"
echo quit >&"${SECOND[1]}"
IFS= read -r -t 30 reply <&"${SECOND[0]}"
wait "$second_pid" 2>/dev/null; mark second-exit "$?"
wait_host 60
kill -USR2 "$PROBE_KEEP_PID"
mark acquired "$(wait_count /tmp/probe.log 'acquired DRM master' 1 30)"
cmd status status
wait_host 60
probe_term
