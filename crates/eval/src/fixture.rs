//! `eval --fixture DIR`: the reference tasks' data and the five reference servers over it,
//! made by the fixture script built into the binary (`eval/fixture.sh`, also
//! `scripts/eval-fixture.sh` in the source tree), so `eval` on the reference tasks works on
//! a machine that has only the binary, git, node and uv. The script takes the servers from
//! an interop prefix when one holds them, else fetches them with `npx` and `uvx` at pinned
//! versions; when something is missing it says what.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::error::EvalError;
use tools::console::Progress;

/// The fixture script.
const SCRIPT: &str = include_str!("../data/fixture.sh");

/// The configured servers the reference tasks call.
pub(crate) const REFERENCE_SERVERS: [&str; 5] =
    ["everything", "filesystem", "git", "memory", "time"];

/// Makes the fixture in `dir` (replacing an earlier one; a directory holding anything else is
/// refused by the script) and returns the path of its server config. What the script says
/// (what it uses, what it fetches) is shown as progress; when it fails, its message is the
/// error's.
pub(crate) fn make(dir: &Path) -> Result<PathBuf, EvalError> {
    let failed = |reason: String| EvalError::Fixture {
        dir: dir.display().to_string(),
        reason,
    };
    let progress = Progress::new("eval");
    progress.step(&format!(
        "making the reference fixture in {}",
        dir.display()
    ));
    let out = Command::new("bash")
        .arg("-c")
        .arg(SCRIPT)
        .arg("eval-fixture")
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(format!("cannot run bash: {e}")))?;
    let said = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = said
        .lines()
        .map(|l| l.strip_prefix("eval-fixture: ").unwrap_or(l))
        .filter(|l| !l.trim().is_empty())
        .collect();
    if !out.status.success() {
        return Err(failed(if said.is_empty() {
            format!("the fixture script failed ({})", out.status)
        } else {
            said.join("; ")
        }));
    }
    for line in &said {
        progress.step(line);
    }
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if path.is_empty() {
        return Err(failed("the fixture script wrote no config".into()));
    }
    Ok(PathBuf::from(path))
}
