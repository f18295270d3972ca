//! Terminal output of the people-facing commands (`demo`, `bench`, `login`, the command
//! line's answers); never used in serve mode, where stdout carries the protocol.
//!
//! Everything the command line writes to stdout goes through [`say`] or [`say_bytes`]. A
//! reader that goes away (`code-executor-mcp completions zsh | head -1`) is not an error:
//! once stdout is a broken pipe nothing more is written, and the command ends quietly as
//! coreutils do. Any other write error is kept and reported once, at the end, as the
//! command's error ([`stdout_failure`]).
//!
//! Errors of the command line are shown as CLI tools show them, `error: ...` on stderr, with
//! a `hint: ...` line when the error carries one ([`Hinted`], [`report_error`]); progress of
//! long commands goes to stderr only when stderr is a terminal ([`Progress`]).

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What `login` tells the person while stdout stays for its result (never used in serve
/// mode).
#[expect(
    clippy::print_stderr,
    reason = "login shows the URL to open and what it waits for"
)]
pub fn tell(text: &str) {
    eprintln!("{text}");
}

/// Terminal output of the people-facing commands (never used in serve mode): `text` and a
/// newline.
pub fn say(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    say_bytes(line.as_bytes());
}

/// Stdout went away (a broken pipe): nothing more is written.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error on stdout other than a broken pipe.
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Writes `bytes` to stdout as they are, and flushes. A broken pipe ends all further output
/// quietly; another error is kept for [`stdout_failure`].
pub fn say_bytes(bytes: &[u8]) {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        written(e);
    }
}

fn written(e: std::io::Error) {
    STDOUT_CLOSED.store(true, Ordering::Relaxed);
    if e.kind() != std::io::ErrorKind::BrokenPipe
        && let Ok(mut first) = STDOUT_ERROR.lock()
        && first.is_none()
    {
        *first = Some(e.to_string());
    }
}

/// Why stdout could not be written, when it failed other than by its reader going away.
pub fn stdout_failure() -> Option<String> {
    STDOUT_ERROR.lock().ok().and_then(|e| e.clone())
}

/// An error of the command line with what to do about it: shown as `error: MESSAGE` and
/// `hint: HINT`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    pub message: String,
    pub hint: String,
}

impl Hinted {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Hinted {
        Hinted {
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// The lines a command's error is shown as: `error: ` and the whole chain of causes, then a
/// `hint: ` line for each hint the chain carries.
pub fn error_lines(e: &anyhow::Error) -> String {
    let mut text = format!("error: {e:#}");
    for hint in e.chain().filter_map(|c| c.downcast_ref::<Hinted>()) {
        text.push_str("\nhint: ");
        text.push_str(&hint.hint);
    }
    text
}

/// Shows a command's error on stderr, as CLI tools do (no log line, no timestamp).
pub fn report_error(e: &anyhow::Error) {
    tell(&error_lines(e));
}

/// Progress of a long command, shown on stderr when stderr is a terminal (and nowhere
/// otherwise, so piped or captured output stays clean): one line per step.
#[derive(Debug, Clone)]
pub struct Progress {
    label: &'static str,
    shown: bool,
    started: std::time::Instant,
}

impl Progress {
    /// Progress of the command `label`, shown when stderr is a terminal, or when
    /// `CODE_EXECUTOR_PROGRESS=1` asks for it anyway (`0` never shows it).
    pub fn new(label: &'static str) -> Progress {
        let shown = match std::env::var(PROGRESS_ENV).ok().as_deref() {
            Some("1") => true,
            Some("0") => false,
            _ => std::io::stderr().is_terminal(),
        };
        Progress {
            label,
            shown,
            started: std::time::Instant::now(),
        }
    }

    /// One step: `label [seconds since the start]: text` on stderr, if shown.
    pub fn step(&self, text: &str) {
        if self.shown {
            tell(&format!(
                "{} [{:>5.1}s]: {text}",
                self.label,
                self.started.elapsed().as_secs_f64()
            ));
        }
    }
}

/// The environment variable that forces progress on (`1`) or off (`0`) whatever stderr is.
pub const PROGRESS_ENV: &str = "CODE_EXECUTOR_PROGRESS";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_show_their_causes_and_every_hint() {
        let e = anyhow::Error::new(Hinted::new("cannot read x.ts", "give a file, or -"))
            .context("exec");
        let text = error_lines(&e);
        assert_eq!(
            text,
            "error: exec: cannot read x.ts\nhint: give a file, or -"
        );
        let plain = anyhow::anyhow!("no such server");
        assert_eq!(error_lines(&plain), "error: no such server");
    }
}
