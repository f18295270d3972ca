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

mod checker;
pub(crate) mod declare;
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

use crate::config::settings::CheckSettings;
pub(crate) use checker::Language;
use checker::{Checker, checker_env, find};
use declare::ServerTools;
pub(crate) use error::{CheckError, Diagnostic};
use process::{parse, place, run, undefined_name};

/// How long one check may take, unless the settings say otherwise (and never past the
/// execution's deadline).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

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

/// The TypeScript project of a set of tools (`proj-<hash>/tsconfig.json`): what the
/// command line gives a fresh `tsc`, for the warm one.
const TS_CONFIG: &str = r#"{"compilerOptions": {"strict": true, "noImplicitAny": false, "noResolve": true, "types": [], "target": "es2022", "lib": ["es2022"], "noEmit": true, "skipLibCheck": true}, "files": ["../api.d.ts", "tools.d.ts"], "include": ["code-*.ts"]}
"#;
