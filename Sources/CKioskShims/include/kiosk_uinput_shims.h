#ifndef KIOSK_UINPUT_SHIMS_H
#define KIOSK_UINPUT_SHIMS_H
/* uinput helpers for test devices (owned by the input code). */
#endif
