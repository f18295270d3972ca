//! The version line (`--version`): the crate's version and the commit it was built from
//! (build.rs). A leaf.

/// `--version`: the crate's version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("CODE_EXECUTOR_COMMIT"),
    ")"
);
