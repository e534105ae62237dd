#include "kiosk_uinput_shims.h"
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/uinput.h>

int kiosk_uinput_set_evbit(int fd, int type) { return ioctl(fd, UI_SET_EVBIT, type); }
int kiosk_uinput_set_keybit(int fd, int code) { return ioctl(fd, UI_SET_KEYBIT, code); }
int kiosk_uinput_set_absbit(int fd, int code) { return ioctl(fd, UI_SET_ABSBIT, code); }
int kiosk_uinput_set_relbit(int fd, int code) { return ioctl(fd, UI_SET_RELBIT, code); }
int kiosk_uinput_set_propbit(int fd, int prop) { return ioctl(fd, UI_SET_PROPBIT, prop); }

int kiosk_uinput_dev_setup(int fd, const char *name, uint16_t bustype, uint16_t vendor, uint16_t product) {
    struct uinput_setup setup;
    memset(&setup, 0, sizeof setup);
    setup.id.bustype = bustype;
    setup.id.vendor = vendor;
    setup.id.product = product;
    setup.id.version = 1;
    strncpy(setup.name, name, UINPUT_MAX_NAME_SIZE - 1);
    return ioctl(fd, UI_DEV_SETUP, &setup);
}

int kiosk_uinput_abs_setup(int fd, uint16_t code, int32_t minimum, int32_t maximum, int32_t resolution) {
    struct uinput_abs_setup abs;
    memset(&abs, 0, sizeof abs);
    abs.code = code;
    abs.absinfo.minimum = minimum;
    abs.absinfo.maximum = maximum;
    abs.absinfo.resolution = resolution;
    return ioctl(fd, UI_ABS_SETUP, &abs);
}

int kiosk_uinput_dev_create(int fd) { return ioctl(fd, UI_DEV_CREATE); }
int kiosk_uinput_dev_destroy(int fd) { return ioctl(fd, UI_DEV_DESTROY); }

int kiosk_uinput_get_sysname(int fd, char *buf, size_t len) {
    if (len == 0) { errno = EINVAL; return -1; }
    memset(buf, 0, len);
    return ioctl(fd, UI_GET_SYSNAME(len), buf);
}

int kiosk_uinput_emit(int fd, uint16_t type, uint16_t code, int32_t value) {
    struct input_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.code = code;
    ev.value = value;
    for (;;) {
        ssize_t n = write(fd, &ev, sizeof ev);
        if (n == (ssize_t)sizeof ev) return 0;
        if (n < 0 && errno == EINTR) continue;
        if (n >= 0) errno = EIO;
        return -1;
    }
}
