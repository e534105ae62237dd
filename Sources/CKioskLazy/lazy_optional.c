// Stubs for the functions of the optional libraries kioskd opens when a configuration first
// needs them: libmosquitto, libcrypto, libqrencode, libasound (see kiosk_lazy.h, lazy_libs.c).
#include <alsa/asoundlib.h>
#include <mosquitto.h>
#include <openssl/evp.h>
#include <qrencode.h>

#include "lazy_internal.h"

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

#define ENTRY(name) { #name, (void **)&p_##name },
static const struct kiosk_lazy_entry mosquitto_entries[] = {
    ENTRY(mosquitto_connack_string)
    ENTRY(mosquitto_connect_async)
    ENTRY(mosquitto_connect_bind_v5)
    ENTRY(mosquitto_connect_callback_set)
    ENTRY(mosquitto_destroy)
    ENTRY(mosquitto_disconnect)
    ENTRY(mosquitto_disconnect_callback_set)
    ENTRY(mosquitto_int_option)
    ENTRY(mosquitto_lib_init)
    ENTRY(mosquitto_log_callback_set)
    ENTRY(mosquitto_loop_misc)
    ENTRY(mosquitto_loop_read)
    ENTRY(mosquitto_loop_write)
    ENTRY(mosquitto_message_callback_set)
    ENTRY(mosquitto_new)
    ENTRY(mosquitto_publish)
    ENTRY(mosquitto_property_add_int32)
    ENTRY(mosquitto_property_free_all)
    ENTRY(mosquitto_publish_callback_set)
    ENTRY(mosquitto_reason_string)
    ENTRY(mosquitto_socket)
    ENTRY(mosquitto_strerror)
    ENTRY(mosquitto_subscribe)
    ENTRY(mosquitto_tls_set)
    ENTRY(mosquitto_topic_matches_sub)
    ENTRY(mosquitto_user_data_set)
    ENTRY(mosquitto_username_pw_set)
    ENTRY(mosquitto_want_write)
    ENTRY(mosquitto_will_set)
};
const struct kiosk_lazy_table kiosk_lazy_mosquitto = { mosquitto_entries, sizeof mosquitto_entries / sizeof mosquitto_entries[0] };
static const struct kiosk_lazy_entry crypto_entries[] = {
    ENTRY(EVP_Digest)
    ENTRY(EVP_sha256)
};
const struct kiosk_lazy_table kiosk_lazy_crypto = { crypto_entries, sizeof crypto_entries / sizeof crypto_entries[0] };
static const struct kiosk_lazy_entry qrencode_entries[] = {
    ENTRY(QRcode_encodeString)
    ENTRY(QRcode_free)
};
const struct kiosk_lazy_table kiosk_lazy_qrencode = { qrencode_entries, sizeof qrencode_entries / sizeof qrencode_entries[0] };
static const struct kiosk_lazy_entry asound_entries[] = {
    ENTRY(snd_pcm_avail)
    ENTRY(snd_pcm_close)
    ENTRY(snd_pcm_delay)
    ENTRY(snd_pcm_drain)
    ENTRY(snd_pcm_drop)
    ENTRY(snd_pcm_get_params)
    ENTRY(snd_pcm_open)
    ENTRY(snd_pcm_prepare)
    ENTRY(snd_pcm_readi)
    ENTRY(snd_pcm_recover)
    ENTRY(snd_pcm_set_params)
    ENTRY(snd_pcm_start)
    ENTRY(snd_pcm_writei)
    ENTRY(snd_strerror)
};
const struct kiosk_lazy_table kiosk_lazy_asound = { asound_entries, sizeof asound_entries / sizeof asound_entries[0] };

#define M KIOSK_LIB_MOSQUITTO
const char *mosquitto_connack_string(int code) { kiosk_lazy_need(M); return p_mosquitto_connack_string(code); }
int mosquitto_connect_async(struct mosquitto *m, const char *host, int port, int keepalive) { kiosk_lazy_need(M); return p_mosquitto_connect_async(m, host, port, keepalive); }
int mosquitto_connect_bind_v5(struct mosquitto *m, const char *host, int port, int keepalive, const char *bind_address, const mosquitto_property *properties) {
    kiosk_lazy_need(M); return p_mosquitto_connect_bind_v5(m, host, port, keepalive, bind_address, properties);
}
void mosquitto_connect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { kiosk_lazy_need(M); p_mosquitto_connect_callback_set(m, cb); }
void mosquitto_destroy(struct mosquitto *m) { kiosk_lazy_need(M); p_mosquitto_destroy(m); }
int mosquitto_disconnect(struct mosquitto *m) { kiosk_lazy_need(M); return p_mosquitto_disconnect(m); }
void mosquitto_disconnect_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { kiosk_lazy_need(M); p_mosquitto_disconnect_callback_set(m, cb); }
int mosquitto_int_option(struct mosquitto *m, enum mosq_opt_t option, int value) { kiosk_lazy_need(M); return p_mosquitto_int_option(m, option, value); }
int mosquitto_lib_init(void) { kiosk_lazy_need(M); return p_mosquitto_lib_init(); }
void mosquitto_log_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int, const char *)) { kiosk_lazy_need(M); p_mosquitto_log_callback_set(m, cb); }
int mosquitto_loop_misc(struct mosquitto *m) { kiosk_lazy_need(M); return p_mosquitto_loop_misc(m); }
int mosquitto_loop_read(struct mosquitto *m, int max_packets) { kiosk_lazy_need(M); return p_mosquitto_loop_read(m, max_packets); }
int mosquitto_loop_write(struct mosquitto *m, int max_packets) { kiosk_lazy_need(M); return p_mosquitto_loop_write(m, max_packets); }
void mosquitto_message_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, const struct mosquitto_message *)) { kiosk_lazy_need(M); p_mosquitto_message_callback_set(m, cb); }
struct mosquitto *mosquitto_new(const char *id, bool clean_session, void *obj) { kiosk_lazy_need(M); return p_mosquitto_new(id, clean_session, obj); }
int mosquitto_publish(struct mosquitto *m, int *mid, const char *topic, int len, const void *payload, int qos, bool retain) { kiosk_lazy_need(M); return p_mosquitto_publish(m, mid, topic, len, payload, qos, retain); }
int mosquitto_property_add_int32(mosquitto_property **proplist, int identifier, uint32_t value) { kiosk_lazy_need(M); return p_mosquitto_property_add_int32(proplist, identifier, value); }
void mosquitto_property_free_all(mosquitto_property **properties) { kiosk_lazy_need(M); p_mosquitto_property_free_all(properties); }
void mosquitto_publish_callback_set(struct mosquitto *m, void (*cb)(struct mosquitto *, void *, int)) { kiosk_lazy_need(M); p_mosquitto_publish_callback_set(m, cb); }
const char *mosquitto_reason_string(int reason_code) { kiosk_lazy_need(M); return p_mosquitto_reason_string(reason_code); }
int mosquitto_socket(struct mosquitto *m) { kiosk_lazy_need(M); return p_mosquitto_socket(m); }
const char *mosquitto_strerror(int e) { kiosk_lazy_need(M); return p_mosquitto_strerror(e); }
int mosquitto_subscribe(struct mosquitto *m, int *mid, const char *sub, int qos) { kiosk_lazy_need(M); return p_mosquitto_subscribe(m, mid, sub, qos); }
int mosquitto_tls_set(struct mosquitto *m, const char *cafile, const char *capath, const char *certfile, const char *keyfile,
                      int (*pw)(char *buf, int size, int rwflag, void *userdata)) { kiosk_lazy_need(M); return p_mosquitto_tls_set(m, cafile, capath, certfile, keyfile, pw); }
int mosquitto_topic_matches_sub(const char *sub, const char *topic, bool *result) { kiosk_lazy_need(M); return p_mosquitto_topic_matches_sub(sub, topic, result); }
void mosquitto_user_data_set(struct mosquitto *m, void *obj) { kiosk_lazy_need(M); p_mosquitto_user_data_set(m, obj); }
int mosquitto_username_pw_set(struct mosquitto *m, const char *user, const char *password) { kiosk_lazy_need(M); return p_mosquitto_username_pw_set(m, user, password); }
bool mosquitto_want_write(struct mosquitto *m) { kiosk_lazy_need(M); return p_mosquitto_want_write(m); }
int mosquitto_will_set(struct mosquitto *m, const char *topic, int len, const void *payload, int qos, bool retain) { kiosk_lazy_need(M); return p_mosquitto_will_set(m, topic, len, payload, qos, retain); }
#undef M

int EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size, const EVP_MD *type, ENGINE *impl) {
    kiosk_lazy_need(KIOSK_LIB_CRYPTO); return p_EVP_Digest(data, count, md, size, type, impl);
}
const EVP_MD *EVP_sha256(void) { kiosk_lazy_need(KIOSK_LIB_CRYPTO); return p_EVP_sha256(); }

QRcode *QRcode_encodeString(const char *string, int version, QRecLevel level, QRencodeMode hint, int casesensitive) {
    kiosk_lazy_need(KIOSK_LIB_QRENCODE); return p_QRcode_encodeString(string, version, level, hint, casesensitive);
}
void QRcode_free(QRcode *qrcode) { kiosk_lazy_need(KIOSK_LIB_QRENCODE); p_QRcode_free(qrcode); }

#define A KIOSK_LIB_ASOUND
snd_pcm_sframes_t snd_pcm_avail(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_avail(pcm); }
int snd_pcm_close(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_close(pcm); }
int snd_pcm_delay(snd_pcm_t *pcm, snd_pcm_sframes_t *delayp) { kiosk_lazy_need(A); return p_snd_pcm_delay(pcm, delayp); }
int snd_pcm_drain(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_drain(pcm); }
int snd_pcm_drop(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_drop(pcm); }
int snd_pcm_get_params(snd_pcm_t *pcm, snd_pcm_uframes_t *buffer_size, snd_pcm_uframes_t *period_size) {
    kiosk_lazy_need(A); return p_snd_pcm_get_params(pcm, buffer_size, period_size);
}
int snd_pcm_open(snd_pcm_t **pcm, const char *name, snd_pcm_stream_t stream, int mode) { kiosk_lazy_need(A); return p_snd_pcm_open(pcm, name, stream, mode); }
int snd_pcm_prepare(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_prepare(pcm); }
snd_pcm_sframes_t snd_pcm_readi(snd_pcm_t *pcm, void *buffer, snd_pcm_uframes_t size) { kiosk_lazy_need(A); return p_snd_pcm_readi(pcm, buffer, size); }
int snd_pcm_recover(snd_pcm_t *pcm, int err, int silent) { kiosk_lazy_need(A); return p_snd_pcm_recover(pcm, err, silent); }
int snd_pcm_set_params(snd_pcm_t *pcm, snd_pcm_format_t format, snd_pcm_access_t access, unsigned int channels, unsigned int rate,
                       int soft_resample, unsigned int latency) {
    kiosk_lazy_need(A); return p_snd_pcm_set_params(pcm, format, access, channels, rate, soft_resample, latency);
}
int snd_pcm_start(snd_pcm_t *pcm) { kiosk_lazy_need(A); return p_snd_pcm_start(pcm); }
snd_pcm_sframes_t snd_pcm_writei(snd_pcm_t *pcm, const void *buffer, snd_pcm_uframes_t size) { kiosk_lazy_need(A); return p_snd_pcm_writei(pcm, buffer, size); }
const char *snd_strerror(int errnum) { kiosk_lazy_need(A); return p_snd_strerror(errnum); }
#undef A
