#ifndef KIOSK_DRM_SHIMS_H
#define KIOSK_DRM_SHIMS_H
/* DRM helpers (owned by the display code). */
#endif
