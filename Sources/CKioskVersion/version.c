#include "kiosk_version.h"

// Must equal the file VERSION (KioskVersionTests checks it; scripts/upgrade-debs.sh changes both).
const char *kiosk_version(void) { return "0.1.0"; }
