#ifndef KIOSK_VERSION_SHIM_H
#define KIOSK_VERSION_SHIM_H

/// kioskd's version, as CKioskVersion's version.c says it. KioskCore imports this module, not
/// CKioskVersion: SwiftPM recompiles a Swift module when an object file of a C module it imports
/// changes, so another version would recompile KioskCore; through this unchanging file it only
/// recompiles version.c and relinks.
const char *kiosk_version_shim(void);

#endif
