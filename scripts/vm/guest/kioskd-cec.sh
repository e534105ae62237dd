# shellcheck shell=bash
# kioskd-cec: the TV follows the blanking over HDMI-CEC on vivid's emulated bus: /dev/cec0 plays
# the TV (cec-ctl --tv, cec-follower), kioskd drives /dev/cec1 ([display.cec] adapter). Every
# state is read two ways: cec-ctl asks the TV from the kiosk's adapter, and kioskd's status
# (scripts/vm/scenarios_cec.py checks them).
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"

# vivid and its dependencies come from the kernel package the harness unpacked (the host root
# has no modules for the guest's kernel).
kdir="$REPO/vm/work/kernel-$(uname -r)"
if ! out=$(modprobe -d "$kdir" vivid 2>&1) || ! wait_for_file /dev/cec1 20; then
  mark cec-setup "failed: modprobe vivid: $out $(echo /dev/cec*)"; exit 1
fi
if ! out=$(cec-ctl -d /dev/cec0 --tv 2>&1); then mark cec-setup "failed: cec-ctl --tv: $(echo "$out" | tail -n 3 | tr '\n' ' ')"; exit 1; fi
cec-follower -d /dev/cec0 -v > /tmp/follower.log 2>&1 &
FPID=$!
mark cec-setup "ok $(cec-ctl -d /dev/cec1 2>&1 | grep -E 'Driver|Adapter|Physical Address' | tr -s ' \t\n' ' ')"

# tv_power: the TV's power status as cec-ctl reads it through the kiosk's adapter ("none" when
# nothing answered).
tv_power() {
  local p
  p=$(cec-ctl -d /dev/cec1 --to 0 --give-device-power-status 2>&1 | sed -n 's/.*pwr-state: *\([a-z-]*\).*/\1/p' | head -n 1)
  echo "${p:-none}"
}
# kioskd_cec: outputs[0].cec of kioskctl status, as "POWER|ERROR" ("?" without one).
kioskd_cec() {
  "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | python3 -c '
import json, sys
try:
    c = json.load(sys.stdin)["outputs"][0].get("cec") or {}
except Exception:
    c = {}
print("%s|%s|%s" % (c.get("adapter", "?"), c.get("power", "?"), c.get("error") or ""))'
}
# kioskd_power_is WORD…: kioskd reports one of these power states.
kioskd_power_is() {
  local p
  p=$(kioskd_cec | cut -d'|' -f2)
  for w in "$@"; do [ "$p" = "$w" ] && return 0; done
  return 1
}
kioskd_error_has() { kioskd_cec | cut -d'|' -f3 | grep -qF -- "$1"; }
frames() { "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | grep -o '"frames":[0-9]*' | head -n 1 | cut -d: -f2; }
gap() { "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["frame_gap_ms"]["last_minute"])'; }
# phase NAME: marks NAME with "TV-POWER-BY-CEC-CTL|KIOSKD-ADAPTER|KIOSKD-POWER|KIOSKD-ERROR|ELAPSED-S".
phase() { mark "$1" "$2|$(kioskd_cec)|$3"; }

kioskd_start "$(printf '[display]\nbackend = "headless"\nheadless_size = "640x360"\n[display.cec]\nadapter = "/dev/cec1"\n[scenes]\norder = ["clock"]\n[scene.clock]\nkind = "clock"\n')"

# At start kioskd claims a Playback address and wakes the TV (Image View On, Active Source).
t0=$(now_us)
wait_until 30 kioskd_power_is on to-on
phase start "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"
mark kiosk-address "$(cec-ctl -d /dev/cec1 2>&1 | grep -E 'Logical Address|OSD Name' | tr -s ' \t\n' ' ')"

# kioskctl blank on: Standby to the TV.
t0=$(now_us)
"$KIOSKCTL" blank on --socket /tmp/k.sock > /dev/null
wait_until 30 kioskd_power_is standby
phase blank-on "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"

# kioskctl blank off: Image View On + Active Source; the TV goes to-on, then on.
t0=$(now_us)
"$KIOSKCTL" blank off --socket /tmp/k.sock > /dev/null
wait_until 30 kioskd_power_is on to-on
phase blank-off "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"
wait_until 30 kioskd_power_is on
phase blank-off-settled "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"
# A quiet minute lit with the TV answering (kioskd asks it every 10 s): the frame gap this machine
# gives kioskd anyway, to compare the silent TV's minute with.
t1=$(now_us); f1=$(frames)
sleep 62
t2=$(now_us); f2=$(frames)
mark ticking-answering "$f1 $f2 $(( (t2 - t1) / 1000 )) $(gap)"
mark follower-log "$(grep -cF 'STANDBY (0x36)' /tmp/follower.log) $(grep -cF 'IMAGE_VIEW_ON (0x04)' /tmp/follower.log) $(grep -cF 'ACTIVE_SOURCE (0x82)' /tmp/follower.log)"

# The follower stopped: the TV's adapter still holds address 0, so the kernel refuses Give Device
# Power Status for it (Feature Abort): no answer from the TV.
kill -TERM "$FPID"; wait "$FPID" 2>/dev/null
t0=$(now_us)
"$KIOSKCTL" blank on --socket /tmp/k.sock > /dev/null
wait_until 30 kioskd_error_has "no answer from the TV"
phase stopped "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"

# No TV on the bus at all (its address given up): every message unacknowledged.
cec-ctl -d /dev/cec0 --clear > /dev/null 2>&1
t0=$(now_us)
"$KIOSKCTL" blank off --socket /tmp/k.sock > /dev/null
wait_until 30 kioskd_error_has "not acknowledged"
phase gone "$(tv_power)" "$(( ($(now_us) - t0) / 1000 ))"
# A quiet minute lit with the TV silent (kioskd keeps asking it; nothing else runs here): the
# frame gap over the last minute then covers only that time.
t1=$(now_us); f1=$(frames)
sleep 62
t2=$(now_us); f2=$(frames)
mark ticking "$f1 $f2 $(( (t2 - t1) / 1000 )) $(gap)"
kioskd_term
kioskd_log 20
