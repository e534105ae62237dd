#ifndef KIOSK_UINPUT_SHIMS_H
#define KIOSK_UINPUT_SHIMS_H
/* uinput helpers for test devices (owned by the input code): the UI_* request numbers are
   function-like C macros (_IOW/_IOC) that Swift cannot import, so each ioctl is a small C
   function. Event type and code values come from <linux/input-event-codes.h> (macros only). */
#include <stddef.h>
#include <stdint.h>
#include <linux/input-event-codes.h>

/* ioctl(fd, UI_SET_EVBIT / UI_SET_KEYBIT / UI_SET_ABSBIT / UI_SET_RELBIT / UI_SET_PROPBIT, bit). */
int kiosk_uinput_set_evbit(int fd, int type);
int kiosk_uinput_set_keybit(int fd, int code);
int kiosk_uinput_set_absbit(int fd, int code);
int kiosk_uinput_set_relbit(int fd, int code);
int kiosk_uinput_set_propbit(int fd, int prop);
/* ioctl(fd, UI_DEV_SETUP, &uinput_setup{ id = { bustype, vendor, product, 1 }, name }). */
int kiosk_uinput_dev_setup(int fd, const char *name, uint16_t bustype, uint16_t vendor, uint16_t product);
/* ioctl(fd, UI_ABS_SETUP, &uinput_abs_setup{ code, { 0, min, max, 0, 0, resolution } }). */
int kiosk_uinput_abs_setup(int fd, uint16_t code, int32_t minimum, int32_t maximum, int32_t resolution);
/* ioctl(fd, UI_DEV_CREATE) and ioctl(fd, UI_DEV_DESTROY). */
int kiosk_uinput_dev_create(int fd);
int kiosk_uinput_dev_destroy(int fd);
/* ioctl(fd, UI_GET_SYSNAME(len), buf): the created device's sysfs name, e.g. "input7". */
int kiosk_uinput_get_sysname(int fd, char *buf, size_t len);
/* write() of one struct input_event (time is set by the kernel); 0 on success, -1 with errno. */
int kiosk_uinput_emit(int fd, uint16_t type, uint16_t code, int32_t value);

#endif
