// Stubs for the functions of libraries opened when first needed (see kiosk_lazy.h). Each stub
// makes sure its library is open (aborting with the reason if it cannot be: callers load it
// first through kiosk_lazy_load, which reports the error properly) and calls the real function.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <alsa/asoundlib.h>
#include <mosquitto.h>
#include <openssl/evp.h>
#include <qrencode.h>

#include "kiosk_lazy.h"

#define KIOSK_LAZY_COUNT 4

static const char *const sonames[KIOSK_LAZY_COUNT] = {
    "libmosquitto.so.1",
    "libcrypto.so.3",
    "libqrencode.so.4",
    "libasound.so.2",
};
// What each is for, and the Debian package that has it (for the error message).
static const char *const purposes[KIOSK_LAZY_COUNT] = {
    "[mqtt] needs libmosquitto (Debian package libmosquitto1)",
    "[web] needs OpenSSL's libcrypto for its session tokens (Debian package libssl3)",
    "the pairing code's QR symbol needs libqrencode (Debian package libqrencode4)",
    "[audio] needs ALSA's libasound (Debian package libasound2, libasound2t64 from Debian 13)",
};

// One pointer per function, typed from the library's own header.
#define POINTER(name) static __typeof__(&name) p_##name;
POINTER(mosquitto_connack_string)
POINTER(mosquitto_connect_async)
POINTER(mosquitto_connect_bind_v5)
POINTER(mosquitto_connect_callback_set)
POINTER(mosquitto_destroy)
POINTER(mosquitto_disconnect)
POINTER(mosquitto_disconnect_callback_set)
POINTER(mosquitto_int_option)
POINTER(mosquitto_lib_init)
POINTER(mosquitto_log_callback_set)
POINTER(mosquitto_loop_misc)
POINTER(mosquitto_loop_read)
POINTER(mosquitto_loop_write)
POINTER(mosquitto_message_callback_set)
POINTER(mosquitto_new)
POINTER(mosquitto_publish)
POINTER(mosquitto_property_add_int32)
POINTER(mosquitto_property_free_all)
POINTER(mosquitto_publish_callback_set)
POINTER(mosquitto_reason_string)
POINTER(mosquitto_socket)
POINTER(mosquitto_strerror)
POINTER(mosquitto_subscribe)
POINTER(mosquitto_tls_set)
POINTER(mosquitto_topic_matches_sub)
POINTER(mosquitto_user_data_set)
POINTER(mosquitto_username_pw_set)
POINTER(mosquitto_want_write)
POINTER(mosquitto_will_set)
POINTER(EVP_Digest)
POINTER(EVP_sha256)
POINTER(QRcode_encodeString)
POINTER(QRcode_free)
POINTER(snd_pcm_avail)
POINTER(snd_pcm_close)
POINTER(snd_pcm_delay)
POINTER(snd_pcm_drain)
POINTER(snd_pcm_drop)
POINTER(snd_pcm_get_params)
POINTER(snd_pcm_open)
POINTER(snd_pcm_prepare)
POINTER(snd_pcm_readi)
POINTER(snd_pcm_recover)
POINTER(snd_pcm_set_params)
POINTER(snd_pcm_start)
POINTER(snd_pcm_writei)
POINTER(snd_strerror)

struct entry { int lib; const char *name; void **slot; };
#define ENTRY(lib, name) { lib, #name, (void **)&p_##name },
static const struct entry entries[] = {
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_connack_string)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_connect_async)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_connect_bind_v5)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_connect_callback_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_destroy)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_disconnect)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_disconnect_callback_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_int_option)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_lib_init)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_log_callback_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_loop_misc)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_loop_read)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_loop_write)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_message_callback_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_new)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_publish)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_property_add_int32)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_property_free_all)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_publish_callback_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_reason_string)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_socket)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_strerror)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_subscribe)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_tls_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_topic_matches_sub)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_user_data_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_username_pw_set)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_want_write)
    ENTRY(KIOSK_LIB_MOSQUITTO, mosquitto_will_set)
    ENTRY(KIOSK_LIB_CRYPTO, EVP_Digest)
    ENTRY(KIOSK_LIB_CRYPTO, EVP_sha256)
    ENTRY(KIOSK_LIB_QRENCODE, QRcode_encodeString)
    ENTRY(KIOSK_LIB_QRENCODE, QRcode_free)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_avail)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_close)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_delay)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_drain)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_drop)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_get_params)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_open)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_prepare)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_readi)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_recover)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_set_params)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_start)
    ENTRY(KIOSK_LIB_ASOUND, snd_pcm_writei)
    ENTRY(KIOSK_LIB_ASOUND, snd_strerror)
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *handles[KIOSK_LAZY_COUNT];
static char errors[KIOSK_LAZY_COUNT][512];

const char *kiosk_lazy_soname(int lib) {
    return lib >= 0 && lib < KIOSK_LAZY_COUNT ? sonames[lib] : "(unknown library)";
}

// Opens `soname` for `lib` and fills `slots` (one per entry of `lib`, in order); on failure
// writes the reason into `error` and returns NULL.
static void *open_library(int lib, const char *soname, void **slots, char *error, size_t size) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(error, size, "%s: %s", purposes[lib], e ? e : soname);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (entries[i].lib != lib) continue;
        void *f = dlsym(h, entries[i].name);
        if (f == NULL) {
            snprintf(error, size, "%s: %s has no function %s (another version?)", purposes[lib], soname, entries[i].name);
            dlclose(h);
            return NULL;
        }
        slots[k++] = f;
    }
    return h;
}

#define KIOSK_LAZY_MAX_FUNCTIONS 32

const char *kiosk_lazy_load(int lib) {
    if (lib < 0 || lib >= KIOSK_LAZY_COUNT) return "no such library";
    const char *result = NULL;
    pthread_mutex_lock(&lock);
    if (handles[lib] == NULL) {
        void *slots[KIOSK_LAZY_MAX_FUNCTIONS];
        void *h = open_library(lib, sonames[lib], slots, errors[lib], sizeof errors[lib]);
        if (h == NULL) {
            result = errors[lib];
        } else {
            size_t k = 0;
            for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
                if (entries[i].lib == lib) *entries[i].slot = slots[k++];
            }
            __atomic_store_n(&handles[lib], h, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
    return result;
}

const char *kiosk_lazy_check(int lib, const char *soname) {
    static char error[512];
    if (lib < 0 || lib >= KIOSK_LAZY_COUNT) return "no such library";
    void *slots[KIOSK_LAZY_MAX_FUNCTIONS];
    void *h = open_library(lib, soname, slots, error, sizeof error);
    if (h == NULL) return error;
    dlclose(h);
    return NULL;
}

// Called by every stub: the library is open after it, or the process stops with the reason.
static void need(int lib) {
    if (__atomic_load_n(&handles[lib], __ATOMIC_ACQUIRE) != NULL) return;
    const char *e = kiosk_lazy_load(lib);
    if (e != NULL) {
        fprintf(stderr, "kioskd: %s\n", e);
        abort();
    }
}

#define M KIOSK_LIB_MOSQUITTO
const char *mosquitto_connack_string(int code) { need(M); return p_mosquitto_connack_string(code); }
int mosquitto_connect_async(struct mosquitto *m, const char *host, int port, int keepalive) { need(M); return p_mosquitto_connect_async(m, host, port, keepalive); }
int mosquitto_connect_bind_v5(struct mosquitto *m, const char *host, int port, int keepalive, const char *bind_address, const mosquitto_property *properties) {
    need(M); return p_mosquitto_connect_bind_v5(m, host, port, keepalive, bind_address, properties);
}
void mosquitto_connect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { need(M); p_mosquitto_connect_callback_set(m, cb); }
void mosquitto_destroy(struct mosquitto *m) { need(M); p_mosquitto_destroy(m); }
int mosquitto_disconnect(struct mosquitto *m) { need(M); return p_mosquitto_disconnect(m); }
void mosquitto_disconnect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { need(M); p_mosquitto_disconnect_callback_set(m, cb); }
int mosquitto_int_option(struct mosquitto *m, enum mosq_opt_t option, int value) { need(M); return p_mosquitto_int_option(m, option, value); }
int mosquitto_lib_init(void) { need(M); return p_mosquitto_lib_init(); }
void mosquitto_log_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int, const char *)) { need(M); p_mosquitto_log_callback_set(m, cb); }
int mosquitto_loop_misc(struct mosquitto *m) { need(M); return p_mosquitto_loop_misc(m); }
int mosquitto_loop_read(struct mosquitto *m, int max_packets) { need(M); return p_mosquitto_loop_read(m, max_packets); }
int mosquitto_loop_write(struct mosquitto *m, int max_packets) { need(M); return p_mosquitto_loop_write(m, max_packets); }
void mosquitto_message_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, const struct mosquitto_message *)) { need(M); p_mosquitto_message_callback_set(m, cb); }
struct mosquitto *mosquitto_new(const char *id, bool clean_session, void *obj) { need(M); return p_mosquitto_new(id, clean_session, obj); }
int mosquitto_publish(struct mosquitto *m, int *mid, const char *topic, int len, const void *payload, int qos, bool retain) { need(M); return p_mosquitto_publish(m, mid, topic, len, payload, qos, retain); }
int mosquitto_property_add_int32(mosquitto_property **proplist, int identifier, uint32_t value) { need(M); return p_mosquitto_property_add_int32(proplist, identifier, value); }
void mosquitto_property_free_all(mosquitto_property **properties) { need(M); p_mosquitto_property_free_all(properties); }
void mosquitto_publish_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { need(M); p_mosquitto_publish_callback_set(m, cb); }
const char *mosquitto_reason_string(int reason_code) { need(M); return p_mosquitto_reason_string(reason_code); }
int mosquitto_socket(struct mosquitto *m) { need(M); return p_mosquitto_socket(m); }
const char *mosquitto_strerror(int e) { need(M); return p_mosquitto_strerror(e); }
int mosquitto_subscribe(struct mosquitto *m, int *mid, const char *sub, int qos) { need(M); return p_mosquitto_subscribe(m, mid, sub, qos); }
int mosquitto_tls_set(struct mosquitto *m, const char *cafile, const char *capath, const char *certfile, const char *keyfile,
                      int (*pw)(char *buf, int size, int rwflag, void *userdata)) { need(M); return p_mosquitto_tls_set(m, cafile, capath, certfile, keyfile, pw); }
int mosquitto_topic_matches_sub(const char *sub, const char *topic, bool *result) { need(M); return p_mosquitto_topic_matches_sub(sub, topic, result); }
void mosquitto_user_data_set(struct mosquitto *m, void *obj) { need(M); p_mosquitto_user_data_set(m, obj); }
int mosquitto_username_pw_set(struct mosquitto *m, const char *user, const char *password) { need(M); return p_mosquitto_username_pw_set(m, user, password); }
bool mosquitto_want_write(struct mosquitto *m) { need(M); return p_mosquitto_want_write(m); }
int mosquitto_will_set(struct mosquitto *m, const char *topic, int len, const void *payload, int qos, bool retain) { need(M); return p_mosquitto_will_set(m, topic, len, payload, qos, retain); }
#undef M

int EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl) {
    need(KIOSK_LIB_CRYPTO); return p_EVP_Digest(data, count, md, size, type, impl);
}
const EVP_MD *EVP_sha256(void) { need(KIOSK_LIB_CRYPTO); return p_EVP_sha256(); }

QRcode *QRcode_encodeString(const char *string, int version, QRecLevel level, QRencodeMode hint, int casesensitive) {
    need(KIOSK_LIB_QRENCODE); return p_QRcode_encodeString(string, version, level, hint, casesensitive);
}
void QRcode_free(QRcode *qrcode) { need(KIOSK_LIB_QRENCODE); p_QRcode_free(qrcode); }

#define A KIOSK_LIB_ASOUND
snd_pcm_sframes_t snd_pcm_avail(snd_pcm_t *pcm) { need(A); return p_snd_pcm_avail(pcm); }
int snd_pcm_close(snd_pcm_t *pcm) { need(A); return p_snd_pcm_close(pcm); }
int snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp) { need(A); return p_snd_pcm_delay(pcm, delayp); }
int snd_pcm_drain(snd_pcm_t *pcm) { need(A); return p_snd_pcm_drain(pcm); }
int snd_pcm_drop(snd_pcm_t *pcm) { need(A); return p_snd_pcm_drop(pcm); }
int snd_pcm_get_params(snd_pcm_t *pcm, snd_pcm_uframes_t *buffer_size, snd_pcm_uframes_t *period_size) {
    need(A); return p_snd_pcm_get_params(pcm, buffer_size, period_size);
}
int snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode) { need(A); return p_snd_pcm_open(pcm, name, stream, mode); }
int snd_pcm_prepare(snd_pcm_t *pcm) { need(A); return p_snd_pcm_prepare(pcm); }
snd_pcm_sframes_t snd_pcm_readi(snd_pcm_t *pcm, void *buffer, snd_pcm_uframes_t size) { need(A); return p_snd_pcm_readi(pcm, buffer, size); }
int snd_pcm_recover(snd_pcm_t *pcm, int err, int silent) { need(A); return p_snd_pcm_recover(pcm, err, silent); }
int snd_pcm_set_params(snd_pcm_t *pcm, snd_pcm_format_t format, snd_pcm_access_t access, unsigned int channels, unsigned int rate,
                       int soft_resample, unsigned int latency) {
    need(A); return p_snd_pcm_set_params(pcm, format, access, channels, rate, soft_resample, latency);
}
int snd_pcm_start(snd_pcm_t *pcm) { need(A); return p_snd_pcm_start(pcm); }
snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) { need(A); return p_snd_pcm_writei(pcm, buffer, size); }
const char *snd_strerror(int errnum) { need(A); return p_snd_strerror(errnum); }
#undef A
