# Sourced by setup.sh and bench/setup.sh: the flags of a release build of
# the program, one definition for the installed binary and the measured one.
#
#   release_flags_for SCRATCH    sets the array release_flags
#
# Every verb is a process of its own (init, mount, unmount: three starts in
# a test's container), so what the loader does before main is paid three
# times. Measured on a 2-core machine with `perf stat -r 300 appsandboxfs
# --version`: 4.1 ms with the first two alone, 2.9-3.1 ms with all of them.
#   --static-swift-stdlib    the Swift runtime and Foundation inside the
#                            program: no Swift installation needed to run it,
#                            and none of their symbols resolved at each start.
#   --disable-local-rpath    no $ORIGIN run path: the loader would look for
#                            libfuse3 in a dozen folders beside the program.
#   C++ and libgcc static    the static Swift runtime still needs libstdc++,
#                            and loading libstdc++.so costs 0.33 ms a start
#                            (about 1,700 symbol bindings of its own; a C
#                            program that links it starts in 1.09 ms instead
#                            of 0.68). swiftc names -lstdc++ itself, so a
#                            folder holding only libstdc++.a, searched before
#                            the compiler's own, makes that name the archive;
#                            -static-libgcc is clang's own switch.
#   lld, packed relocations  about 80,000 relative relocations (1.9 MB of
#                            table read at each start) become 15 KB
#                            (-z pack-relative-relocs: DT_RELR, glibc 2.36 and
#                            later). ld.gold, swiftc's default, cannot write
#                            them; ld.lld comes with the Swift toolchain.
#   metadata accessors     code that needs the metadata of a concrete
#                            generic type (a Dictionary<InodeKey, Node>, an
#                            argument parser's Set of names) gets it from
#                            an accessor that names the conformances it needs
#                            (-disable-concrete-type-metadata-mangled-name-
#                            accessors) instead of demangling the type's name
#                            at its first use, where the runtime finds each
#                            conformance by scanning all 6,248 conformance
#                            records of the program. First uses are most of
#                            what a verb and a fresh driver do: a command-line
#                            container's life 14.3-15.1 ms instead of
#                            16.0-16.2 ms. It applies to the code built here
#                            (ours and the packages'), not to the prebuilt
#                            Swift runtime and Foundation.
# libfuse3 stays a shared library (LGPL; 0.06 ms a start).
# Each step falls back to the default, with a note, where the tool or the
# archive is missing: the program then starts slower and works the same.
release_flags_for() {
    local scratch
    scratch=$(realpath -m "$1")
    release_flags=(-c release --static-swift-stdlib --disable-local-rpath -Xswiftc -Xclang-linker -Xswiftc -static-libgcc)
    local toolchain
    toolchain=$(dirname "$(readlink -f "$(command -v swift)")")
    local glibc
    glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
    if [[ -x $toolchain/ld.lld ]] && printf '2.36\n%s\n' "$glibc" | sort -V -C; then
        release_flags+=(-Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
    else
        echo "release build: no ld.lld beside swift, or glibc ${glibc:-?} before 2.36: the default linker, no packed relocations" >&2
    fi
    local probe
    probe=$(mktemp -d)
    : >"$probe/probe.swift"
    if "$toolchain/swiftc" -typecheck -Xfrontend -disable-concrete-type-metadata-mangled-name-accessors \
        "$probe/probe.swift" 2>/dev/null; then
        release_flags+=(-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors)
    else
        echo "release build: this swiftc lacks -disable-concrete-type-metadata-mangled-name-accessors: left out" >&2
    fi
    rm -rf "$probe"
    local archive
    archive=$("$toolchain/clang" -print-file-name=libstdc++.a 2>/dev/null || true)
    if [[ $archive == /* && -f $archive ]]; then
        mkdir -p "$scratch/static-cxx"
        ln -sfn "$archive" "$scratch/static-cxx/libstdc++.a"
        release_flags+=(-Xlinker "-L$scratch/static-cxx")
    else
        echo "release build: no libstdc++.a (g++'s libstdc++-dev): linking libstdc++ as a shared library" >&2
    fi
}
