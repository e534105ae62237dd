#ifndef KIOSK_CDRM_SHIM_H
#define KIOSK_CDRM_SHIM_H
#include <stdint.h>
#include <xf86drm.h>
#include <xf86drmMode.h>
#include <drm_fourcc.h>
#endif
