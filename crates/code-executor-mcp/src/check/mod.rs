//! Code checked before it runs (`check: true`, or `check.enabled` in the settings): the code
//! is type-checked by a real checker against the declarations of our API and of the tools
//! it can reach (declared and learned types: `catalog::learned`), before a worker starts and
//! before any tool is called. A code with errors gets them back like a syntax error (line,
//! column, message) and nothing runs.
//!
//! Checkers: TypeScript's `tsgo` or `tsc` (TypeScript 7's native `tsc` is run directly,
//! without its Node launcher), Python's `ty`, `pyright` or `mypy`; the one the settings name
//! (`check.typescript`, `check.python`: a path, or a name on PATH), else the first of those
//! found on PATH. Each check runs the checker once, in a private directory (0700) that holds
//! our declarations, written once per set of tools (named by their hash) and reused, and the
//! code's file for that check. The checker reads only those files: TypeScript's `noResolve`
//! and `types: []`, and `///` directives kept out of the code, so code cannot make it read a
//! file of the host; it runs with a clean environment and a deadline, and never runs the code.

pub(crate) mod declare;
mod lsp;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use tokio::io::AsyncReadExt;
use tokio::sync::OnceCell;

use crate::config::settings::CheckSettings;
use declare::{ServerTools, Wrapped};

/// How long one check may take, unless the settings say otherwise (and never past the
/// execution's deadline).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);
/// Diagnostics shown in the error; the rest are counted.
const MAX_SHOWN: usize = 20;
/// Output of a checker read at most.
const MAX_OUTPUT: usize = 1024 * 1024;

/// The language of the code a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    TypeScript,
    Python,
}

impl Language {
    fn name(self) -> &'static str {
        match self {
            Language::TypeScript => "TypeScript",
            Language::Python => "Python",
        }
    }
}

/// Which checker a program is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tsc,
    Ty,
    Pyright,
    Mypy,
}

impl Kind {
    fn language(self) -> Language {
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

/// A problem the checker found in the code, at a place in the code as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Diagnostic {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Why code was not run, or could not be checked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    /// The code has type errors: nothing ran.
    #[error("{}", found(.checker, .diagnostics))]
    Found {
        checker: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// No checker for the language.
    #[error(
        "the code was to be type-checked (check: true), but no {language} checker was found: \
         {hint}; or call without check"
    )]
    NoChecker {
        language: &'static str,
        hint: String,
    },
    /// The checker could not be run, or gave no answer we could read.
    #[error(
        "the code could not be type-checked: {0}; nothing ran (call without check to run it unchecked)"
    )]
    Failed(String),
    /// The checker took longer than allowed.
    #[error(
        "type-checking the code took longer than {0} ms; nothing ran (call without check to run it unchecked)"
    )]
    Timeout(u128),
}

fn found(checker: &str, diagnostics: &[Diagnostic]) -> String {
    let mut s = format!(
        "the code does not type-check ({checker}, against our API and the declared and \
         inferred types of the tools it can reach); nothing ran:"
    );
    for d in diagnostics.iter().take(MAX_SHOWN) {
        s.push_str(&format!(
            "\n  line {}, column {}: {}",
            d.line, d.column, d.message
        ));
    }
    if diagnostics.len() > MAX_SHOWN {
        s.push_str(&format!(
            "\n  ... and {} more",
            diagnostics.len() - MAX_SHOWN
        ));
    }
    s
}

/// A checker found for a language.
#[derive(Debug, Clone)]
struct Checker {
    kind: Kind,
    /// What is run.
    program: PathBuf,
    /// As the error names it (`tsc 7.0.2`).
    label: String,
    /// How it runs as a language server, when it can (TypeScript 7's native `tsc`, `tsgo`,
    /// `ty`): it is then kept warm (`lsp.rs`).
    server_args: Option<&'static [&'static str]>,
}

/// The checkers of both languages, found on first use, and their working directory.
pub(crate) struct Checkers {
    settings: CheckSettings,
    ts: OnceCell<Result<Checker, String>>,
    py: OnceCell<Result<Checker, String>>,
    dir: OnceCell<Result<WorkDir, String>>,
    next: AtomicU64,
    /// Declaration files written already, by name.
    written: Mutex<BTreeMap<String, ()>>,
    /// The warm checkers (language servers), by language.
    warm: tokio::sync::Mutex<BTreeMap<&'static str, Arc<lsp::Lsp>>>,
}

/// The private directory checks run in; removed with the server.
struct WorkDir(PathBuf);

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Checkers {
    pub(crate) fn new(settings: CheckSettings) -> Arc<Checkers> {
        Arc::new(Checkers {
            settings,
            ts: OnceCell::new(),
            py: OnceCell::new(),
            dir: OnceCell::new(),
            next: AtomicU64::new(0),
            written: Mutex::default(),
            warm: tokio::sync::Mutex::default(),
        })
    }

    /// Whether a run is checked: its own `check`, else the settings'.
    pub(crate) fn wanted(&self, asked: Option<bool>) -> bool {
        asked.unwrap_or(self.settings.enabled)
    }

    async fn checker(&self, language: Language) -> Result<Checker, CheckError> {
        let (cell, configured, names, what, hint) = match language {
            Language::TypeScript => (
                &self.ts,
                self.settings.typescript.as_deref(),
                &["tsgo", "tsc"][..],
                "TypeScript",
                "install TypeScript (`npm install -g typescript`, which gives tsc, or \
                 @typescript/native-preview, which gives tsgo), or name one in the settings \
                 (check.typescript)",
            ),
            Language::Python => (
                &self.py,
                self.settings.python.as_deref(),
                &["ty", "pyright", "mypy"][..],
                "Python",
                "install one (`pip install ty`, `pip install mypy` or `npm install -g pyright`), \
                 or name one in the settings (check.python)",
            ),
        };
        let found = cell
            .get_or_init(|| async move {
                let configured = configured.map(str::to_string);
                let names: Vec<&'static str> = names.to_vec();
                tokio::task::spawn_blocking(move || find(configured.as_deref(), &names))
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()))
            })
            .await;
        match found {
            Ok(c) if c.kind.language() == language => Ok(c.clone()),
            Ok(c) => Err(CheckError::NoChecker {
                language: what,
                hint: format!(
                    "{} checks {}, not {what}",
                    c.label,
                    c.kind.language().name()
                ),
            }),
            Err(why) if why.is_empty() => Err(CheckError::NoChecker {
                language: what,
                hint: hint.to_string(),
            }),
            Err(why) => Err(CheckError::NoChecker {
                language: what,
                hint: why.clone(),
            }),
        }
    }

    async fn dir(&self) -> Result<PathBuf, CheckError> {
        let made = self
            .dir
            .get_or_init(|| async {
                tokio::task::spawn_blocking(make_dir)
                    .await
                    .map_err(|e| e.to_string())
                    .and_then(|r| r)
            })
            .await;
        match made {
            Ok(d) => Ok(d.0.clone()),
            Err(e) => Err(CheckError::Failed(e.clone())),
        }
    }

    /// Makes the directory `name` in `dir` unless made already.
    fn write_dir_once(&self, dir: &Path, name: &str) -> Result<(), CheckError> {
        if self.written.lock().is_ok_and(|w| w.contains_key(name)) {
            return Ok(());
        }
        let path = dir.join(name);
        std::fs::create_dir_all(&path)
            .map_err(|e| CheckError::Failed(format!("cannot make {}: {e}", path.display())))?;
        if let Ok(mut w) = self.written.lock() {
            w.insert(name.to_string(), ());
        }
        Ok(())
    }

    /// The errors of the file at `path` from the language's warm checker, started if need
    /// be; `None` when it has none, or it failed (it is then ended: the caller runs a fresh
    /// checker process, and the next check starts a new server).
    async fn warm_check(
        &self,
        checker: &Checker,
        language: Language,
        dir: &Path,
        path: &Path,
        text: &str,
        limit: Duration,
    ) -> Option<Vec<lsp::Found>> {
        let args = checker.server_args?;
        let key = language.name();
        let server = {
            let mut warm = self.warm.lock().await;
            match warm.get(key).filter(|l| l.alive()) {
                Some(l) => l.clone(),
                None => {
                    match lsp::Lsp::start(&checker.program, args, dir, &checker_env(), limit).await
                    {
                        Ok(l) => {
                            warm.insert(key, l.clone());
                            l
                        }
                        Err(e) => {
                            tracing::warn!(
                                "{}: no warm checker, a process per check: {e}",
                                checker.label
                            );
                            warm.remove(key);
                            return None;
                        }
                    }
                }
            }
        };
        let id = match language {
            Language::TypeScript => "typescript",
            Language::Python => "python",
        };
        match server.errors(path, id, text, limit).await {
            Ok(found) => Some(found),
            Err(e) => {
                tracing::warn!(
                    "{}: the warm checker failed, a process checks instead: {e}",
                    checker.label
                );
                self.warm.lock().await.remove(key);
                None
            }
        }
    }

    /// Writes `text` as `name` in `dir` unless written already (names carry the content's
    /// hash, so a written file never changes).
    fn write_once(&self, dir: &Path, name: &str, text: &str) -> Result<(), CheckError> {
        if self.written.lock().is_ok_and(|w| w.contains_key(name)) {
            return Ok(());
        }
        let path = dir.join(name);
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("file");
        let tmp = path.with_file_name(format!(
            ".{file}.{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| CheckError::Failed(format!("cannot write {}: {e}", path.display())))?;
        if let Ok(mut w) = self.written.lock() {
            w.insert(name.to_string(), ());
        }
        Ok(())
    }

    /// Checks `code` in `language` against `servers`, within `deadline`. `Ok` when it
    /// type-checks.
    /// In a session (`session`), names the code does not define may be globals of its
    /// earlier runs: "not defined" errors are not counted.
    pub(crate) async fn check(
        &self,
        language: Language,
        code: &str,
        servers: &[ServerTools],
        deadline: Instant,
        session: bool,
    ) -> Result<(), CheckError> {
        let checker = self.checker(language).await?;
        let dir = self.dir().await?;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let (files, code_name, wrapped) = match language {
            Language::TypeScript => {
                self.write_once(&dir, "api.d.ts", declare::TS_API)?;
                let tools = declare::typescript(servers);
                let h = hash(&tools);
                // A project per set of tools (a language server finds it by its tsconfig):
                // our API, those tools, and the code files of its checks.
                let project = format!("proj-{h}");
                self.write_dir_once(&dir, &project)?;
                self.write_once(&dir, &format!("{project}/tools.d.ts"), &tools)?;
                self.write_once(&dir, &format!("{project}/tsconfig.json"), TS_CONFIG)?;
                (
                    vec!["api.d.ts".to_string(), format!("{project}/tools.d.ts")],
                    format!("{project}/code-{n}.ts"),
                    declare::wrap_ts(code),
                )
            }
            Language::Python => {
                self.write_once(&dir, "_cem_api.pyi", declare::PY_API)?;
                // Module names carry the hash of the tools they declare.
                let h = hash(&serde_json::to_string(servers).unwrap_or_default());
                let (modules, main) = declare::python(servers, &format!("_cem_{h}_t"));
                for (name, text) in &modules {
                    self.write_once(&dir, &format!("{name}.pyi"), text)?;
                }
                let main_name = format!("_cem_tools_{h}");
                self.write_once(&dir, &format!("{main_name}.pyi"), &main)?;
                let code_name = format!("code_{n}.py");
                (Vec::new(), code_name, declare::wrap_py(code, &main_name))
            }
        };
        let code_path = dir.join(&code_name);
        std::fs::write(&code_path, &wrapped.text).map_err(|e| {
            CheckError::Failed(format!("cannot write {}: {e}", code_path.display()))
        })?;
        let limit = self
            .settings
            .timeout_ms
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
            .min(deadline.saturating_duration_since(Instant::now()));
        if let Some(found) = self
            .warm_check(&checker, language, &dir, &code_path, &wrapped.text, limit)
            .await
        {
            let _ = std::fs::remove_file(&code_path);
            let diagnostics: Vec<Diagnostic> = found
                .into_iter()
                .map(|f| {
                    let (line, column) = place(&wrapped, f.line, f.column);
                    Diagnostic {
                        line,
                        column,
                        message: f.message,
                    }
                })
                .filter(|d| !(session && undefined_name(&d.message)))
                .collect();
            return if diagnostics.is_empty() {
                Ok(())
            } else {
                Err(CheckError::Found {
                    checker: format!("{}, kept running as a language server", checker.label),
                    diagnostics,
                })
            };
        }
        let ran = run(&checker, &dir, &files, &code_name, limit).await;
        let _ = std::fs::remove_file(&code_path);
        let output = ran?;
        let all = parse(checker.kind, &output, &code_name, &wrapped);
        let any = !all.is_empty();
        let diagnostics: Vec<Diagnostic> = all
            .into_iter()
            .filter(|d| !(session && undefined_name(&d.message)))
            .collect();
        if diagnostics.is_empty() {
            if output.failed && !output.any_diagnostic && !any {
                return Err(CheckError::Failed(format!(
                    "{} ended with an error and said: {}",
                    checker.label,
                    output.text.chars().take(2000).collect::<String>().trim()
                )));
            }
            return Ok(());
        }
        Err(CheckError::Found {
            checker: checker.label,
            diagnostics,
        })
    }
}

/// The servers `code` may call, with the tools `allow` permits (declared and learned
/// types): those it names after `tools.`, or every server when it uses `tools` otherwise.
/// Servers not started yet are started (the run would start them anyway), waiting until
/// `deadline`; one whose list cannot be had by then (it failed to start) is declared
/// untyped.
pub(crate) async fn servers_for(
    catalog: &crate::catalog::Catalog,
    allow: &crate::policy::ToolAllowlist,
    code: &str,
    deadline: Instant,
) -> Vec<ServerTools> {
    let names: Vec<String> = catalog.upstreams().names().map(str::to_string).collect();
    let wanted: Vec<String> = match declare::referenced(code) {
        Some(refs) => names
            .into_iter()
            .filter(|n| refs.contains(n) || refs.contains(&crate::catalog::ident(n)))
            .collect(),
        None => names,
    };
    let view = crate::catalog::ToolView::default();
    let wait = deadline.saturating_duration_since(Instant::now());
    let lists = futures::future::join_all(
        wanted
            .iter()
            .map(|s| catalog.tools(&view, Some(s), allow, Some(wait))),
    )
    .await;
    let mut out = Vec::with_capacity(wanted.len());
    for (server, list) in wanted.into_iter().zip(lists) {
        match list {
            Ok((tools, errors)) if errors.is_empty() => {
                let pairs: Vec<(&str, &rmcp::model::Tool)> =
                    tools.iter().map(|(s, t)| (s.as_str(), t)).collect();
                let typed = catalog.typed_all(&pairs).await;
                out.push((
                    server,
                    Some(typed.into_iter().map(Cow::into_owned).collect()),
                ));
            }
            _ => out.push((server, None)),
        }
    }
    out
}

fn hash(text: &str) -> String {
    let d = sha2::Sha256::digest(text.as_bytes());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

const DIR_PREFIX: &str = "code-executor-check-";

/// Removes the directories of checks whose server is gone (killed before it could).
fn remove_stale_dirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn make_dir() -> Result<WorkDir, String> {
    use std::os::unix::fs::DirBuilderExt;
    remove_stale_dirs(&std::env::temp_dir());
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| e.to_string())?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{suffix}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(WorkDir(dir))
}

/// The checker the settings name, else the first of `names` on PATH. `Err("")`: none found.
fn find(configured: Option<&str>, names: &[&str]) -> Result<Checker, String> {
    let program = match configured {
        Some(c) if c.contains('/') => {
            let p = PathBuf::from(c);
            if !p.is_file() {
                return Err(format!("check: {c} (from the settings) is not a file"));
            }
            p
        }
        Some(c) => crate::setup::clients::on_path(c)
            .ok_or_else(|| format!("check: {c} (from the settings) is not on PATH"))?,
        None => names
            .iter()
            .find_map(|n| crate::setup::clients::on_path(n))
            .ok_or_else(String::new)?,
    };
    let kind = Kind::of(&program).ok_or_else(|| {
        format!(
            "check: cannot tell which checker {} is; name tsc, tsgo, ty, pyright or mypy",
            program.display()
        )
    })?;
    let native = (kind == Kind::Tsc).then(|| native_tsc(&program)).flatten();
    let is_tsgo = Kind::of(&program).is_some()
        && program
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("tsgo"));
    let program = native.clone().unwrap_or(program);
    let version = std::process::Command::new(&program)
        .arg("--version")
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
    Ok(Checker {
        kind,
        label: format!("{name} {version}").trim().to_string(),
        program,
        server_args,
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

/// What a checker printed, and whether it exited with an error.
struct Output {
    text: String,
    failed: bool,
    /// Whether any line reads as a diagnostic (of any file).
    any_diagnostic: bool,
}

/// The environment a checker runs with: nothing of ours but what it needs to start.
fn checker_env() -> Vec<(String, std::ffi::OsString)> {
    ["PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "XDG_CACHE_HOME"]
        .iter()
        .filter_map(|k| Some((k.to_string(), std::env::var_os(k)?)))
        .collect()
}

/// The TypeScript project of a set of tools (`proj-<hash>/tsconfig.json`): what the
/// command line gives a fresh `tsc`, for the warm one.
const TS_CONFIG: &str = r#"{"compilerOptions": {"strict": true, "noImplicitAny": false, "noResolve": true, "types": [], "target": "es2022", "lib": ["es2022"], "noEmit": true, "skipLibCheck": true}, "files": ["../api.d.ts", "tools.d.ts"], "include": ["code-*.ts"]}
"#;

async fn run(
    checker: &Checker,
    dir: &Path,
    files: &[String],
    code: &str,
    limit: Duration,
) -> Result<Output, CheckError> {
    let mut cmd = tokio::process::Command::new(&checker.program);
    match checker.kind {
        Kind::Tsc => {
            cmd.args([
                "--noEmit",
                "--pretty",
                "false",
                "--strict",
                "--noImplicitAny",
                "false",
                "--noResolve",
                "--skipLibCheck",
                "--types",
                "",
                "--target",
                "es2022",
                "--lib",
                "es2022",
            ]);
            cmd.args(files);
            cmd.arg(code);
        }
        Kind::Ty => {
            cmd.args([
                "check",
                "--output-format",
                "concise",
                "--no-progress",
                "--color",
                "never",
                "--extra-search-path",
                ".",
                code,
            ]);
        }
        Kind::Mypy => {
            cmd.args([
                "--no-error-summary",
                "--show-column-numbers",
                "--no-pretty",
                "--no-color-output",
                "--hide-error-context",
                "--check-untyped-defs",
                "--follow-imports",
                "silent",
                "--cache-dir",
                ".mypy_cache",
                code,
            ]);
            cmd.env("MYPYPATH", dir);
        }
        Kind::Pyright => {
            cmd.args(["--outputjson", code]);
            let config = dir.join("pyrightconfig.json");
            if !config.exists() {
                let _ = std::fs::write(
                    &config,
                    r#"{"extraPaths": ["."], "typeCheckingMode": "standard"}"#,
                );
            }
        }
    }
    cmd.current_dir(dir)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd.envs(checker_env());
    let mut child = cmd.spawn().map_err(|e| {
        CheckError::Failed(format!("cannot run {}: {e}", checker.program.display()))
    })?;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let read = async {
        let mut a = Vec::new();
        let mut b = Vec::new();
        let ra = async {
            if let Some(o) = out.as_mut() {
                let _ = o.take(MAX_OUTPUT as u64).read_to_end(&mut a).await;
            }
        };
        let rb = async {
            if let Some(e) = err.as_mut() {
                let _ = e.take(MAX_OUTPUT as u64).read_to_end(&mut b).await;
            }
        };
        tokio::join!(ra, rb);
        let status = child.wait().await;
        (a, b, status)
    };
    let (a, b, status) = tokio::time::timeout(limit, read)
        .await
        .map_err(|_| CheckError::Timeout(limit.as_millis()))?;
    let mut text = String::from_utf8_lossy(&a).into_owned();
    if !b.is_empty() {
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&b));
    }
    let failed = !status.is_ok_and(|s| s.success());
    let any_diagnostic = match checker.kind {
        Kind::Pyright => text.contains("\"generalDiagnostics\""),
        _ => text.lines().any(|l| l.contains(": error")),
    };
    Ok(Output {
        text,
        failed,
        any_diagnostic,
    })
}

/// The diagnostics of `code` (the file's name) in the checker's output, at their places in
/// the code as written. Errors only; places in our wrapper count as the code's first line.
fn parse(kind: Kind, output: &Output, code: &str, wrapped: &Wrapped) -> Vec<Diagnostic> {
    let place = |line: u32, column: u32| place(wrapped, line, column);
    let mut out: Vec<Diagnostic> = Vec::new();
    if kind == Kind::Pyright {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&output.text) else {
            return out;
        };
        for d in v["generalDiagnostics"].as_array().into_iter().flatten() {
            if d["severity"] != "error" || !d["file"].as_str().is_some_and(|f| f.ends_with(code)) {
                continue;
            }
            let start = &d["range"]["start"];
            let (line, column) = place(
                start["line"].as_u64().unwrap_or(0) as u32 + 1,
                start["character"].as_u64().unwrap_or(0) as u32 + 1,
            );
            let mut message = d["message"].as_str().unwrap_or("").to_string();
            if let Some(rule) = d["rule"].as_str() {
                message.push_str(&format!(" [{rule}]"));
            }
            out.push(Diagnostic {
                line,
                column,
                message,
            });
        }
        return out;
    }
    for raw in output.text.lines() {
        // A message continued on indented lines (tsc) belongs to the last diagnostic.
        if raw.starts_with(' ') && kind == Kind::Tsc {
            if let Some(last) = out.last_mut() {
                last.message.push(' ');
                last.message.push_str(raw.trim());
            }
            continue;
        }
        let parsed = match kind {
            Kind::Tsc => parse_tsc(raw, code),
            Kind::Ty => parse_colon(raw, code, |rest| {
                let rest = rest.strip_prefix("error[")?;
                let (rule, msg) = rest.split_once("] ")?;
                Some(format!("{msg} [{rule}]"))
            }),
            Kind::Mypy => parse_colon(raw, code, |rest| {
                rest.strip_prefix("error: ").map(str::to_string)
            }),
            Kind::Pyright => None,
        };
        if let Some((line, column, message)) = parsed {
            let (line, column) = place(line, column);
            out.push(Diagnostic {
                line,
                column,
                message,
            });
        }
    }
    out
}

/// Whether a diagnostic says a name is not defined (each checker's code for it).
fn undefined_name(message: &str) -> bool {
    [
        "[TS2304]",
        "[TS2552]",
        "[unresolved-reference]",
        "[name-defined]",
        "[reportUndefinedVariable]",
    ]
    .iter()
    .any(|code| message.ends_with(code))
}

/// A place in the checked file as a place in the code as written; places in our wrapper
/// count as the code's first line.
fn place(wrapped: &Wrapped, line: u32, column: u32) -> (u32, u32) {
    if line <= wrapped.lines_before {
        (1, 1)
    } else {
        (
            line - wrapped.lines_before,
            column.saturating_sub(wrapped.indent).max(1),
        )
    }
}

/// `code-1.ts(4,7): error TS2322: message`.
fn parse_tsc(line: &str, code: &str) -> Option<(u32, u32, String)> {
    let rest = line.strip_prefix(code)?.strip_prefix('(')?;
    let (pos, rest) = rest.split_once("): ")?;
    let (l, c) = pos.split_once(',')?;
    let rest = rest.strip_prefix("error ")?;
    let (code_id, msg) = rest.split_once(": ")?;
    Some((
        l.parse().ok()?,
        c.parse().ok()?,
        format!("{msg} [{code_id}]"),
    ))
}

/// `code_1.py:12:14: <rest>`, the rest read by `message`.
fn parse_colon(
    line: &str,
    code: &str,
    message: impl Fn(&str) -> Option<String>,
) -> Option<(u32, u32, String)> {
    let at = line.find(code)?;
    let rest = line[at + code.len()..].strip_prefix(':')?;
    let mut parts = rest.splitn(3, ':');
    let l = parts.next()?.parse().ok()?;
    let c = parts.next()?.parse().ok()?;
    let rest = parts.next()?.trim_start();
    Some((l, c, message(rest)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(text: &str) -> Output {
        Output {
            text: text.to_string(),
            failed: true,
            any_diagnostic: true,
        }
    }

    #[test]
    fn each_checkers_output_is_read_at_the_codes_own_places() {
        let ts = declare::wrap_ts("const a = 1;\nconst n: number = 'x';");
        let got = parse(
            Kind::Tsc,
            &out(
                "code-3.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n  more detail\ntools-x.d.ts(1,1): error TS1: elsewhere",
            ),
            "code-3.ts",
            &ts,
        );
        assert_eq!(
            got,
            vec![Diagnostic {
                line: 2,
                column: 7,
                message: "Type 'string' is not assignable to type 'number'. [TS2322] more detail"
                    .into()
            }]
        );
        let py = declare::wrap_py("x = 1\nn: int = 'a'", "_cem_tools_x");
        let got = parse(
            Kind::Ty,
            &out(
                "code_1.py:7:14: error[invalid-assignment] Object of type `str` is not assignable to `int`\ncode_1.py:7:1: warning[x] w",
            ),
            "code_1.py",
            &py,
        );
        assert_eq!(
            (got[0].line, got[0].column, got.len()),
            (2, 10, 1),
            "{got:?}"
        );
        let got = parse(
            Kind::Mypy,
            &out(
                "/tmp/d/code_1.py:7:14: error: Incompatible types in assignment  [assignment]\ncode_1.py:7:14: note: x",
            ),
            "code_1.py",
            &py,
        );
        assert_eq!((got[0].line, got.len()), (2, 1), "{got:?}");
        let got = parse(
            Kind::Pyright,
            &out(
                r#"{"generalDiagnostics": [{"file": "/d/code_1.py", "severity": "error", "message": "m", "rule": "r", "range": {"start": {"line": 6, "character": 13}}}]}"#,
            ),
            "code_1.py",
            &py,
        );
        assert_eq!(
            got[0],
            Diagnostic {
                line: 2,
                column: 10,
                message: "m [r]".into()
            }
        );
    }

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
