#ifndef KIOSK_CSDBUS_SHIM_H
#define KIOSK_CSDBUS_SHIM_H
/* sd-bus and sd-login from libsystemd: the logind session calls (SetBrightness). */
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>
#endif
