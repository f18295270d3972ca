//! Why the store did not do what was asked: typed, each saying what to do.

/// Why the store did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the store is unavailable ({backend} at {location}): {reason}; nothing was written, \
         and what was written before is kept there (check that it is reachable and writable, \
         or start with --store none to keep state in memory only)"
    )]
    Unavailable {
        backend: &'static str,
        location: String,
        reason: String,
    },
    #[error(
        "the store refused {size} bytes: this client's records would take {total} bytes, past \
         the limit of {max} bytes per client (store.maxBytesPerClient); delete stored values \
         or let finished results expire, or raise the limit"
    )]
    Full { size: u64, total: u64, max: u64 },
    #[error("invalid record {what}: {why}")]
    InvalidKey { what: &'static str, why: String },
    #[error(
        "the store's schema is version {found}, newer than this binary knows (version \
         {known}): a newer code-executor-mcp wrote it; upgrade this one, or point --store at \
         another store"
    )]
    SchemaTooNew { found: i64, known: i64 },
    #[error(
        "the store file {path} is not a usable SQLite database ({reason}); it was left as it \
         is: move it away, or point --store at another file"
    )]
    Corrupt { path: String, reason: String },
    #[error(
        "bad store {0:?}: expected none, memory, sqlite:PATH, or a postgres://... or \
         postgresql://... URL"
    )]
    BadSpec(String),
}
