#ifndef KIOSK_SHIMS_H
#define KIOSK_SHIMS_H
/* Linux headers Glibc's Swift overlay does not bring in, and small helpers for kernel
   interfaces whose request numbers are C macros Swift cannot import. */
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/ioctl.h>
#include <linux/vt.h>
#include <linux/kd.h>

#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif

#include "kiosk_drm_shims.h"
#include "kiosk_concurrency_hook.h"
#include "kiosk_uinput_shims.h"
#include "kiosk_fill.h"
#include "kiosk_lazy.h"

#endif
