// systemd's notification protocol, see kiosk_notify.h.
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kiosk_notify.h"

int kiosk_notify_fds_to(const char *address, const char *state, const int *fds, int count) {
    if (address == NULL || address[0] == '\0') return 0;
    if (state == NULL || count < 0 || count > 16) return -EINVAL;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t n = strlen(address);
    if (address[0] != '/' && address[0] != '@') return -EAFNOSUPPORT;
    if (n > sizeof sa.sun_path) return -EINVAL;
    memcpy(sa.sun_path, address, n);
    if (address[0] == '@') sa.sun_path[0] = '\0';  // the abstract namespace
    // A path is NUL-terminated in the address when there is room; an abstract name is not.
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (address[0] == '/' && n < sizeof sa.sun_path ? 1 : 0));
    struct iovec iov = { .iov_base = (void *)state, .iov_len = strlen(state) };
    union { struct cmsghdr header; char bytes[CMSG_SPACE(sizeof(int) * 16)]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_name = &sa;
    msg.msg_namelen = len;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (count > 0) {  // the descriptors ride along (SCM_RIGHTS), as sd_pid_notify_with_fds sends them
        msg.msg_control = control.bytes;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)count);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)count);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)count);
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    ssize_t sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    int e = errno;
    close(fd);
    return sent < 0 ? -e : 1;
}

int kiosk_notify_to(const char *address, const char *state) {
    return kiosk_notify_fds_to(address, state, NULL, 0);
}

int kiosk_notify(const char *state) {
    return kiosk_notify_to(getenv("NOTIFY_SOCKET"), state);
}

// A decimal number without sign, spaces or overflow.
static int parse_unsigned(const char *text, unsigned long long *value) {
    if (text[0] < '0' || text[0] > '9') return -EINVAL;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0') return -EINVAL;
    *value = v;
    return 0;
}

int kiosk_watchdog_parse(const char *usec_text, const char *pid_text, pid_t self, uint64_t *usec) {
    if (usec_text == NULL) return 0;
    unsigned long long u = 0;
    if (parse_unsigned(usec_text, &u) < 0 || u == 0) return -EINVAL;
    if (pid_text != NULL) {
        unsigned long long pid = 0;
        if (parse_unsigned(pid_text, &pid) < 0 || pid == 0) return -EINVAL;
        if (pid != (unsigned long long)self) return 0;  // meant for another process
    }
    *usec = (uint64_t)u;
    return 1;
}

int kiosk_watchdog_enabled(uint64_t *usec) {
    return kiosk_watchdog_parse(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid(), usec);
}
