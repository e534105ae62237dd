#ifndef KIOSK_VERSION_H
#define KIOSK_VERSION_H

/// kioskd's version (the file VERSION), compiled into a C file of its own so that a build
/// with another version recompiles one file and relinks, nothing else.
const char *kiosk_version(void);

#endif
