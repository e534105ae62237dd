// Opens the libraries kioskd uses only in some configurations or only later (see kiosk_lazy.h)
// and resolves the functions kioskd calls from them. The stubs (lazy_optional.c and the
// generated lazy_udev.c, lazy_input.c, lazy_sdbus.c) make sure their library is open (aborting
// with the reason if it cannot be: callers load it first through kiosk_lazy_load, which reports
// the error properly) and call the real function.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lazy_internal.h"

#define KIOSK_LAZY_COUNT 7

static const char *const sonames[KIOSK_LAZY_COUNT] = {
    "libmosquitto.so.1",
    "libcrypto.so.3",
    "libqrencode.so.4",
    "libasound.so.2",
    "libudev.so.1",
    "libinput.so.10",
    "libsystemd.so.0",
};
// What each is for, and the Debian package that has it (for the error message).
static const char *const purposes[KIOSK_LAZY_COUNT] = {
    "[mqtt] needs libmosquitto (Debian package libmosquitto1)",
    "[web] needs OpenSSL's libcrypto for its session tokens (Debian package libssl3)",
    "the pairing code's QR symbol needs libqrencode (Debian package libqrencode4)",
    "[audio] needs ALSA's libasound (Debian package libasound2, libasound2t64 from Debian 13)",
    "the DRM displays and input devices need libudev (Debian package libudev1)",
    "input devices need libinput (Debian package libinput10)",
    "the logind session's backlight needs libsystemd's sd-bus (Debian package libsystemd0)",
};
static const struct kiosk_lazy_table *const tables[KIOSK_LAZY_COUNT] = {
    &kiosk_lazy_mosquitto, &kiosk_lazy_crypto, &kiosk_lazy_qrencode, &kiosk_lazy_asound,
    &kiosk_lazy_udev, &kiosk_lazy_input, &kiosk_lazy_sdbus,
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[KIOSK_LAZY_COUNT];
static char errors[KIOSK_LAZY_COUNT][512];

const char *kiosk_lazy_soname(int lib) {
    return lib >= 0 && lib < KIOSK_LAZY_COUNT ? sonames[lib] : "(unknown library)";
}

// Opens `soname` for `lib` and fills `slots` (one per entry of its table, in order); on failure
// writes the reason into `error` and returns NULL.
static void *open_library(int lib, const char *soname, void **slots, char *error, size_t size) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(error, size, "%s: %s", purposes[lib], e ? e : soname);
        return NULL;
    }
    const struct kiosk_lazy_table *t = tables[lib];
    for (size_t i = 0; i < t->count; i++) {
        void *f = dlsym(h, t->entries[i].name);
        if (f == NULL) {
            snprintf(error, size, "%s: %s has no function %s (another version?)", purposes[lib], soname, t->entries[i].name);
            dlclose(h);
            return NULL;
        }
        slots[i] = f;
    }
    return h;
}

const char *kiosk_lazy_load(int lib) {
    if (lib < 0 || lib >= KIOSK_LAZY_COUNT) return "no such library";
    if (__atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE) != NULL) return NULL;
    const char *result = NULL;
    pthread_mutex_lock(&lock);
    if (handles[lib] == NULL) {
        void *slots[tables[lib]->count];
        void *h = open_library(lib, sonames[lib], slots, errors[lib], sizeof errors[lib]);
        if (h == NULL) {
            result = errors[lib];
        } else {
            const struct kiosk_lazy_table *t = tables[lib];
            for (size_t i = 0; i < t->count; i++) *t->entries[i].slot = slots[i];
            __atomic_store_n(&handles[lib], h, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}


const char *kiosk_lazy_check(int lib, const char *soname) {
    static char error[512];
    if (lib < 0 || lib >= KIOSK_LAZY_COUNT) return "no such library";
    void *slots[tables[lib]->count];
    void *h = open_library(lib, soname, slots, error, sizeof error);
    if (h == NULL) return error;
    dlclose(h);
    return NULL;
}

void kiosk_lazy_need(int lib) {
    if (__atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE) != NULL) return;
    const char *e = kiosk_lazy_load(lib);
    if (e != NULL) {
        fprintf(stderr, "kioskd: %s\n", e);
        abort();
    }
}
