#ifndef KIOSK_CLIBINPUT_SHIM_H
#define KIOSK_CLIBINPUT_SHIM_H
#include <libinput.h>
#endif
