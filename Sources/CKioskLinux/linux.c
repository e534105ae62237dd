/* Headers only (kiosk_linux.h); a C target needs a source file. */
#include "kiosk_linux.h"
