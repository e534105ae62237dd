# shellcheck shell=bash
# drm-two-heads-virtio: one DRMCard drives Virtual-1 and Virtual-2 (virtio-gpu max_outputs=2,
# Virtual-2 forced on by video=Virtual-2:1280x800e), both heads flipping at once; atomic, then
# legacy with other colours. Both heads in 1024x768 (the forced Virtual-2 prefers 5120x2160 and has no 1280x800). The host screendumps both heads before each run ends.
for api in atomic legacy; do
  if [ "$api" = atomic ]; then colours="Virtual-1=ff0000 Virtual-2=00ff00"; else colours="Virtual-1=0000ff Virtual-2=ffffff"; fi
  # shellcheck disable=SC2086  # two OUTPUT=RRGGBB words
  coproc HEADS { exec "$KIOSK_VMTOOL" drm-heads --api "$api" --mode 1024x768 --flips 60 $colours 2>"/tmp/heads-$api.log"; }
  pid=$HEADS_PID
  for what in head1 head2 "done"; do
    reply=""
    IFS= read -r -t 120 reply <&"${HEADS[0]}" || reply="error no reply from drm-heads"
    mark "$api-$what" "$reply"
  done
  wait_host 90
  echo quit >&"${HEADS[1]}"
  reply=""
  IFS= read -r -t 60 reply <&"${HEADS[0]}" || reply="error no reply from drm-heads"
  mark "$api-bye" "$reply"
  wait "$pid"; mark "$api-exit" "$?"
  sed 's/@@//g' "/tmp/heads-$api.log" | tail -n 12 > /dev/console
done
