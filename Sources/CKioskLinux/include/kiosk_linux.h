#ifndef KIOSK_LINUX_H
#define KIOSK_LINUX_H
/* Linux headers Glibc's Swift overlay does not bring in: the event loop's epoll, timerfd and
   eventfd, signalfd, Unix sockets, ioctl, and the virtual terminal's VT_* and KD* requests. */
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

#endif
