#ifndef KIOSK_FILL_H
#define KIOSK_FILL_H
/* Filling 32-bit pixels with libc's wmemset (wchar_t is 32 bits on Linux), which Glibc's
   Swift overlay does not bring in: vector stores as wide as the CPU has. */
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

_Static_assert(sizeof(wchar_t) == sizeof(uint32_t), "wchar_t is 32 bits");

static inline void kiosk_fill32(uint32_t *p, uint32_t value, size_t count) {
    wmemset((wchar_t *)p, (wchar_t)value, count);
}
#endif
