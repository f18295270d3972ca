//! Which checker checks a language: the one the settings name or the first found on PATH,
//! known by its file name, with its version, how it runs as a language server when it can,
//! and the environment it runs with.

use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The language of the code a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    TypeScript,
    Python,
}

impl Language {
    pub(super) fn name(self) -> &'static str {
        match self {
            Language::TypeScript => "TypeScript",
            Language::Python => "Python",
        }
    }
}

/// Which checker a program is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tsc,
    Ty,
    Pyright,
    Mypy,
}

impl Kind {
    pub(super) fn language(self) -> Language {
        match self {
            Kind::Tsc => Language::TypeScript,
            _ => Language::Python,
        }
    }

    /// The kind a program's file name says (`tsc`, `tsgo`, `ty`, `pyright`, `mypy`, with any
    /// suffix such as a version or `.exe`).
    fn of(program: &Path) -> Option<Kind> {
        let name = program.file_name()?.to_str()?.to_ascii_lowercase();
        let stem = name.split(['.', '-', '@']).next().unwrap_or("");
        Some(match stem {
            "tsc" | "tsgo" => Kind::Tsc,
            "ty" => Kind::Ty,
            "pyright" => Kind::Pyright,
            "mypy" => Kind::Mypy,
            _ => return None,
        })
    }
}

/// A checker found for a language.
#[derive(Debug, Clone)]
pub(super) struct Checker {
    pub(super) kind: Kind,
    /// What is run.
    pub(super) program: PathBuf,
    /// As the error names it (`tsc 7.0.2`).
    pub(super) label: String,
    /// How it runs as a language server, when it can (TypeScript 7's native `tsc`, `tsgo`,
    /// `ty`): it is then kept warm (`lsp.rs`).
    pub(super) server_args: Option<&'static [&'static str]>,
    /// How it runs confined (`confine.rs`).
    pub(super) launch: super::confine::Launch,
    /// TypeScript 5.9 and later take `--ignoreConfig`: no `tsconfig.json` is looked for.
    pub(super) ignore_config: bool,
}

/// Why no checker was found, or the one found cannot be used.
#[derive(Debug, thiserror::Error)]
pub(super) enum FindError {
    /// None of the names looked for is on PATH (the caller says what to install).
    #[error("none of the checkers looked for is on PATH")]
    NoneFound,
    #[error("check: {0} (from the settings) is not a file")]
    NotAFile(String),
    #[error("check: {0} (from the settings) is not on PATH")]
    NotOnPath(String),
    #[error(
        "check: cannot tell which checker {} is; name tsc, tsgo, ty, pyright or mypy",
        .0.display()
    )]
    Unknown(PathBuf),
    #[error("{label} cannot be run in the sandbox: {source}")]
    Unconfined {
        label: String,
        source: super::confine::LaunchError,
    },
    #[error("the search for a checker stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// The checker the settings name, else the first of `names` on PATH.
/// `uid_other`: the sandbox runs as another user (see `confine::launch`).
pub(super) fn find(
    configured: Option<&str>,
    names: &[&str],
    uid_other: bool,
) -> Result<Checker, FindError> {
    let program = match configured {
        Some(c) if c.contains('/') => {
            let p = PathBuf::from(c);
            if !p.is_file() {
                return Err(FindError::NotAFile(c.to_string()));
            }
            p
        }
        Some(c) => tools::child::on_path(c).ok_or_else(|| FindError::NotOnPath(c.to_string()))?,
        None => names
            .iter()
            .find_map(|n| tools::child::on_path(n))
            .ok_or(FindError::NoneFound)?,
    };
    let kind = Kind::of(&program).ok_or_else(|| FindError::Unknown(program.clone()))?;
    let native = (kind == Kind::Tsc).then(|| native_tsc(&program)).flatten();
    let is_tsgo = Kind::of(&program).is_some()
        && program
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("tsgo"));
    let program = native.clone().unwrap_or(program);
    let version = std::process::Command::new(&program)
        .arg("--version")
        .env_clear()
        .envs(std::env::var_os("PATH").map(|p| ("PATH", p)))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let name = match kind {
        Kind::Tsc => "tsc",
        Kind::Ty => "ty",
        Kind::Pyright => "pyright",
        Kind::Mypy => "mypy",
    };
    let version = version
        .split_whitespace()
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("");
    let server_args: Option<&'static [&'static str]> = match kind {
        Kind::Tsc if native.is_some() || is_tsgo || version.starts_with("7.") => {
            Some(&["--lsp", "--stdio"])
        }
        Kind::Ty => Some(&["server"]),
        _ => None,
    };
    let label = format!("{name} {version}").trim().to_string();
    let launch =
        super::confine::launch(kind == Kind::Tsc, &program, uid_other).map_err(|source| {
            FindError::Unconfined {
                label: label.clone(),
                source,
            }
        })?;
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let minor: u32 = version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    Ok(Checker {
        kind,
        label,
        program,
        server_args,
        launch,
        ignore_config: kind == Kind::Tsc && (major > 5 || (major == 5 && minor >= 9)),
    })
}

/// TypeScript 7's `tsc` is a Node launcher of a native program beside it: that program,
/// run directly, starts without Node.
fn native_tsc(program: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(program).ok()?;
    // .../node_modules/typescript/bin/tsc
    let modules = real.parent()?.parent()?.parent()?;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let native = modules.join(format!(
        "@typescript/typescript-{}-{arch}/lib/tsc",
        std::env::consts::OS
    ));
    native.is_file().then_some(native)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkers_are_known_by_name() {
        for (p, k) in [
            ("/x/node_modules/.bin/tsc", Some(Kind::Tsc)),
            ("/usr/bin/tsgo", Some(Kind::Tsc)),
            ("ty", Some(Kind::Ty)),
            ("/v/bin/mypy", Some(Kind::Mypy)),
            ("pyright-1.1", Some(Kind::Pyright)),
            ("/bin/cat", None),
        ] {
            assert_eq!(Kind::of(Path::new(p)), k, "{p}");
        }
    }
}
