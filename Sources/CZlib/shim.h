// zlib: crc32 over the state journal's records.
#include <zlib.h>
