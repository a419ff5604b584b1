// The library `appsandboxfs run` and `env` put in LD_PRELOAD
// (docs/foundation.md). It has no symbols of its own to offer: its
// constructor does the work.
#ifndef FOUNDATIONBRIDGEPRELOAD_H
#define FOUNDATIONBRIDGEPRELOAD_H
#endif
