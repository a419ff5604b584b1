// The system call filter of the confined world (confine.c): private to CLinux.
#ifndef APPSANDBOXFS_CONFINE_FILTER_H
#define APPSANDBOXFS_CONFINE_FILTER_H

/// Installs the filter on the calling thread (needs no_new_privs). Returns
/// 0, or -1 with errno set. Allocates nothing: safe in a clone of a
/// multithreaded process.
int asfs_confine_install_filter(void);

#endif
