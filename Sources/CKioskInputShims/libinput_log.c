#include "kiosk_libinput_log.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static kiosk_libinput_log_sink current_sink;

static void format_message(char *out, size_t size, const char *format, va_list args) {
    if (size == 0) return;
    int n = vsnprintf(out, size, format, args);
    if (n < 0) { out[0] = '\0'; return; }
    size_t len = strnlen(out, size);
    while (len > 0 && out[len - 1] == '\n') out[--len] = '\0';
}

static void handler(struct libinput *li, enum libinput_log_priority priority, const char *format, va_list args) {
    kiosk_libinput_log_sink sink = current_sink;
    if (!li || !format || !sink) return;
    void *user = libinput_get_user_data(li);
    if (!user) return;
    char message[1024];
    format_message(message, sizeof message, format, args);
    sink(user, priority, message);
}

void kiosk_libinput_set_log_sink(struct libinput *li, kiosk_libinput_log_sink sink) {
    current_sink = sink;
    libinput_log_set_handler(li, handler);
}
