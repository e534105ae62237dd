# shellcheck shell=bash
# drm-rotation: the quadrant pattern at rotation 90, 180 and 270, one probe each.
# shellcheck source=lib/probe.sh
. "$REPO/scripts/vm/guest/lib/probe.sh"
for rot in 90 180 270; do
  probe_start --rotation "$rot"
  cmd "status$rot" status
  cmd "pattern$rot" pattern
  wait_host 60
  probe_term
done
