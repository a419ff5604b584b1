// See include/CFoundationBridge.h.
// Linux only (ELF, O_TMPFILE-era system calls); empty elsewhere.
#ifdef __linux__
#define _GNU_SOURCE
#include "CFoundationBridge.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

// The hooks: Swift methods given these names with @_silgen_name
// (FoundationBridge/Hooks.swift). Only their addresses are taken here.
extern char asfs_hook_nsurl_setResourceValue[];
extern char asfs_hook_nsurl_setResourceValues[];
extern char asfs_hook_nsurl_resourceValues[];
extern char asfs_hook_nsurl_getResourceValue[];
extern char asfs_hook_filemanager_setAttributes[];
extern char asfs_hook_filemanager_createFile[];
extern char asfs_hook_filemanager_createDirectoryAtPath[];
extern char asfs_hook_filemanager_createDirectoryAtURL[];
extern char asfs_hook_filemanager_attributesOfItem[];
extern char asfs_hook_data_write[];

void *asfs_bridge_hook(int which) {
    switch (which) {
    case ASFS_HOOK_NSURL_SET_RESOURCE_VALUE: return asfs_hook_nsurl_setResourceValue;
    case ASFS_HOOK_NSURL_SET_RESOURCE_VALUES: return asfs_hook_nsurl_setResourceValues;
    case ASFS_HOOK_NSURL_RESOURCE_VALUES: return asfs_hook_nsurl_resourceValues;
    case ASFS_HOOK_NSURL_GET_RESOURCE_VALUE: return asfs_hook_nsurl_getResourceValue;
    case ASFS_HOOK_FILEMANAGER_SET_ATTRIBUTES: return asfs_hook_filemanager_setAttributes;
    case ASFS_HOOK_FILEMANAGER_CREATE_FILE: return asfs_hook_filemanager_createFile;
    case ASFS_HOOK_FILEMANAGER_CREATE_DIRECTORY_PATH: return asfs_hook_filemanager_createDirectoryAtPath;
    case ASFS_HOOK_FILEMANAGER_CREATE_DIRECTORY_URL: return asfs_hook_filemanager_createDirectoryAtURL;
    case ASFS_HOOK_FILEMANAGER_ATTRIBUTES_OF_ITEM: return asfs_hook_filemanager_attributesOfItem;
    case ASFS_HOOK_DATA_WRITE: return asfs_hook_data_write;
    default: return NULL;
    }
}

struct relro_search {
    uintptr_t address;
    int relro;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct relro_search *search = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + header->p_vaddr;
        if (header->p_type == PT_GNU_RELRO && search->address >= start && search->address < start + header->p_memsz) {
            search->relro = 1;
            return 1;
        }
    }
    return 0;
}

int asfs_bridge_write_slot(void **slot, void *value) {
    // Read-only again afterwards only where ld.so made it so (RELRO); a
    // class's metadata in a writable segment stays writable, as the
    // runtime writes there when it completes metadata.
    struct relro_search search = {(uintptr_t)slot, 0};
    dl_iterate_phdr(find_relro, &search);
    long pageSize = sysconf(_SC_PAGESIZE);
    uintptr_t first = (uintptr_t)slot & ~(uintptr_t)(pageSize - 1);
    uintptr_t end = ((uintptr_t)(slot + 1) + pageSize - 1) & ~(uintptr_t)(pageSize - 1);
    if (mprotect((void *)first, end - first, PROT_READ | PROT_WRITE) != 0) return -1;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (search.relro && mprotect((void *)first, end - first, PROT_READ) != 0) return -1;
    return 0;
}

#if defined(__x86_64__)
#define ASFS_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define ASFS_R_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define ASFS_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define ASFS_R_GLOB_DAT R_AARCH64_GLOB_DAT
#else
#error "the Foundation bridge knows the relocations of x86_64 and aarch64 only"
#endif

struct rebind {
    const char *symbol;
    void *replacement;
    int count;
    int failed;
};

// A dynamic entry's address: already relocated by ld.so in the main
// program and most objects, relative to the load address in the vDSO.
static uintptr_t dynamic_address(const struct dl_phdr_info *info, ElfW(Addr) value) {
    return value < info->dlpi_addr ? info->dlpi_addr + value : value;
}

static int rebind_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct rebind *job = data;
    const ElfW(Dyn) *dynamic = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr);
    }
    if (dynamic == NULL) return 0;
    const ElfW(Sym) *symbols = NULL;
    const char *names = NULL;
    const ElfW(Rela) *tables[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    int pltIsRela = 1;
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)dynamic_address(info, entry->d_un.d_ptr); break;
        case DT_STRTAB: names = (const char *)dynamic_address(info, entry->d_un.d_ptr); break;
        case DT_JMPREL: tables[0] = (const ElfW(Rela) *)dynamic_address(info, entry->d_un.d_ptr); break;
        case DT_PLTRELSZ: sizes[0] = entry->d_un.d_val; break;
        case DT_PLTREL: pltIsRela = entry->d_un.d_val == DT_RELA; break;
        case DT_RELA: tables[1] = (const ElfW(Rela) *)dynamic_address(info, entry->d_un.d_ptr); break;
        case DT_RELASZ: sizes[1] = entry->d_un.d_val; break;
        }
    }
    // x86_64 and aarch64 use RELA only.
    if (symbols == NULL || names == NULL || !pltIsRela) return 0;
    for (int table = 0; table < 2; table++) {
        if (tables[table] == NULL) continue;
        size_t count = sizes[table] / sizeof(ElfW(Rela));
        for (size_t i = 0; i < count; i++) {
            const ElfW(Rela) *relocation = &tables[table][i];
            unsigned long type = ELF64_R_TYPE(relocation->r_info);
            if (type != ASFS_R_JUMP_SLOT && type != ASFS_R_GLOB_DAT) continue;
            unsigned long index = ELF64_R_SYM(relocation->r_info);
            if (index == 0 || strcmp(names + symbols[index].st_name, job->symbol) != 0) continue;
            void **slot = (void **)(info->dlpi_addr + relocation->r_offset);
            if (*slot == job->replacement) continue;
            if (asfs_bridge_write_slot(slot, job->replacement) != 0) {
                job->failed = errno;
                return 1;
            }
            job->count++;
        }
    }
    return 0;
}

int asfs_bridge_rebind(const char *symbol, void *replacement) {
    struct rebind job = {symbol, replacement, 0, 0};
    dl_iterate_phdr(rebind_object, &job);
    if (job.failed != 0) {
        errno = job.failed;
        return -1;
    }
    return job.count;
}

// FUSE_SUPER_MAGIC (linux/magic.h).
#define ASFS_FUSE_MAGIC 0x65735546

static int answers_class(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0 || info.f_type != ASFS_FUSE_MAGIC) return 0;
    return getxattr(path, "NSFileProtectionKey", NULL, 0) > 0;
}

int asfs_bridge_in_container(const char *path) {
    if (path == NULL || path[0] == '\0') return 0;
    struct stat status;
    if (lstat(path, &status) == 0) return answers_class(path);
    if (errno != ENOENT) return 0;
    // A new entry: its folder decides.
    char *copy = strdup(path);
    if (copy == NULL) return 0;
    size_t length = strlen(copy);
    while (length > 1 && copy[length - 1] == '/') copy[--length] = '\0';
    char *slash = strrchr(copy, '/');
    int answer;
    if (slash == NULL) answer = answers_class(".");
    else {
        if (slash == copy) slash[1] = '\0';
        else *slash = '\0';
        answer = answers_class(copy);
    }
    free(copy);
    return answer;
}

const char *asfs_bridge_object_file(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0) return NULL;
    return info.dli_fname;
}

const char *asfs_bridge_symbol_at(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0 || info.dli_saddr != address) return NULL;
    return info.dli_sname;
}

void asfs_bridge_warn(const char *line) {
    size_t length = strlen(line);
    char *text = malloc(length + 1);
    if (text == NULL) return;
    memcpy(text, line, length);
    text[length] = '\n';
    ssize_t ignored = write(STDERR_FILENO, text, length + 1);
    (void)ignored;
    free(text);
}

const char *asfs_bridge_program_name(void) { return program_invocation_short_name; }

#endif
