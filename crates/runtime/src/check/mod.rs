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
//! our declarations, written once per set of tools (named by their hash) and reused, our
//! configuration of each checker, and the code's file for that check. The checker reads only
//! those files: it runs confined like a worker (`confine.rs`: a sandbox whose view holds its
//! installation, the check directory read-only and a state directory of its own, with memory,
//! CPU, process and file limits and no network), with our configuration and the flags that
//! stop it looking for another (`process.rs`), TypeScript's `noResolve` and `types: []`, and
//! `///` directives kept out of the code, so neither the code nor a file planted above the
//! check directory or in a home can make it read a file of the host. It never runs the code.
//!
//! A check spends the execution's own deadline (and at most `check.timeoutMs`): whatever
//! happens, it ends by then. A check that cannot decide (the checker timed out, crashed, was
//! killed at a limit, printed nothing readable, its language server died) refuses the code
//! with an error that says why; nothing runs unchecked.

mod checker;
pub mod confine;
pub mod declare;
mod error;
mod lsp;
mod process;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use tokio::sync::OnceCell;

pub use checker::Language;
use checker::{Checker, FindError, Kind, find};
pub use confine::Confinement;
use declare::ServerTools;
pub use error::{CheckError, Diagnostic};
use process::{parse, place, run, undefined_name};
use tools::config::settings::CheckSettings;

/// CPU seconds of a warm language server, over its whole life: a backstop behind each check's
/// deadline (a server that reaches it dies, and the next check starts a new one).
const WARM_CPU_SECONDS: u64 = 3600;

/// How long one check may take, unless the settings say otherwise (and never past the
/// execution's deadline).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// The checkers of both languages, found on first use, and their working directory.
pub struct Checkers {
    settings: CheckSettings,
    confine: Confinement,
    ts: OnceCell<Result<Checker, FindError>>,
    py: OnceCell<Result<Checker, FindError>>,
    dir: OnceCell<Result<WorkDir, DirError>>,
    next: AtomicU64,
    /// Declaration files written already, by name.
    written: Mutex<BTreeMap<String, ()>>,
    /// The warm checkers (language servers), by language.
    warm: tokio::sync::Mutex<BTreeMap<&'static str, Arc<lsp::Lsp>>>,
}

/// The private directory checks run in (`check`: what checkers read; `state`: what they may
/// write); removed with the server.
struct WorkDir(PathBuf);

impl WorkDir {
    fn check(&self) -> PathBuf {
        self.0.join("check")
    }

    fn state(&self) -> PathBuf {
        self.0.join("state")
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Checkers {
    pub fn new(settings: CheckSettings, confine: Confinement) -> Arc<Checkers> {
        Arc::new(Checkers {
            settings,
            confine,
            ts: OnceCell::new(),
            py: OnceCell::new(),
            dir: OnceCell::new(),
            next: AtomicU64::new(0),
            written: Mutex::default(),
            warm: tokio::sync::Mutex::default(),
        })
    }

    /// Whether a run is checked: its own `check`, else the settings'.
    pub fn wanted(&self, asked: Option<bool>) -> bool {
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
                let uid_other = self.confine.uid_other();
                tokio::task::spawn_blocking(move || find(configured.as_deref(), &names, uid_other))
                    .await
                    .unwrap_or_else(|e| Err(e.into()))
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
            Err(FindError::NoneFound) => Err(CheckError::NoChecker {
                language: what,
                hint: hint.to_string(),
            }),
            Err(why) => Err(CheckError::NoChecker {
                language: what,
                hint: why.to_string(),
            }),
        }
    }

    /// The check directory and the state directory.
    async fn dir(&self) -> Result<(PathBuf, PathBuf), CheckError> {
        let made = self
            .dir
            .get_or_init(|| async {
                let uid_other = self.confine.uid_other();
                tokio::task::spawn_blocking(move || make_dir(uid_other))
                    .await
                    .unwrap_or_else(|e| Err(e.into()))
            })
            .await;
        match made {
            Ok(d) => Ok((d.check(), d.state())),
            Err(e) => Err(CheckError::Failed(e.to_string())),
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
    /// be. `None` when there is none (the checker cannot serve, the sandbox is off, or it
    /// could not start: a process checks instead); an error when it failed during the check
    /// (it is then ended, and the check with it).
    #[expect(
        clippy::too_many_arguments,
        reason = "one call site; each is a part of the check"
    )]
    async fn warm_check(
        &self,
        checker: &Checker,
        language: Language,
        dir: &Path,
        state: &Path,
        path: &Path,
        text: &str,
        until: Instant,
    ) -> Option<Result<Vec<lsp::Found>, CheckError>> {
        let args = checker.server_args?;
        // Unconfined, a language server would look for configuration above its workspace:
        // only a process per check, with our configuration, is run then.
        if self.confine.mode != sandbox::SandboxMode::Enforce {
            return None;
        }
        let key = language.name();
        let server = {
            let mut warm = self.warm.lock().await;
            match warm.get(key).filter(|l| l.alive()) {
                Some(l) => l.clone(),
                None => {
                    warm.remove(key);
                    let args = args.iter().map(std::ffi::OsString::from).collect();
                    let cmd = match self.confine.command(
                        &checker.launch,
                        args,
                        dir,
                        state,
                        WARM_CPU_SECONDS,
                    ) {
                        Ok(c) => c,
                        Err(e) => {
                            tracing::warn!("{}: no warm checker: {e}", checker.label);
                            return None;
                        }
                    };
                    let left = until.saturating_duration_since(Instant::now());
                    match lsp::Lsp::start(cmd, dir, left).await {
                        Ok(l) => {
                            warm.insert(key, l.clone());
                            l
                        }
                        Err(e) => {
                            tracing::warn!(
                                "{}: no warm checker, a process per check: {e}",
                                checker.label
                            );
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
        let left = until.saturating_duration_since(Instant::now());
        match server.errors(path, id, text, left).await {
            Ok(found) => Some(Ok(found)),
            Err(e) => {
                let memory_mb = self.confine.memory_bytes >> 20;
                // How it ended, if it did by itself; then ended whole, whatever it was doing:
                // a server that is late is still at work.
                let death = server.death(memory_mb);
                server.kill();
                {
                    let mut warm = self.warm.lock().await;
                    if warm.get(key).is_some_and(|l| Arc::ptr_eq(l, &server)) {
                        warm.remove(key);
                    }
                }
                Some(Err(match e {
                    lsp::LspFail::Late(_) => CheckError::Timeout(left.as_millis()),
                    lsp::LspFail::Broken(why) => CheckError::Failed(format!(
                        "{}, kept running as a language server, failed: {why}{}",
                        checker.label,
                        death.map(|d| format!(" ({d})")).unwrap_or_default()
                    )),
                }))
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
    pub async fn check(
        &self,
        language: Language,
        code: &str,
        servers: &[ServerTools],
        deadline: Instant,
        session: bool,
    ) -> Result<(), CheckError> {
        // The check's own deadline: the execution's, or sooner by the settings.
        let until = deadline.min(
            Instant::now()
                + self
                    .settings
                    .timeout_ms
                    .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
        );
        let left = || until.saturating_duration_since(Instant::now());
        let started = Instant::now();
        let timeout = || CheckError::Timeout(until.saturating_duration_since(started).as_millis());
        let checker = tokio::time::timeout(left(), self.checker(language))
            .await
            .map_err(|_| timeout())??;
        let (dir, state) = self.dir().await?;
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
                // Our configuration of each Python checker (read instead of any other).
                self.write_once(&dir, process::TY_CONFIG.0, process::TY_CONFIG.1)?;
                self.write_once(&dir, process::PYRIGHT_CONFIG.0, process::PYRIGHT_CONFIG.1)?;
                self.write_once(&dir, process::MYPY_CONFIG, &process::mypy_config(&dir))?;
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
        let memory_mb = self.confine.memory_bytes >> 20;
        if let Some(found) = self
            .warm_check(
                &checker,
                language,
                &dir,
                &state,
                &code_path,
                &wrapped.text,
                until,
            )
            .await
        {
            let _ = std::fs::remove_file(&code_path);
            let found = match found {
                Err(CheckError::Timeout(_)) => return Err(timeout()),
                other => other?,
            };
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
        if left().is_zero() {
            let _ = std::fs::remove_file(&code_path);
            return Err(timeout());
        }
        let ran = run(
            &checker,
            &self.confine,
            &dir,
            &state,
            &files,
            &code_name,
            left(),
        )
        .await;
        let _ = std::fs::remove_file(&code_path);
        let output = match ran {
            Err(CheckError::Timeout(_)) => return Err(timeout()),
            other => other?,
        };
        // pyright answers in JSON: anything else is no answer.
        if checker.kind == Kind::Pyright
            && serde_json::from_str::<serde_json::Value>(&output.stdout)
                .ok()
                .is_none_or(|v| !v["generalDiagnostics"].is_array())
        {
            return Err(CheckError::Failed(format!(
                "{} printed no diagnostics we could read: {}",
                checker.label,
                output.why(memory_mb)
            )));
        }
        let all = parse(checker.kind, &output, &code_name, &wrapped);
        let any = !all.is_empty();
        let diagnostics: Vec<Diagnostic> = all
            .into_iter()
            .filter(|d| !(session && undefined_name(&d.message)))
            .collect();
        if !diagnostics.is_empty() {
            return Err(CheckError::Found {
                checker: checker.label,
                diagnostics,
            });
        }
        // No error in the code: an answer only if the checker ended as it does when it has
        // checked (not crashed, killed at a limit, refused its arguments).
        if !output.answered(checker.kind) || (output.failed && !output.any_diagnostic && !any) {
            return Err(CheckError::Failed(format!(
                "{}: {}",
                checker.label,
                output.why(memory_mb)
            )));
        }
        Ok(())
    }
}

/// The servers `code` may call, with the tools `allow` permits (declared and learned
/// types): those it names after `tools.`, or every server when it uses `tools` otherwise.
/// Servers not started yet are started (the run would start them anyway), waiting until
/// `deadline`; one whose list cannot be had by then (it failed to start) is declared
/// untyped.
pub async fn servers_for(
    catalog: &tools::catalog::Catalog,
    allow: &policy::ToolAllowlist,
    code: &str,
    deadline: Instant,
) -> Vec<ServerTools> {
    let names: Vec<String> = catalog.upstreams().names().map(str::to_string).collect();
    let wanted: Vec<String> = match declare::referenced(code) {
        Some(refs) => names
            .into_iter()
            .filter(|n| refs.contains(n) || refs.contains(&tools::catalog::ident(n)))
            .collect(),
        None => names,
    };
    let view = tools::catalog::ToolView::default();
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

/// The work directory: private (0700), unless the sandbox runs as another user (a root host:
/// uid 65534) who must reach its state directory: then searchable but not listable (0711),
/// under a random name.
fn make_dir(uid_other: bool) -> Result<WorkDir, DirError> {
    use std::os::unix::fs::DirBuilderExt;
    remove_stale_dirs(&std::env::temp_dir());
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(DirError::Random)?;
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("{DIR_PREFIX}{}-{suffix}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(if uid_other { 0o711 } else { 0o700 })
        .create(&dir)
        .map_err(|source| DirError::Make {
            path: dir.clone(),
            source,
        })?;
    let work = WorkDir(dir);
    std::fs::create_dir(work.check())
        .and_then(|()| confine::make_state(&work.state()))
        .map_err(|source| DirError::Make {
            path: work.0.clone(),
            source,
        })?;
    Ok(work)
}

/// Why the work directory could not be made.
#[derive(Debug, thiserror::Error)]
enum DirError {
    #[error("no randomness for the work directory's name: {0}")]
    Random(getrandom::Error),
    #[error("cannot make {}: {source}", .path.display())]
    Make {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("making the work directory stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// The TypeScript project of a set of tools (`proj-<hash>/tsconfig.json`): what the
/// command line gives a fresh `tsc`, for the warm one.
const TS_CONFIG: &str = r#"{"compilerOptions": {"strict": true, "noImplicitAny": false, "noResolve": true, "types": [], "target": "es2022", "lib": ["es2022"], "noEmit": true, "skipLibCheck": true}, "files": ["../api.d.ts", "tools.d.ts"], "include": ["code-*.ts"]}
"#;
