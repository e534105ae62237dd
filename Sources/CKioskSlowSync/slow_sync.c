// A slow disk for kioskd-bench: loaded into a kioskd with LD_PRELOAD, it makes every fsync,
// fdatasync and syncfs of the process wait KIOSK_BENCH_FSYNC_MS milliseconds before the real call
// (an SD card that stalls, a disk busy with other writes); "LOW-HIGH" (e.g. "50-300") draws each
// wait uniformly from that range, as a card whose flushes vary. The benchmark's `slow-work` row runs
// kioskd under it; nothing in kioskd knows about it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void kiosk_slow_sync_wait(void) {
    const char *s = getenv("KIOSK_BENCH_FSYNC_MS");
    if (!s) return;
    char *end = NULL;
    long ms = strtol(s, &end, 10);
    if (end && *end == '-') {
        long high = atol(end + 1);
        if (high > ms) ms += (long)(drand48() * (double)(high - ms + 1));
    }
    if (ms <= 0) return;
    int saved = errno;
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
    errno = saved;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    kiosk_slow_sync_wait();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    kiosk_slow_sync_wait();
    return real(fd);
}

int syncfs(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
    kiosk_slow_sync_wait();
    return real(fd);
}
