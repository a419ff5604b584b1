#include "clinux_build.h"

#ifndef APPSANDBOXFS_COMMIT
#define APPSANDBOXFS_COMMIT ""
#endif

const char *asfs_build_commit(void) { return APPSANDBOXFS_COMMIT; }
