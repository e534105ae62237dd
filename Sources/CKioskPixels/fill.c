/* Header only (kiosk_fill.h); a C target needs a source file. */
#include "kiosk_fill.h"
