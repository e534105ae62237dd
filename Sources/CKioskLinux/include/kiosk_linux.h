#ifndef KIOSK_LINUX_H
#define KIOSK_LINUX_H
/* Linux headers Glibc's Swift overlay does not bring in: the event loop's epoll, timerfd and
   eventfd, signalfd, Unix sockets (and passing descriptors over them), ioctl, and the virtual terminal's VT_* and KD* requests. */
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

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

/* Receives one datagram from `socket` into `buffer` (NUL-terminated, at most `size` - 1 bytes)
   and up to `max` file descriptors passed with it (SCM_RIGHTS, close-on-exec) into `fds`;
   `*count` is how many came. Returns the message length or -errno. */
static inline int kiosk_receive_with_fds(int socket, char *buffer, size_t size, int *fds, int max, int *count) {
    struct iovec iov = { .iov_base = buffer, .iov_len = size - 1 };
    union { struct cmsghdr header; char bytes[CMSG_SPACE(sizeof(int) * 16)]; } control;
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof(control.bytes);
    *count = 0;
    ssize_t r = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (r < 0) return -errno;
    buffer[r] = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof(int));
            if (*count < max) fds[(*count)++] = fd; else close(fd);
        }
    }
    return (int)r;
}

#ifndef TFD_TIMER_CANCEL_ON_SET
#define TFD_TIMER_CANCEL_ON_SET (1 << 1)
#endif

#endif
