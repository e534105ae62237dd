# shellcheck shell=bash
# kioskd-clock-*: the clock in scaled colours at rotation ROT (on the connector OUTPUT, if set);
# two screendumps at known guest times (the second once the host saw the next tick), status,
# SIGTERM restores the console.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
console_banner
ask_host console-ready 60
# OUTPUT (optional): the connector kioskd drives ([display] output); otherwise the first connected one.
output_line=""
if [ -n "${OUTPUT:-}" ]; then output_line="output = \"$OUTPUT\""; fi
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = %s\n%s\n[scenes]\norder = ["clock"]\n[scene.clock]\nkind = "clock"\ncolor_mode = "scaled"\nunsynced = "ignore"\n' "${ROT:-0}" "$output_line")"
mark shot1 "$EPOCHREALTIME"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
mark shot2 "$EPOCHREALTIME"
wait_host 60
mark shot2-done "$EPOCHREALTIME"
# A third frame needs the second one's flip event. Under emulation the first tick can take over
# half a second (every digit is rendered once), so wait for it (bounded) instead of assuming it.
wait_until 10 kioskd_has_frames 3 || true
kioskd_status status
# The truth about the screen: the guest's time, then `kioskctl outputs --json` (the last frame the
# kernel completed, frames in the last minute, showing).
# (The time is taken once the answer is in: the frame may complete while kioskctl runs.)
out=$("$KIOSKCTL" outputs --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')
mark outputs "$EPOCHREALTIME $out"
kioskd_term
wait_host 60
kioskd_log 12
