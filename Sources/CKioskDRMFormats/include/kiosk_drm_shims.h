#ifndef KIOSK_DRM_SHIMS_H
#define KIOSK_DRM_SHIMS_H
/* DRM helpers (owned by the display code): values of libdrm macros Swift cannot import. */
#include <stdint.h>

/* DRM_FORMAT_XRGB8888 from <drm_fourcc.h> (a function-like fourcc_code() macro). */
uint32_t kiosk_drm_format_xrgb8888(void);
/* DRM_MODE_OBJECT_CONNECTOR / _CRTC / _PLANE from <drm_mode.h> (unsigned 0xc0c0c0c0-style literals). */
uint32_t kiosk_drm_object_connector(void);
uint32_t kiosk_drm_object_crtc(void);
uint32_t kiosk_drm_object_plane(void);

#endif
