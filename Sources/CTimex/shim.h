#ifndef KIOSK_CTIMEX_SHIM_H
#define KIOSK_CTIMEX_SHIM_H
/* The kernel clock discipline (adjtimex, STA_UNSYNC, TIME_ERROR) and inotify: headers Glibc's
   Swift overlay does not bring in. Part of the C library: nothing to link. */
#include <sys/timex.h>
#include <sys/inotify.h>
#endif
