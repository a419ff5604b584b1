// Loaded into every program `appsandboxfs run` starts (LD_PRELOAD), before
// the program's own code runs. It depends on nothing but the C library, so
// a program that is not Swift (a shell, sqlite3) only pays for loading it.
// In a program that uses Foundation as a shared library, it loads the
// Foundation bridge (libAppSandboxFoundationBridge.so, beside this library)
// and installs it; the bridge itself says when it cannot (F2). In a Swift
// program that carries Foundation in its own executable
// (-static-stdlib), nothing can reach the calls: it says so (F2).
// Linux only (ELF, O_TMPFILE-era system calls); empty elsewhere.
#ifdef __linux__
#define _GNU_SOURCE
#include "FoundationBridgePreload.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CALLS "URL.setResourceValues and NSURL.setResourceValue(_:forKey:) with isExcludedFromBackup; " \
              "URL.resourceValues(forKeys:) for isExcludedFromBackupKey; " \
              "FileManager.setAttributes, createFile and createDirectory with .protectionKey; " \
              "FileManager.attributesOfItem(atPath:)[.protectionKey]; " \
              "Data.write(to:options:) with a protection option"

// The executable's section named `name`, found through its section headers.
static const char *find_section(const char *image, size_t size, const char *name, size_t *length) {
    const ElfW(Ehdr) *header = (const ElfW(Ehdr) *)image;
    if (size < sizeof *header || memcmp(header->e_ident, ELFMAG, SELFMAG) != 0) return NULL;
    if (header->e_shoff == 0 || header->e_shoff + (size_t)header->e_shnum * sizeof(ElfW(Shdr)) > size) return NULL;
    const ElfW(Shdr) *sections = (const ElfW(Shdr) *)(image + header->e_shoff);
    if (header->e_shstrndx >= header->e_shnum) return NULL;
    const ElfW(Shdr) *namesSection = &sections[header->e_shstrndx];
    if (namesSection->sh_offset + namesSection->sh_size > size) return NULL;
    const char *names = image + namesSection->sh_offset;
    for (int i = 0; i < header->e_shnum; i++) {
        if (sections[i].sh_name >= namesSection->sh_size || strcmp(names + sections[i].sh_name, name) != 0) continue;
        if (sections[i].sh_type == SHT_NOBITS || sections[i].sh_offset + sections[i].sh_size > size) return NULL;
        *length = sections[i].sh_size;
        return image + sections[i].sh_offset;
    }
    return NULL;
}

// Whether the executable is a Swift program with Foundation linked into it:
// Swift's metadata sections, and Foundation's names among its symbols (or,
// stripped, among its type references or constants).
static int static_foundation(void) {
    int descriptor = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return 0;
    struct stat status;
    int answer = 0;
    if (fstat(descriptor, &status) == 0 && status.st_size > 0) {
        size_t size = (size_t)status.st_size;
        const char *image = mmap(NULL, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
        if (image != MAP_FAILED) {
            size_t length = 0;
            if (find_section(image, size, "swift5_protocols", &length) != NULL) {
                static const char name[] = "20FoundationEssentials";
                const char *sectionNames[] = {".strtab", "swift5_typeref", ".rodata"};
                for (int i = 0; i < 3 && !answer; i++) {
                    const char *section = find_section(image, size, sectionNames[i], &length);
                    answer = section != NULL && memmem(section, length, name, sizeof name - 1) != NULL;
                }
            }
            munmap((void *)image, size);
        }
    }
    close(descriptor);
    return answer;
}

__attribute__((constructor)) static void appsandboxfs_preload(void) {
    void *essentials = dlopen("libFoundationEssentials.so", RTLD_LAZY | RTLD_NOLOAD);
    if (essentials == NULL) {
        if (static_foundation()) {
            fprintf(stderr, "appsandboxfs: %s: these Foundation calls stay no-ops in a container "
                            "(Foundation is linked into the program statically): %s\n",
                    program_invocation_short_name, CALLS);
        }
        return;
    }
    dlclose(essentials);
    Dl_info self;
    if (dladdr((void *)appsandboxfs_preload, &self) == 0 || self.dli_fname == NULL) return;
    const char *slash = strrchr(self.dli_fname, '/');
    size_t folder = slash == NULL ? 0 : (size_t)(slash - self.dli_fname + 1);
    static const char bridgeName[] = "libAppSandboxFoundationBridge.so";
    char *path = malloc(folder + sizeof bridgeName);
    if (path == NULL) return;
    memcpy(path, self.dli_fname, folder);
    memcpy(path + folder, bridgeName, sizeof bridgeName);
    void *bridge = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*install)(void) = bridge == NULL ? NULL : (int (*)(void))dlsym(bridge, "appsandboxfs_foundation_bridge_install");
    if (install == NULL) {
        fprintf(stderr, "appsandboxfs: %s: these Foundation calls stay no-ops in a container "
                        "(the Foundation bridge %s cannot be loaded: %s): %s\n",
                program_invocation_short_name, path, dlerror(), CALLS);
    } else {
        install();
    }
    free(path);
}

#endif
