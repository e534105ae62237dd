#ifndef KIOSK_CCAIRO_SHIM_H
#define KIOSK_CCAIRO_SHIM_H
#include <cairo.h>
#include <pango/pangocairo.h>
#include <fontconfig/fontconfig.h>
#endif
