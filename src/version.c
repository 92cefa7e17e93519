/* Library version. */
#include "mbk/version.h"

const char *mbk_version(void) { return MBK_VERSION_STRING; }
