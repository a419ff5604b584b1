// The C half of the Foundation bridge (docs/foundation.md): what Swift
// cannot do for it. Rewriting the slots that hand a program's calls to
// Foundation (each loaded object's GOT, a class's method table), telling a
// path in a container from one outside, and the addresses of the Swift
// hooks (FoundationBridge/Hooks.swift), which are Swift methods with a
// fixed symbol name.
#ifndef CFOUNDATIONBRIDGE_H
#define CFOUNDATIONBRIDGE_H

#include <stddef.h>

/// The hooks, in the order of `Hook` in FoundationBridge/Bridge.swift.
enum {
    ASFS_HOOK_NSURL_SET_RESOURCE_VALUE,
    ASFS_HOOK_NSURL_SET_RESOURCE_VALUES,
    ASFS_HOOK_NSURL_RESOURCE_VALUES,
    ASFS_HOOK_NSURL_GET_RESOURCE_VALUE,
    ASFS_HOOK_FILEMANAGER_SET_ATTRIBUTES,
    ASFS_HOOK_FILEMANAGER_CREATE_FILE,
    ASFS_HOOK_FILEMANAGER_CREATE_DIRECTORY_PATH,
    ASFS_HOOK_FILEMANAGER_CREATE_DIRECTORY_URL,
    ASFS_HOOK_FILEMANAGER_ATTRIBUTES_OF_ITEM,
    ASFS_HOOK_DATA_WRITE,
    ASFS_HOOK_COUNT
};

/// The address of hook `which`.
void *asfs_bridge_hook(int which);

/// Writes `value` into the pointer-sized `slot` that may lie on a page made
/// read-only after relocation (RELRO: a GOT, a class's method table): the
/// page is made writable for the write, and read-only again when it lies in
/// its object's RELRO segment. 0, or -1 with errno.
int asfs_bridge_write_slot(void **slot, void *value);

/// Points every GOT slot of every loaded object that is bound to `symbol`
/// (its JUMP_SLOT and GLOB_DAT relocations) at `replacement`; a slot already
/// holding `replacement` is left alone. The number of slots rewritten, or
/// -1 with errno when a page could not be made writable.
int asfs_bridge_rebind(const char *symbol, void *replacement);

/// 1 when `path` names an entry of a mounted appsandboxfs container (or,
/// when it does not exist, its folder does): a FUSE file system that
/// answers getxattr of NSFileProtectionKey (P2: every entry has a class).
/// 0 otherwise.
int asfs_bridge_in_container(const char *path);

/// The file of the loaded object that holds `address`; NULL when none does.
const char *asfs_bridge_object_file(const void *address);

/// The name of the symbol at `address` exactly (NULL for none): tells a
/// hook of another copy of the bridge in the process.
const char *asfs_bridge_symbol_at(const void *address);

/// Writes `line` and a newline on standard error, in one write.
void asfs_bridge_warn(const char *line);

/// The program's name, as error messages give it.
const char *asfs_bridge_program_name(void);

#endif
