#ifndef KIOSK_SHIMS_H
#define KIOSK_SHIMS_H
/* Transitional: the C helpers of the display, scene and drawing code, which still import this
   module while those files are changed elsewhere. Each part is its own module (CKioskLinux,
   CKioskDRMFormats, CKioskPixels, CKioskLazy); new code imports the one it uses. */
#include "kiosk_linux.h"
#include "kiosk_drm_shims.h"
#include "kiosk_fill.h"
#include "kiosk_lazy.h"

#endif
