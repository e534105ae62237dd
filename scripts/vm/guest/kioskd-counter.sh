# shellcheck shell=bash
# kioskd-counter-bochs: the counter's first frame at rotation 0, then at rotation 90.
# shellcheck source=lib/kioskd.sh
. "$REPO/scripts/vm/guest/lib/kioskd.sh"
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = 0\n')
$COUNTER_SCENE"
mark counter-shown
wait_host 60
kioskd_status status
kioskd_term
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = 90\n')
$COUNTER_SCENE"
mark counter90-shown
wait_host 60
kioskd_term
kioskd_log 10
