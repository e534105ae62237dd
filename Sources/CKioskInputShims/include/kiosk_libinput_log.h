#ifndef KIOSK_LIBINPUT_LOG_H
#define KIOSK_LIBINPUT_LOG_H
/* libinput's log handler takes a va_list. Swift cannot take that closure on every target
   (SILGen crashes on a closure with a va_list parameter when compiling for aarch64), so the
   message is formatted here and Swift receives a finished string. */
#include <libinput.h>

/* Called with the context's user data, libinput's priority and the formatted message
   (trailing newlines removed, at most 1023 bytes). */
typedef void (*kiosk_libinput_log_sink)(void *user, enum libinput_log_priority priority, const char *message);

/* Installs the formatting handler on `li`; every context shares the one sink. */
void kiosk_libinput_set_log_sink(struct libinput *li, kiosk_libinput_log_sink sink);

#endif
