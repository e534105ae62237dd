#include "kiosk_version_shim.h"
#include "kiosk_version.h"

const char *kiosk_version_shim(void) { return kiosk_version(); }
