/// The storage guidelines `typicalapp --break` can break, one at a time, as
/// a buggy app would. Each is either refused by the container (a denial in
/// its log, an error in the app) or allowed and then flagged by
/// `backup-report` (a finding), as the comment says.
enum Guideline: String, CaseIterable {
    /// Saves its settings at the container's root, where nothing may be
    /// created (S1): denied, file-write-create.
    case writeAtRoot = "write-at-root"
    /// Saves a draft into Documents/Inbox, which is read and delete only
    /// (I4): denied, file-write-create.
    case createInInbox = "create-in-inbox"
    /// Edits a received file where it lies in the Inbox instead of moving
    /// it out first (I4): denied, file-write-data.
    case editInInbox = "edit-in-inbox"
    /// Writes downloaded data into its own bundle, which is signed and
    /// read-only (B2): denied (EROFS), file-write-create.
    case writeIntoBundle = "write-into-bundle"
    /// Puts a large re-creatable download in Documents instead of
    /// Library/Caches (K1): allowed, a `large-file` finding.
    case downloadIntoDocuments = "download-into-documents"
    /// Keeps large re-creatable offline data in Application Support without
    /// marking it "do not back up" (K1, X1): allowed, a `large-file` finding.
    case offlineDataBackedUp = "offline-data-backed-up"
    /// Leaves its scratch file in tmp (K1): allowed, a `left-in-tmp` finding.
    case leaveTmpFiles = "leave-tmp-files"
    /// Marks Library/Caches itself "do not back up" instead of a folder of
    /// its own (X5): allowed, a `flag-on-system-folder` finding.
    case flagSystemFolder = "flag-system-folder"
}
