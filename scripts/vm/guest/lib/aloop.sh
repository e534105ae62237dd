# shellcheck shell=bash
# snd-aloop, the loopback sound card: what is played on hw:Loopback,0,0 is heard on
# hw:Loopback,1,0 (kiosk-vmtool audio-capture records it).

# aloop_load: loads snd-aloop and its dependencies from the kernel package the harness
# unpacked; marks aloop "ok CARDS" (or "failed: …" and exits).
aloop_load() {
  local kdir out
  kdir="$REPO/vm/work/kernel-$(uname -r)"
  if ! out=$(modprobe -d "$kdir" snd-aloop 2>&1) || ! wait_until 20 aloop_ready; then
    mark aloop "failed: modprobe snd-aloop: $out $(echo /dev/snd/*)"; exit 1
  fi
  mark aloop "ok $(tr -s ' \n' ' ' < /proc/asound/cards)"
}
aloop_ready() { grep -q Loopback /proc/asound/cards 2>/dev/null && ls /dev/snd/pcmC*D1c > /dev/null 2>&1; }

# capture_start SECONDS: records SECONDS on hw:Loopback,1,0 in the background (CPID, output in
# /tmp/cap.out); false when the capture did not start within 30 s.
capture_start() {
  rm -f /tmp/cap.started
  "$KIOSK_VMTOOL" audio-capture --device hw:Loopback,1,0 --seconds "$1" --started-file /tmp/cap.started > /tmp/cap.out 2>&1 &
  CPID=$!
  wait_for_file /tmp/cap.started 30 || { kill "$CPID"; return 1; }
}
# capture_wait: waits for the capture (not in a subshell: it is this shell's child) and sets
# CAPTURE to what it heard (its JSON line, or its errors).
capture_wait() {
  wait "$CPID"
  # shellcheck disable=SC2034 # read by the scripts that source this
  CAPTURE="$(sed -n 's/^vmtool: capture //p' /tmp/cap.out | head -n 1)$(grep -v '^vmtool:' /tmp/cap.out | tr '\n' ' ' | cut -c1-300)"
}
