//! `eval --fixture DIR`: the reference tasks' data and the five reference servers over it,
//! made by the fixture script built into the binary (`eval/fixture.sh`, also
//! `scripts/eval-fixture.sh` in the source tree), so `eval` on the reference tasks works on
//! a machine that has only the binary, git, node and uv. The script takes the servers from
//! an interop prefix when one holds them, else fetches them with `npx` and `uvx` at pinned
//! versions; when something is missing it says what.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::EvalError;

/// The fixture script.
const SCRIPT: &str = include_str!("../../eval/fixture.sh");

/// The configured servers the reference tasks call.
pub(crate) const REFERENCE_SERVERS: [&str; 5] =
    ["everything", "filesystem", "git", "memory", "time"];

/// Makes the fixture in `dir` (replacing an earlier one; a directory holding anything else is
/// refused by the script) and returns the path of its server config.
pub(crate) fn make(dir: &Path) -> Result<PathBuf, EvalError> {
    let failed = |reason: String| EvalError::Fixture {
        dir: dir.display().to_string(),
        reason,
    };
    // The script's own lines (what it uses, what it fetches, what is missing) go to our
    // stderr as they come; its stdout is the config's path.
    let out = Command::new("bash")
        .arg("-c")
        .arg(SCRIPT)
        .arg("eval-fixture")
        .arg(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| failed(format!("cannot run bash: {e}")))?;
    if !out.status.success() {
        return Err(failed(
            "the fixture script stopped (its message is above)".into(),
        ));
    }
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if path.is_empty() {
        return Err(failed("the fixture script wrote no config".into()));
    }
    Ok(PathBuf::from(path))
}
