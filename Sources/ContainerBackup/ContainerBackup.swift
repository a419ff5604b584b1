// ContainerBackup: what iOS would back up from a container, and what it
// would purge (rules K1, K2, K3).
//
// The model, in four steps:
//
// 1. Where an entry lies decides most: `BackupClass.of(zone)` (in
//    SandboxPolicy) says Documents (Inbox included) and Library are backed
//    up, Library/Caches, tmp, the bundle and other root entries are not.
// 2. The "do not back up" flags refine that (X1, X2, X5): `BackupFlags`
//    reads the two extended attributes of an entry from the backing
//    directory, under their backing names (`XattrNames.backingName(for:)`),
//    and says whether they exclude it. A flag on a folder excludes the whole
//    subtree.
// 3. `ContainerWalk` visits every entry of a backing directory once, in a
//    fixed order (names sorted byte by byte, a folder before its contents),
//    relative to descriptors and without following symbolic links, and
//    hands each one over with its zone and, when it is not in a backup,
//    why: the zone, its own flag, or a flagged folder above it.
// 4. On that one walk sit the three jobs:
//    - `BackupReport`: totals by zone and by top entry, the exclusions and
//      the findings against Apple's Data Storage Guidelines (Codable: its
//      JSON is the documented schema).
//    - `TarArchive`: GNU tar, fed the exact list of entries the report
//      counts as backed up (K3), and `ContainerRestore`, which extracts
//      one into a fresh container.
//    - `Purge`: empties Library/Caches and tmp, keeping what is flagged (K2).
//
// Everything here reads the backing directory, never a mount: a mounted
// container is resolved to its backing directory by the command line.
