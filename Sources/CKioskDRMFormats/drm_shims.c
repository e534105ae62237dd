/* Bodies for kiosk_drm_shims.h: the real libdrm macros, evaluated in C. */
#include "kiosk_drm_shims.h"
#include <libdrm/drm_fourcc.h>
#include <libdrm/drm_mode.h>

uint32_t kiosk_drm_format_xrgb8888(void) { return DRM_FORMAT_XRGB8888; }
uint32_t kiosk_drm_object_connector(void) { return DRM_MODE_OBJECT_CONNECTOR; }
uint32_t kiosk_drm_object_crtc(void) { return DRM_MODE_OBJECT_CRTC; }
uint32_t kiosk_drm_object_plane(void) { return DRM_MODE_OBJECT_PLANE; }
