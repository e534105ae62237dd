#ifndef KIOSK_NOTIFY_H
#define KIOSK_NOTIFY_H
// systemd's notification protocol (sd_notify(3), sd_watchdog_enabled(3)) without libsystemd:
// loading libsystemd and the libraries it needs (libcap, libgcrypt, liblzma, libzstd, liblz4)
// cost ~1.4 ms at every start for one datagram (BENCHMARKS.md, "Start-up, the next cuts").
#include <stdint.h>
#include <sys/types.h>

/// Sends `state` ("READY=1", "STATUS=…") as one datagram to the Unix socket named by
/// $NOTIFY_SOCKET (a path, or "@name" in the abstract namespace). 0 when the variable is unset,
/// 1 when sent, a negative errno otherwise (-EAFNOSUPPORT for other kinds of address).
int kiosk_notify(const char *state);

/// The same to `address` (NULL: nothing sent, 0).
int kiosk_notify_to(const char *address, const char *state);

/// The same with `count` (at most 16) file descriptors passed along (SCM_RIGHTS), as
/// sd_pid_notify_with_fds sends them: "FDSTORE=1" hands them to the service manager's store.
int kiosk_notify_fds_to(const char *address, const char *state, const int *fds, int count);

/// Whether the service manager expects watchdog pets: $WATCHDOG_USEC (and $WATCHDOG_PID, when
/// set, is this process). > 0 with `*usec` set when it does, 0 when not, a negative errno when
/// a variable is malformed.
int kiosk_watchdog_enabled(uint64_t *usec);

/// The same from the variables' values (NULL when unset) for process `self`.
int kiosk_watchdog_parse(const char *usec_text, const char *pid_text, pid_t self, uint64_t *usec);

#endif
