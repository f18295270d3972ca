//! What an execution has done so far, for whoever watches it while it runs: the log lines it
//! printed, its latest progress, and whether it has finished.
//!
//! Every execution has one [`Events`]. The log collector mirrors each line it keeps, code's
//! `progress()` lands here. Readers are the `wait` tool and `tasks/get` (both
//! through `runtime::parked`), which take the lines past a cursor and the latest progress.
//!
//! When the requesting client gave a progress token, progress also goes to it as
//! `notifications/progress`, through one pump task per execution: notifications leave in the
//! order they were made, at most `longRuns.progressPerSecond` of them (reports in between are
//! coalesced, the latest wins and is sent when the interval has passed), and only with a
//! progress value larger than the last one sent, as the protocol requires.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use serde::Serialize;
use tokio::sync::mpsc;

use super::client::ClientLink;
use crate::outcome::LogEntry;
use policy::long_runs::LongRunLimits;

/// Longest message a `progress()` report may carry, in bytes.
pub const MAX_PROGRESS_MESSAGE_BYTES: usize = 1024;
/// Progress reports waiting for the pump; past it a report is dropped (the next one carries
/// the newer state anyway), so code never waits for a slow client.
const PUMP_QUEUE: usize = 64;

/// The latest progress of an execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    pub done: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// One line for a person: `42/100 (42%) fetching page 42`.
    pub fn line(&self) -> String {
        let mut s = format_number(self.done);
        if let Some(total) = self.total {
            s.push('/');
            s.push_str(&format_number(total));
            if total > 0.0 {
                s.push_str(&format!(
                    " ({:.0}%)",
                    (self.done / total * 100.0).min(100.0)
                ));
            }
        }
        if let Some(m) = &self.message {
            s.push(' ');
            s.push_str(m);
        }
        s
    }
}

fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

#[derive(Default)]
struct State {
    logs: Vec<LogEntry>,
    progress: Option<Progress>,
}

/// The observable state of one execution (see the module docs).
pub struct Events {
    state: Mutex<State>,
    /// To the pump that sends `notifications/progress`, when the client asked for them.
    pump: Option<mpsc::Sender<ProgressNotificationParam>>,
    token: Option<ProgressToken>,
    tool_call_progress: bool,
    forward_upstream: bool,
}

impl Events {
    /// Events of an execution requested by `client` (progress goes to it when it gave a
    /// token), under `limits`.
    pub fn new(client: Option<&ClientLink>, limits: &LongRunLimits) -> Arc<Events> {
        let target = client.and_then(|c| c.progress_token.clone().map(|t| (c.peer.clone(), t)));
        let (pump, token) = match target {
            Some((peer, token)) => {
                let (tx, rx) = mpsc::channel(PUMP_QUEUE);
                tokio::spawn(pump(rx, peer, limits.progress_interval()));
                (Some(tx), Some(token))
            }
            None => (None, None),
        };
        Arc::new(Events {
            state: Mutex::default(),
            pump,
            token,
            tool_call_progress: limits.tool_call_progress,
            forward_upstream: limits.forward_upstream_progress,
        })
    }

    /// Events nobody outside the execution watches (tests, `exec` from the command line).
    pub fn detached() -> Arc<Events> {
        Events::new(None, &LongRunLimits::default())
    }

    fn change(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s);
        }
    }

    /// A line the execution's log collector kept.
    pub fn log(&self, entry: &LogEntry) {
        self.change(|s| s.logs.push(entry.clone()));
    }

    /// `progress(done, total, message)` from code, already checked.
    pub fn progress(&self, progress: Progress) {
        self.notify(&progress);
        self.change(|s| s.progress = Some(progress));
    }

    /// A tool call of the execution finished (the `n`th): progress, when the settings ask for it.
    pub fn tool_call(&self, n: u32, server: &str, tool: &str) {
        if !self.tool_call_progress {
            return;
        }
        let p = Progress {
            done: f64::from(n),
            total: None,
            message: Some(format!("tool call {n}: {server}.{tool}")),
        };
        self.notify(&p);
    }

    /// Whether upstream progress should be passed on at all (a client that gave a token, and
    /// the setting on).
    pub fn wants_upstream_progress(&self) -> bool {
        self.forward_upstream && self.pump.is_some()
    }

    /// Progress an upstream tool reported while code called it: passed on under the
    /// execution's token, its message prefixed with the tool.
    pub fn upstream_progress(&self, server: &str, tool: &str, p: &ProgressNotificationParam) {
        if !self.forward_upstream {
            return;
        }
        let message = match &p.message {
            Some(m) => format!("{server}.{tool}: {m}"),
            None => format!("{server}.{tool}"),
        };
        self.notify(&Progress {
            done: p.progress,
            total: p.total,
            message: Some(message),
        });
    }

    fn notify(&self, p: &Progress) {
        let (Some(pump), Some(token)) = (&self.pump, &self.token) else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token.clone(), p.done);
        param.total = p.total;
        param.message = p.message.clone();
        // A full queue drops this report: the pump is behind, and the next report is newer.
        let _ = pump.try_send(param);
    }

    /// The lines from `cursor` on, and the latest progress.
    pub fn since(&self, cursor: usize) -> (Vec<LogEntry>, Option<Progress>) {
        self.state
            .lock()
            .map(|s| {
                (
                    s.logs.get(cursor..).unwrap_or_default().to_vec(),
                    s.progress.clone(),
                )
            })
            .unwrap_or_default()
    }

    /// The last `n` lines, and how many there are in all.
    pub fn tail(&self, n: usize) -> (Vec<LogEntry>, usize) {
        self.state
            .lock()
            .map(|s| {
                let from = s.logs.len().saturating_sub(n);
                (s.logs[from..].to_vec(), s.logs.len())
            })
            .unwrap_or_default()
    }

    pub fn latest_progress(&self) -> Option<Progress> {
        self.state.lock().ok().and_then(|s| s.progress.clone())
    }
}

/// Sends one execution's progress notifications, in order, at most one per `interval`,
/// coalescing what arrives meanwhile, and only with growing progress values. Ends when the
/// execution's [`Events`] is dropped (after sending what was pending).
async fn pump(
    mut rx: mpsc::Receiver<ProgressNotificationParam>,
    peer: rmcp::Peer<rmcp::RoleServer>,
    interval: Duration,
) {
    let mut last: Option<f64> = None;
    let mut next_at = tokio::time::Instant::now();
    while let Some(mut param) = rx.recv().await {
        let mut open = true;
        while open && tokio::time::Instant::now() < next_at {
            tokio::select! {
                () = tokio::time::sleep_until(next_at) => break,
                more = rx.recv() => match more {
                    Some(newer) => param = newer,
                    None => open = false,
                },
            }
        }
        if last.is_some_and(|l| param.progress <= l) {
            if open {
                continue;
            }
            break;
        }
        last = Some(param.progress);
        if let Err(e) = peer.notify_progress(param).await {
            tracing::debug!("cannot send progress to the client: {e}");
        }
        next_at = tokio::time::Instant::now() + interval;
        if !open {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_reads_as_a_fraction() {
        let p = Progress {
            done: 42.0,
            total: Some(100.0),
            message: Some("page 42".into()),
        };
        assert_eq!(p.line(), "42/100 (42%) page 42");
        let p = Progress {
            done: 1.5,
            total: None,
            message: None,
        };
        assert_eq!(p.line(), "1.5");
    }

    #[test]
    fn lines_past_a_cursor_are_seen() {
        let e = Events::detached();
        for text in ["a", "b", "c"] {
            e.log(&LogEntry {
                level: "log",
                text: text.into(),
            });
        }
        let (lines, _) = e.since(1);
        assert_eq!(
            lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert_eq!(e.tail(1).1, 3);
    }
}
