# shellcheck shell=bash
# input-kioskd-paint*: kioskd's paint scene on DRM at ROTATION; two uinput fingers draw STROKES_AB
# (kiosk-vmtool --stroke arguments, space separated), a third device is unplugged half way
# through STROKE_C. The host checks the ink on the screendumps at each wait_host.
mkdir -p /tmp/kstate
cat > /tmp/paint.toml <<TOML
state_dir = "/tmp/kstate"
[display]
backend = "drm"
rotation = $ROTATION
[scene.paint]
kind = "paint"
background = "#FAFAFA"
[scenes]
order = ["paint"]
TOML
"$KIOSKD" --config /tmp/paint.toml > /tmp/kioskd.log 2>&1 &
KPID=$!
wait_count /tmp/kioskd.log "first frame on screen" 1 30 $KPID > /dev/null
wait_count /tmp/kioskd.log "input: libinput on seat" 1 30 $KPID > /dev/null
mark started "$(grep -c 'input device added' /tmp/kioskd.log)"
wait_host 60
read -r -a ab <<< "$STROKES_AB"
"$KIOSK_VMTOOL" touch --name kvm-paint --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-paint" \
  "${ab[@]}" --steps 24 --step-ms 25 > /tmp/t.log 2>&1
mark drawn "$?"
wait_host 60
read -r -a c <<< "$STROKE_C"
"$KIOSK_VMTOOL" touch --name kvm-unplug --wait-log /tmp/kioskd.log --wait-text "input device added: kvm-unplug" \
  "${c[@]}" --steps 20 --step-ms 25 --unplug-after 10 >> /tmp/t.log 2>&1
mark unplugged "$?"
wait_count /tmp/kioskd.log "input device removed: kvm-unplug" 1 10 > /dev/null
mark removed "$(grep 'input device removed: kvm-unplug' /tmp/kioskd.log | tail -c 200 | tr '@' _)"
wait_host 60
if kill -0 $KPID 2>/dev/null; then mark alive yes; else mark alive no; fi
kill -TERM $KPID; wait $KPID; mark exit "$?"
mark log "$(gzip -c /tmp/kioskd.log | base64 -w0)"
