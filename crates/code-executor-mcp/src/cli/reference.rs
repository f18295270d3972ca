//! `code-executor-mcp __reference [--check] [ROOT]` (hidden): the reference documents that are
//! generated from the code, written under `ROOT/docs` (or compared with what is there).
//!
//! - `docs/cli.md` from the clap command tree ([`cli_doc`]);
//! - `docs/settings.md` from the settings table, whose keys and defaults tests hold to the
//!   settings types ([`settings_doc`]);
//! - `docs/test-files.md` from the `//!` docs of every integration test file ([`test_doc`]).
//!
//! A test of the `cli` suite runs `--check` on the checkout, so a change to a command, a
//! setting or a test file's description that is not regenerated fails it.

mod cli_doc;
mod settings_doc;
mod settings_table;
mod shared;
mod test_doc;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use shared::{REGENERATE, ReferenceError};
use tools::console::{say, tell};

#[derive(Debug, Clone, clap::Args)]
pub(super) struct ReferenceArgs {
    /// Compare with the files under ROOT/docs instead of writing them; exit 1 naming each
    /// one that differs.
    #[arg(long)]
    check: bool,
    /// The checkout's root (the test files are read from ROOT/crates/*/tests).
    #[arg(default_value = ".")]
    root: PathBuf,
}

/// The generated documents: (path under the root, text).
pub(super) fn render(
    command: &clap::Command,
    root: &Path,
) -> Result<Vec<(&'static str, String)>, ReferenceError> {
    Ok(vec![
        ("docs/cli.md", cli_doc::render(command)),
        ("docs/settings.md", settings_doc::render()),
        ("docs/test-files.md", test_doc::render(root)?),
    ])
}

/// Writes the documents, or with `--check` compares them; the exit code says whether they
/// were current.
pub(super) fn run(
    args: &ReferenceArgs,
    command: &clap::Command,
) -> Result<ExitCode, ReferenceError> {
    let mut stale = Vec::new();
    for (name, text) in render(command, &args.root)? {
        let path = args.root.join(name);
        let current = match std::fs::read_to_string(&path) {
            Ok(t) => Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(ReferenceError::Read { path, error }),
        };
        if current.as_deref() == Some(text.as_str()) {
            continue;
        }
        if args.check {
            stale.push(name);
        } else {
            std::fs::write(&path, &text).map_err(|error| ReferenceError::Write {
                path: path.clone(),
                error,
            })?;
            say(&format!("wrote {name}"));
        }
    }
    if stale.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    tell(&format!(
        "error: generated from the code, but stale: {}\nhint: regenerate them with `{REGENERATE}` at the checkout's root, and commit them",
        stale.join(", ")
    ));
    Ok(ExitCode::FAILURE)
}
