# shellcheck shell=bash
# kioskd-horn: the horn through ALSA on snd-aloop. kioskd plays on hw:Loopback,0,0
# ([audio] device); kiosk-vmtool audio-capture records hw:Loopback,1,0, which hears it. Both
# stamp CLOCK_MONOTONIC of this one kernel: the horn request's instant (kioskctl horn's answer)
# and the recording's first loud sample (scripts/vm/scenarios_audio.py checks them). Then
# mute = true (a reload) must be silent, and a device that does not exist must leave the horn
# unavailable while the clock keeps drawing.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
# shellcheck source=lib/aloop.sh
. "$REPO/scripts/vm/guest/lib/aloop.sh"

aloop_load

SCENE='[display]
backend = "headless"
headless_size = "640x360"
[scenes]
order = ["clock"]
[scene.clock]
kind = "clock"'
# audio_config MUTE [DEVICE]: the config body with [audio] on DEVICE (default the loopback).
audio_config() {
  printf '%s\n[audio]\ndevice = "%s"\nhorn = "builtin"\nhorn_seconds = 1.0\nvolume = 80\nmute = %s\n' \
    "$SCENE" "${2:-hw:Loopback,0,0}" "$1"
}
audio_status() {
  "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)
print(json.dumps({"audio": s.get("audio"), "frames": s.get("frames")}, sort_keys=True))'
}
# horn_run NAME: records 6 s on the loopback's capture side (kioskctl alone takes a second or
# two to start under TCG), asks for the horn 0.5 s in (a stretch of silence first), marks
# NAME-answer (kioskctl horn --json, or its error) and NAME-capture (what the recording heard),
# then NAME-status (status's audio object).
horn_run() {
  if ! capture_start 6; then mark "$1-answer" "capture did not start: $(log_tail /tmp/cap.out)"; return; fi
  sleep 0.5  # a stretch of silence in the recording before the horn
  local answer
  answer=$("$KIOSKCTL" horn --socket /tmp/k.sock --json 2>&1)
  capture_wait
  mark "$1-answer" "$(echo "$answer" | tr '\n' ' ')"
  mark "$1-capture" "$CAPTURE"
  [ "$1" = sound ] && wait_until 10 has_last_horn
  mark "$1-status" "$(audio_status)"
}
# has_last_horn: status reports the figures of a horn that was played.
has_last_horn() { "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | grep -q '"last_horn"'; }

kioskd_start "$(audio_config false)"
mark ready-status "$(audio_status)"
horn_run sound

# mute = true through a reload: the device is opened again, nothing is played.
kioskd_config /tmp/k.toml "$(audio_config true)"
mark reload-mute "$("$KIOSKCTL" reload --socket /tmp/k.sock 2>&1 | tr '\n' ' ')"
horn_run muted

# No such device: one warning, status says the horn is unavailable, the clock keeps drawing.
kioskd_config /tmp/k.toml "$(audio_config false hw:NoSuchCard,0,0)"
mark reload-nodevice "$("$KIOSKCTL" reload --socket /tmp/k.sock 2>&1 | tr '\n' ' ')"
before=$(audio_status)
mark nodevice-horn "$("$KIOSKCTL" horn --socket /tmp/k.sock 2>&1 | tr '\n' ' ')"
sleep 2
mark nodevice-status "$before @ $(audio_status)"
mark horn-log "$(grep -c 'horn' /tmp/kioskd.log) $(grep 'horn is unavailable' /tmp/kioskd.log | head -n 1 | cut -c1-300 | sed 's/@@//g')"
kioskd_term
