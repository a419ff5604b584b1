// errno values by name, for messages and expectations ("ENOENT"): the one
// table, POSIXHelpers' `errnoName` (fsprobe prints the same names).

import POSIXHelpers

/// The symbolic name of an errno value: `posixError(ENOENT) == "ENOENT"`;
/// "E<number>" for one not in the table.
func posixError(_ code: Int32) -> String {
    errnoName(code)
}
