#ifndef KIOSK_LAZY_H
#define KIOSK_LAZY_H
// Libraries only some configurations use are opened when first needed (dlopen), not at exec:
// libmosquitto (with libssl and libcrypto) for [mqtt], libcrypto for the web page's session
// tokens, libqrencode for the pairing code's QR symbol, libasound for [audio]'s horn, libudev and
// libinput (with libevdev, libmtdev, libwacom, libgudev) for the DRM backend's displays and input,
// libsystemd for the logind session's backlight (sd-bus). kioskd without them starts faster and
// smaller (a headless start maps 14 libraries fewer). lazy_libs.c opens them; lazy_optional.c and
// the generated lazy_udev.c, lazy_input.c and lazy_sdbus.c define their functions as stubs that
// call through the opened library.

enum {
    KIOSK_LIB_MOSQUITTO = 0,
    KIOSK_LIB_CRYPTO = 1,
    KIOSK_LIB_QRENCODE = 2,
    KIOSK_LIB_ASOUND = 3,
    KIOSK_LIB_UDEV = 4,
    KIOSK_LIB_INPUT = 5,
    KIOSK_LIB_SYSTEMD = 6,
};

/// Opens library `lib` and resolves every function kioskd uses from it (once; thread-safe).
/// Returns NULL when it is ready, else what went wrong: what needs the library, its Debian
/// package and dlerror's text (or the missing function), valid until the next call for it.
const char *kiosk_lazy_load(int lib);

/// The file name opened for `lib` (e.g. "libmosquitto.so.1").
const char *kiosk_lazy_soname(int lib);

/// Test seam: does what kiosk_lazy_load does for `lib` but opens `soname` instead and keeps
/// nothing (the handle is closed again): NULL if it would work, else the same message (in a
/// buffer of its own, not thread-safe: for tests).
const char *kiosk_lazy_check(int lib, const char *soname);

#endif
