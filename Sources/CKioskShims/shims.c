#include "kiosk_shims.h"
