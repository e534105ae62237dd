#ifndef KIOSK_CALSA_SHIM_H
#define KIOSK_CALSA_SHIM_H
// ALSA's PCM interface (libasound): the horn ([audio]). Headers only: the library is opened
// when [audio] first needs it (CKioskLazy/lazy_libs.c).
#include <alsa/asoundlib.h>
#endif
