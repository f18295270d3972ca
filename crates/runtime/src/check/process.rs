//! A checker run as a process per check (what is not kept warm, and what a failed warm
//! checker falls back to), and reading what it printed: each checker's diagnostics at their
//! places in the code as written.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::checker::{Checker, Kind};
use super::confine::{Confinement, ended};
use super::declare::Wrapped;
use super::error::{CheckError, Diagnostic};

/// Output of a checker read at most.
const MAX_OUTPUT: usize = 1024 * 1024;

/// Our configuration of each checker, in the check directory: what it reads instead of any
/// file of the host (`ty.toml`, `mypy.ini`, `pyrightconfig.json`; TypeScript's options are
/// on its command line, `--ignoreConfig`).
pub(super) const TY_CONFIG: (&str, &str) = ("ty.toml", "# code-executor-mcp: ty's configuration\n");
pub(super) const PYRIGHT_CONFIG: (&str, &str) = (
    "pyrightconfig.json",
    r#"{"extraPaths": ["."], "typeCheckingMode": "standard"}"#,
);
/// mypy's, with its search path: the check directory.
pub(super) fn mypy_config(dir: &Path) -> String {
    format!(
        "[mypy]\nmypy_path = {}\nno_site_packages = True\n",
        dir.display()
    )
}
pub(super) const MYPY_CONFIG: &str = "mypy.ini";

/// What a checker printed, and how it ended.
pub(super) struct Output {
    /// stdout, then stderr.
    pub(super) text: String,
    /// stdout alone (pyright's JSON).
    pub(super) stdout: String,
    pub(super) stderr: String,
    pub(super) failed: bool,
    /// Whether any line reads as a diagnostic (of any file).
    pub(super) any_diagnostic: bool,
    pub(super) status: Option<std::process::ExitStatus>,
}

impl Output {
    /// Whether the checker ended as it does when it has checked: with success, or with the
    /// exit code that means "errors found". Anything else (a signal, a crash, a usage error)
    /// is no answer.
    pub(super) fn answered(&self, kind: Kind) -> bool {
        let Some(status) = self.status else {
            return false;
        };
        match status.code() {
            Some(0) | Some(1) => true,
            Some(2) => kind == Kind::Tsc,
            _ => false,
        }
    }

    /// Why it gave no answer.
    pub(super) fn why(&self, memory_mb: u64) -> String {
        match self.status {
            Some(s) => ended(&s, &self.stderr, &self.text, memory_mb),
            None => "the checker could not be waited for".into(),
        }
    }
}

/// The arguments of a checker run once on `code` (a file of `dir`, the check directory).
pub(super) fn args(
    checker: &Checker,
    dir: &Path,
    state: &Path,
    files: &[String],
    code: &str,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |xs: &[&str]| a.extend(xs.iter().map(OsString::from));
    match checker.kind {
        Kind::Tsc => {
            push(&[
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
            // No tsconfig.json of any directory above is read (and none makes the files on
            // the command line an error).
            if checker.ignore_config {
                push(&["--ignoreConfig"]);
            }
            a.extend(files.iter().map(OsString::from));
            a.push(code.into());
        }
        Kind::Ty => {
            push(&[
                "check",
                "--output-format",
                "concise",
                "--no-progress",
                "--color",
                "never",
            ]);
            a.push("--config-file".into());
            a.push(dir.join(TY_CONFIG.0).into());
            a.push("--project".into());
            a.push(dir.into());
            a.push("--extra-search-path".into());
            a.push(dir.into());
            a.push(code.into());
        }
        Kind::Mypy => {
            push(&[
                "--no-error-summary",
                "--show-column-numbers",
                "--no-pretty",
                "--no-color-output",
                "--hide-error-context",
                "--check-untyped-defs",
                "--no-site-packages",
                // Its traceback says why it failed (a MemoryError at the memory bound).
                "--show-traceback",
                "--follow-imports",
                "silent",
            ]);
            a.push("--config-file".into());
            a.push(dir.join(MYPY_CONFIG).into());
            a.push("--cache-dir".into());
            a.push(state.join("cache").join("mypy").into());
            a.push(code.into());
        }
        Kind::Pyright => {
            a.push("-p".into());
            a.push(dir.join(PYRIGHT_CONFIG.0).into());
            a.push("--outputjson".into());
            a.push(code.into());
        }
    }
    a
}

/// CPU seconds of a process that may run `limit` on every core, plus a second.
pub(super) fn cpu_seconds(limit: Duration) -> u64 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    limit.as_secs_f64().ceil() as u64 * cores + 1
}

/// Runs `checker` once on `code`, confined, for at most `limit`: at the limit its sandbox is
/// killed whole.
pub(super) async fn run(
    checker: &Checker,
    confine: &Confinement,
    dir: &Path,
    state: &Path,
    files: &[String],
    code: &str,
    limit: Duration,
) -> Result<Output, CheckError> {
    let args = args(checker, dir, state, files, code);
    let cmd = confine
        .command(&checker.launch, args, dir, state, cpu_seconds(limit))
        .map_err(|e| CheckError::Failed(format!("{} cannot be confined: {e}", checker.label)))?;
    let mut child = tools::child::spawn(cmd).await.map_err(|e| {
        CheckError::Failed(format!("cannot run {}: {e}", checker.program.display()))
    })?;
    let pid = child.id().unwrap_or(0);
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
    let Ok((a, b, status)) = tokio::time::timeout(limit, read).await else {
        sandbox::kill_group(pid);
        return Err(CheckError::Timeout(limit.as_millis()));
    };
    let stdout = String::from_utf8_lossy(&a).into_owned();
    let stderr = String::from_utf8_lossy(&b).into_owned();
    let mut text = stdout.clone();
    if !stderr.is_empty() {
        text.push('\n');
        text.push_str(&stderr);
    }
    let status = status.ok();
    let failed = !status.is_some_and(|s| s.success());
    let any_diagnostic = match checker.kind {
        Kind::Pyright => stdout.contains("\"generalDiagnostics\""),
        _ => text.lines().any(|l| l.contains(": error")),
    };
    Ok(Output {
        text,
        stdout,
        stderr,
        failed,
        any_diagnostic,
        status,
    })
}

/// The diagnostics of `code` (the file's name) in the checker's output, at their places in
/// the code as written. Errors only; places in our wrapper count as the code's first line.
pub(super) fn parse(kind: Kind, output: &Output, code: &str, wrapped: &Wrapped) -> Vec<Diagnostic> {
    let place = |line: u32, column: u32| place(wrapped, line, column);
    let mut out: Vec<Diagnostic> = Vec::new();
    if kind == Kind::Pyright {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&output.stdout) else {
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
pub(super) fn undefined_name(message: &str) -> bool {
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
pub(super) fn place(wrapped: &Wrapped, line: u32, column: u32) -> (u32, u32) {
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
    use crate::check::declare;

    fn out(text: &str) -> Output {
        Output {
            text: text.to_string(),
            stdout: text.to_string(),
            stderr: String::new(),
            failed: true,
            any_diagnostic: true,
            status: None,
        }
    }

    #[test]
    fn every_checker_is_given_our_configuration_and_stops_searching() {
        let launch = crate::check::confine::Launch {
            program: "/x".into(),
            prefix: Vec::new(),
            read_only: Vec::new(),
            node: false,
            go: false,
        };
        let (dir, state) = (Path::new("/w/check"), Path::new("/w/state"));
        for (kind, wanted) in [
            (Kind::Tsc, &["--ignoreConfig", "--noResolve"][..]),
            (
                Kind::Ty,
                &["--config-file", "/w/check/ty.toml", "--project"][..],
            ),
            (
                Kind::Mypy,
                &["--config-file", "/w/check/mypy.ini", "--no-site-packages"][..],
            ),
            (Kind::Pyright, &["-p", "/w/check/pyrightconfig.json"][..]),
        ] {
            let checker = Checker {
                kind,
                program: "/x".into(),
                label: "x".into(),
                server_args: None,
                launch: launch.clone(),
                ignore_config: true,
            };
            let got: Vec<String> = args(&checker, dir, state, &[], "code_1.py")
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            for w in wanted {
                assert!(got.iter().any(|a| a == w), "{kind:?}: {w} in {got:?}");
            }
        }
        assert!(mypy_config(dir).contains("mypy_path = /w/check"));
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
}
