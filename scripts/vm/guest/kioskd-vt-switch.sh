# shellcheck shell=bash
# kioskd-vt-switch-bochs: kioskd with tty1 on standard input (VT_PROCESS) follows VT_ACTIVATE
# switches: away to tty2 it releases DRM master, back on tty1 it takes master again and repaints.
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
vt() { "$KIOSK_VMTOOL" vt "$@" 2>&1 | tr '\n' ' ' | sed 's/@@//g; s/ *$//'; }
klog() { sed 's/@@//g' /tmp/kioskd.log | tail -n "${1:-30}" > /dev/console; }
kstatus() { mark "$1" "$("$KIOSKCTL" status --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')"; }
# wait_log TEXT COUNT [SECONDS]: bounded wait until TEXT appears COUNT times in kioskd's log;
# prints the count.
wait_log() { wait_count /tmp/kioskd.log "$1" "$2" "${3:-10}" "$KPID"; }
mkdir -p /tmp/kstate
cat > /tmp/k.toml <<'TOML'
state_dir = "/tmp/kstate"
[display]
backend = "drm"
[scenes]
order = ["counter"]
[scene.counter]
kind = "counter"
shading = false
[control]
socket = "/tmp/k.sock"
TOML
mark vt-before "$(vt activate 1) active=$(vt active)"
console_banner
ask_host console-ready 60
TZ=UTC "$KIOSKD" --config /tmp/k.toml --log-level debug < /dev/tty1 > /tmp/kioskd.log 2>&1 &
KPID=$!
if [ "$(wait_log "first frame on screen" 1 60)" -lt 1 ]; then klog 40; mark up failed; kill -9 $KPID; exit 1; fi
mark up "$(grep -c 'following VT switches' /tmp/kioskd.log)"
mark t-up "$EPOCHREALTIME"
wait_host 60
# Idle a while before switching (a condition of the test, not a wait for something): a kiosk is
# switched away long after it started, when the threads that ran its start-up may be gone (idle
# dispatch workers exit after 5 s).
sleep 6
mark t-away "$EPOCHREALTIME"
mark away "$(vt activate 2 --timeout-ms 8000) active=$(vt active)"
mark released "$(wait_log 'released DRM master' 1 5)"
kstatus status-away
wait_host 60
# A second DRM client can take the display while kioskd is switched away.
coproc PROBE { exec "$KIOSK_VMTOOL" drm 2>/tmp/probe.log; }
PROBE_KEEP_PID=$PROBE_PID
echo "fill 0000ff" >&"${PROBE[1]}"
reply=""; IFS= read -r -t 60 reply <&"${PROBE[0]}" || reply="error no reply from probe"
mark second "$reply"
wait_host 60
echo quit >&"${PROBE[1]}"
IFS= read -r -t 30 reply <&"${PROBE[0]}"
wait "$PROBE_KEEP_PID" 2>/dev/null; mark second-exit "$?"
mark t-back "$EPOCHREALTIME"
mark back "$(vt activate 1 --timeout-ms 8000) active=$(vt active)"
mark acquired "$(wait_log 'acquired DRM master' 1 5)"
kstatus status-back
mark alive "$(kill -0 $KPID 2>/dev/null && echo yes || echo no)"
wait_host 60
mark t-term "$EPOCHREALTIME"
kill -TERM $KPID; i=0
while kill -0 $KPID 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
wait $KPID; mark exit "$?"
mark t-exit "$EPOCHREALTIME"
mark vt-after "active=$(vt active)"
wait_host 60
grep -E "VT|DRM master|SIGUSR|display back|error|warn" /tmp/kioskd.log | sed 's/@@//g' | tail -n 12 > /dev/console
