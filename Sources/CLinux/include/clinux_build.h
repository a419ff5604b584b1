// What the build knows about itself.
#ifndef APPSANDBOXFS_CLINUX_BUILD_H
#define APPSANDBOXFS_CLINUX_BUILD_H

/// `git describe` of the checkout this binary was built from, as
/// mount-scripts/setup.sh passes it (-Xcc -DAPPSANDBOXFS_COMMIT="..."),
/// or "" when the build did not say.
const char *asfs_build_commit(void);

#endif
