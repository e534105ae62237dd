#ifndef KIOSK_LAZY_INTERNAL_H
#define KIOSK_LAZY_INTERNAL_H
// What lazy_libs.c (the loader) and the files of stubs share: each library's table of the
// functions kioskd calls from it, filled by dlsym when the library is opened.
#include <stddef.h>

#include "kiosk_lazy.h"

struct kiosk_lazy_entry {
    const char *name;
    void **slot;
};

struct kiosk_lazy_table {
    const struct kiosk_lazy_entry *entries;
    size_t count;
};

extern const struct kiosk_lazy_table kiosk_lazy_mosquitto, kiosk_lazy_crypto, kiosk_lazy_qrencode, kiosk_lazy_asound,
    kiosk_lazy_udev, kiosk_lazy_input, kiosk_lazy_sdbus;

/// Called by every stub: library `lib` is open after it, or the process stops with the reason
/// on stderr (callers open it first with kiosk_lazy_load, which reports the error properly).
void kiosk_lazy_need(int lib);

#endif
