#ifndef KIOSK_CQRENCODE_SHIM_H
#define KIOSK_CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
