// G2, a device app's view of its containers, made in the confined world's
// init (confine.c's make_world) after the container is in place: the child
// side, so system calls and byte copies only.
#define _GNU_SOURCE
#include "confine_internal.h"

#include <limits.h>

/// One folder of the app's view (G2): the clone of `relative` (beneath the
/// mount's root `root`, no link, no other mount on the way), read-only when
/// asked.
static int clone_view_folder(int root, const char *relative, int read_only, int report_fd) {
    struct open_how beneath = {O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS};
    int folder = (int)syscall(SYS_openat2, root, relative, &beneath, sizeof beneath);
    if (folder < 0) fail(report_fd, 1, "open the app's folder", relative);
    int tree = clone_tree_at(folder, AT_RECURSIVE);
    if (tree < 0) fail(report_fd, 1, "open_tree", relative);
    close(folder);
    if (read_only && set_mount_attributes(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_RDONLY, 0) != 0)
        fail(report_fd, 1, "mount_setattr read-only", relative);
    return tree;
}

/// Makes the folders of `relative` (below `view_root`) in the view's tmpfs
/// and attaches `tree` on the last.
static void attach_in_view(int view, const char *view_root, const char *relative, int tree, int report_fd) {
    char path[PATH_MAX];
    size_t skip = strlen(view_root);
    if (strncmp(relative, view_root, skip) != 0 || relative[skip] != '/') {
        errno = EINVAL;
        fail(report_fd, 1, "a folder outside the app's view", relative);
    }
    append(path, 0, sizeof path, relative + skip + 1);
    for (char *slash = path;; slash++) {
        if (*slash != '/' && *slash != 0) continue;
        char kept = *slash;
        *slash = 0;
        if (mkdirat(view, path, 0555) != 0 && errno != EEXIST) fail(report_fd, 1, "mkdir in the app's view", path);
        *slash = kept;
        if (kept == 0) break;
    }
    struct open_how beneath = {O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS};
    int target = (int)syscall(SYS_openat2, view, path, &beneath, sizeof beneath);
    if (target < 0) fail(report_fd, 1, "open in the app's view", path);
    if (syscall(SYS_move_mount, tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        fail(report_fd, 1, "move_mount", relative);
    close(target);
    close(tree);
}

/// G2: on a device, the app sees only its own containers. An empty tmpfs
/// is mounted over `view_root` (Containers), and clones of the app's own
/// folders are attached inside it; then the tmpfs turns read-only. Every
/// other container, those installed later included, lies under the tmpfs:
/// out of sight, and with no capability left the command cannot unmount it
/// (R3).
void asfs_confine_make_app_view(const struct asfs_confinement *plan, int report_fd) {
    if (!plan->view_root) return;
    enum { most = 64 };
    size_t count = plan->view_read_only_count + plan->view_read_write_count;
    if (count > most) {
        errno = E2BIG;
        fail(report_fd, 1, "too many containers for the app's view", plan->view_root);
    }
    int root = open_container(plan, report_fd);
    int trees[most];
    for (size_t i = 0; i < count; i++) {
        int read_only = i < plan->view_read_only_count;
        const char *relative = read_only ? plan->view_read_only[i] : plan->view_read_write[i - plan->view_read_only_count];
        trees[i] = clone_view_folder(root, relative, read_only, report_fd);
    }
    struct open_how beneath = {O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
                               RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS};
    int base = (int)syscall(SYS_openat2, root, plan->view_root, &beneath, sizeof beneath);
    if (base < 0) fail(report_fd, 1, "open the device's", plan->view_root);
    int context = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
    if (context < 0) fail(report_fd, 1, "fsopen tmpfs for", plan->view_root);
    if (syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, "source", "appsandboxfs-view", 0) != 0
        || syscall(SYS_fsconfig, context, FSCONFIG_SET_STRING, "mode", "0555", 0) != 0
        || syscall(SYS_fsconfig, context, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0)
        fail(report_fd, 1, "fsconfig tmpfs for", plan->view_root);
    int view = (int)syscall(SYS_fsmount, context, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (view < 0) fail(report_fd, 1, "fsmount tmpfs for", plan->view_root);
    close(context);
    if (syscall(SYS_move_mount, view, "", base, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        fail(report_fd, 1, "move_mount an empty folder onto", plan->view_root);
    close(base);
    for (size_t i = 0; i < count; i++) {
        int read_only = i < plan->view_read_only_count;
        const char *relative = read_only ? plan->view_read_only[i] : plan->view_read_write[i - plan->view_read_only_count];
        attach_in_view(view, plan->view_root, relative, trees[i], report_fd);
    }
    if (set_mount_attributes(view, "", AT_EMPTY_PATH, MOUNT_ATTR_RDONLY, 0) != 0)
        fail(report_fd, 1, "mount_setattr read-only", plan->view_root);
    close(view);
    close(root);
}
