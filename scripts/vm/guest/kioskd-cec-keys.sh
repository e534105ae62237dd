# shellcheck shell=bash
# kioskd-cec-keys: the TV remote's keys over HDMI-CEC on vivid's emulated bus act as keyboard keys:
# /dev/cec0 plays the TV (cec-ctl --tv, cec-follower) and sends User Control Pressed/Released to
# the kiosk (Playback 1, logical address 4) on /dev/cec1; kioskd's counter follows, read with
# kioskctl (scripts/vm/scenarios_cec.py checks the markers).
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"

kdir="$REPO/vm/work/kernel-$(uname -r)"
if ! out=$(modprobe -d "$kdir" vivid 2>&1) || ! wait_for_file /dev/cec1 20; then
  mark cec-setup "failed: modprobe vivid: $out $(echo /dev/cec*)"; exit 1
fi
if ! out=$(cec-ctl -d /dev/cec0 --tv 2>&1); then mark cec-setup "failed: cec-ctl --tv: $(echo "$out" | tail -n 3 | tr '\n' ' ')"; exit 1; fi
cec-follower -d /dev/cec0 > /tmp/follower.log 2>&1 &
FPID=$!
mark cec-setup "ok"

# The counter's keys as a keyboard binds them; the remote's Channel Up stands for KEY_UP too, Red
# for nothing.
kioskd_start "$(printf '%s\n' '[display]' 'backend = "headless"' 'headless_size = "640x360"' \
  '[display.cec]' 'adapter = "/dev/cec1"' '[display.cec.keys]' 'channel-up = "KEY_UP"' 'red = "none"' \
  '[scenes]' 'order = ["score"]' '[scene.score]' 'kind = "counter"' \
  '[scene.score.keys]' 'KEY_UP = "increment count"' 'KEY_DOWN = "decrement count"')"

value() { "$KIOSKCTL" counter count get --socket /tmp/k.sock 2>/dev/null; }
value_is() { [ "$(value)" = "$1" ]; }
# press UI-CMD: the TV sends the key down, then up, to the kiosk.
press() {
  cec-ctl -d /dev/cec0 --to 4 --user-control-pressed ui-cmd="$1" > /dev/null 2>&1
  cec-ctl -d /dev/cec0 --to 4 --user-control-released > /dev/null 2>&1
}
kioskd_power_on() { "$KIOSKCTL" status --socket /tmp/k.sock --json 2>/dev/null | grep -q '"power":"on"'; }

# The link is up (the TV answered): the adapter is open and kioskd follows it.
wait_until 30 kioskd_power_on
mark kiosk-address "$(cec-ctl -d /dev/cec1 2>&1 | grep -E 'Logical Address' | tr -s ' \t\n' ' ')"
mark start "$(value)"

t0=$(now_us)
press up
wait_until 10 value_is 1
mark up-once "$(value) $(( ($(now_us) - t0) / 1000 ))"
press up; press up
wait_until 10 value_is 3
mark up-thrice "$(value)"
press down
wait_until 10 value_is 2
mark down "$(value)"
press channel-up
wait_until 10 value_is 3
mark channel-up "$(value)"
# Keys bound to nothing: volume up (no keyboard key), red (bound to none), 7 (KEY_7: no binding).
press volume-up; press f2-red; press number-7
sleep 2
mark unbound "$(value) $(grep -c 'is bound to nothing; ignored' /tmp/kioskd.log)"
mark outputs-lit "$("$KIOSKCTL" outputs --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ')"
# The TV asks the kiosk's power status: kioskd answers as a follower (on: the panel is lit).
mark tv-asks "$(cec-ctl -d /dev/cec0 --to 4 --give-device-power-status 2>&1 | sed -n 's/.*pwr-state: *\([a-z-]*\).*/\1/p' | head -n 1)"
# Blanked: kioskd answers standby.
"$KIOSKCTL" blank on --socket /tmp/k.sock > /dev/null
sleep 1
mark outputs-blanked "$("$KIOSKCTL" outputs --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ')"
mark tv-asks-blanked "$(cec-ctl -d /dev/cec0 --to 4 --give-device-power-status 2>&1 | sed -n 's/.*pwr-state: *\([a-z-]*\).*/\1/p' | head -n 1)"
kill -TERM "$FPID"; wait "$FPID" 2>/dev/null
kioskd_term
kioskd_log 30
