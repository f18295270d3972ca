//! Counters behind `/metrics` (`serve --http`): every decision the audit sink sees is counted
//! here too, whether or not an audit file is configured, so the numbers and the audit log
//! cannot disagree about what happened.
//!
//! Label values come from code (a tool call names its server), so a label set is bounded:
//! past [`MAX_SERVER_LABELS`] distinct servers, further ones count under `_other`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::event::AuditEvent;

/// Distinct `server` label values kept; a program that calls made-up server names cannot
/// grow the metrics without bound.
pub const MAX_SERVER_LABELS: usize = 256;

/// Upper bounds (seconds) of the execution duration histogram: a trivial run is about a
/// millisecond, the longest allowed deadline 300 s.
const DURATION_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0, 300.0,
];

#[derive(Default)]
struct Histogram {
    buckets: [u64; DURATION_BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Counters fed by audit events.
#[derive(Default)]
pub struct Metrics {
    started: AtomicU64,
    refused: AtomicU64,
    sessions_started: AtomicU64,
    sessions_ended: AtomicU64,
    /// run.end outcome -> count.
    ended: Mutex<BTreeMap<&'static str, u64>>,
    durations: Mutex<Histogram>,
    /// (server, outcome) -> count; outcome `denied` for a policy denial.
    tool_calls: Mutex<BTreeMap<(String, &'static str), u64>>,
    /// Approval answers (`once`, `deny`, `timeout`, ...) -> count.
    approvals: Mutex<BTreeMap<&'static str, u64>>,
    /// Model calls from code, by who answered and outcome.
    llm_calls: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    /// Cancellations asked by the client, by how (`tasks/cancel`, `wait`, ...).
    cancels: Mutex<BTreeMap<&'static str, u64>>,
    /// Requests code asked the server to make (`fetch`), by decision (`allow`, `deny`).
    fetches: Mutex<BTreeMap<&'static str, u64>>,
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    let mut m = match map.lock() {
        Ok(m) => m,
        Err(p) => p.into_inner(),
    };
    *m.entry(key).or_insert(0) += 1;
}

impl Metrics {
    /// Counts one audit event.
    pub fn observe(&self, event: &AuditEvent) {
        match event {
            AuditEvent::RunStart { .. } => {
                self.started.fetch_add(1, Ordering::Relaxed);
            }
            AuditEvent::RunEnd {
                outcome,
                duration_ms,
                ..
            } => {
                bump(&self.ended, *outcome);
                let secs = duration_ms / 1000.0;
                let mut h = match self.durations.lock() {
                    Ok(h) => h,
                    Err(p) => p.into_inner(),
                };
                h.count += 1;
                h.sum += secs;
                for (i, bound) in DURATION_BUCKETS.iter().enumerate() {
                    if secs <= *bound {
                        h.buckets[i] += 1;
                    }
                }
            }
            AuditEvent::ToolCall {
                server,
                decision,
                outcome,
                ..
            } => {
                let outcome = match (*decision, outcome) {
                    ("deny", _) => "denied",
                    (_, Some(o)) => o,
                    (_, None) => "unknown",
                };
                let mut m = match self.tool_calls.lock() {
                    Ok(m) => m,
                    Err(p) => p.into_inner(),
                };
                let known = m.keys().any(|(s, _)| s == server);
                let servers = m
                    .keys()
                    .map(|(s, _)| s.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                let server = if known || servers < MAX_SERVER_LABELS {
                    server.clone()
                } else {
                    "_other".to_string()
                };
                *m.entry((server, outcome)).or_insert(0) += 1;
            }
            AuditEvent::SessionStart { .. } => {
                self.sessions_started.fetch_add(1, Ordering::Relaxed);
            }
            AuditEvent::SessionEnd { .. } => {
                self.sessions_ended.fetch_add(1, Ordering::Relaxed);
            }
            AuditEvent::RunRefused { .. } => {
                self.refused.fetch_add(1, Ordering::Relaxed);
            }
            AuditEvent::Approval { answer, .. } => bump(&self.approvals, *answer),
            AuditEvent::LlmCall { via, outcome, .. } => bump(&self.llm_calls, (*via, *outcome)),
            AuditEvent::RunCancel { by, .. } => bump(&self.cancels, *by),
            AuditEvent::Fetch { decision, .. } => bump(&self.fetches, *decision),
            // Counted in the audit log only (no metric names a detector).
            AuditEvent::PiiTokens { .. } => {}
            AuditEvent::SkillSave { .. } => {}
            // Hooks are judged in the audit log; their refusals count as denied tool calls.
            AuditEvent::Hook { .. } => {}
        }
    }

    /// Executions started and not yet ended.
    pub fn executions_running(&self) -> u64 {
        let ended: u64 = match self.ended.lock() {
            Ok(m) => m.values().sum(),
            Err(p) => p.into_inner().values().sum(),
        };
        self.started.load(Ordering::Relaxed).saturating_sub(ended)
    }

    /// Approvals, model calls and client cancellations, in the exposition format.
    fn render_pauses(&self, out: &mut String) {
        let snapshot = |m: &Mutex<BTreeMap<&'static str, u64>>| match m.lock() {
            Ok(m) => m.clone(),
            Err(p) => p.into_inner().clone(),
        };
        for (name, help, label, counts) in [
            (
                "code_executor_approvals_total",
                "Approval questions, by answer (once, execution, session, deny, timeout, failed, approved, denied).",
                "answer",
                snapshot(&self.approvals),
            ),
            (
                "code_executor_cancellations_total",
                "Executions the client cancelled, by how (notifications/cancelled, tasks/cancel, wait).",
                "by",
                snapshot(&self.cancels),
            ),
            (
                "code_executor_fetches_total",
                "HTTP requests (and redirect hops) code asked the server to make, by decision.",
                "decision",
                snapshot(&self.fetches),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (value, n) in counts {
                let _ = writeln!(out, "{name}{{{label}=\"{}\"}} {n}", escape_label(value));
            }
        }
        let llm = match self.llm_calls.lock() {
            Ok(m) => m.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let _ = writeln!(
            out,
            "# HELP code_executor_llm_calls_total Model calls from code, by who answered (client, provider) and outcome.\n\
             # TYPE code_executor_llm_calls_total counter"
        );
        for ((via, outcome), n) in llm {
            let _ = writeln!(
                out,
                "code_executor_llm_calls_total{{via=\"{}\",outcome=\"{}\"}} {n}",
                escape_label(via),
                escape_label(outcome)
            );
        }
    }

    /// The Prometheus text exposition of these counters.
    pub fn render(&self, out: &mut String) {
        self.render_pauses(out);
        let _ = writeln!(
            out,
            "# HELP code_executor_executions_started_total Executions admitted and started.\n\
             # TYPE code_executor_executions_started_total counter\n\
             code_executor_executions_started_total {}",
            self.started.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP code_executor_executions_total Executions ended, by outcome (ok, error, cancelled).\n\
             # TYPE code_executor_executions_total counter"
        );
        let ended = match self.ended.lock() {
            Ok(m) => m.clone(),
            Err(p) => p.into_inner().clone(),
        };
        for outcome in ["ok", "error", "cancelled"] {
            let n = ended.get(outcome).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "code_executor_executions_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP code_executor_executions_running Executions started and not yet ended.\n\
             # TYPE code_executor_executions_running gauge\n\
             code_executor_executions_running {}",
            self.executions_running()
        );
        let _ = writeln!(
            out,
            "# HELP code_executor_execution_duration_seconds Wall time of ended executions.\n\
             # TYPE code_executor_execution_duration_seconds histogram"
        );
        {
            let h = match self.durations.lock() {
                Ok(h) => h,
                Err(p) => p.into_inner(),
            };
            for (i, bound) in DURATION_BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "code_executor_execution_duration_seconds_bucket{{le=\"{bound}\"}} {}",
                    h.buckets[i]
                );
            }
            let _ = writeln!(
                out,
                "code_executor_execution_duration_seconds_bucket{{le=\"+Inf\"}} {}\n\
                 code_executor_execution_duration_seconds_sum {}\n\
                 code_executor_execution_duration_seconds_count {}",
                h.count, h.sum, h.count
            );
        }
        let _ = writeln!(
            out,
            "# HELP code_executor_tool_calls_total Tool calls from code, by upstream server and outcome (ok, tool_error, failed, timeout, cancelled, denied).\n\
             # TYPE code_executor_tool_calls_total counter"
        );
        let calls = match self.tool_calls.lock() {
            Ok(m) => m.clone(),
            Err(p) => p.into_inner().clone(),
        };
        for ((server, outcome), n) in &calls {
            let _ = writeln!(
                out,
                "code_executor_tool_calls_total{{server=\"{}\",outcome=\"{outcome}\"}} {n}",
                escape_label(server)
            );
        }
        let denied: u64 = calls
            .iter()
            .filter(|((_, o), _)| *o == "denied")
            .map(|(_, n)| n)
            .sum();
        let _ = writeln!(
            out,
            "# HELP code_executor_denials_total Requests refused by policy: tool calls denied, executions refused (busy, over rate).\n\
             # TYPE code_executor_denials_total counter\n\
             code_executor_denials_total{{kind=\"tool_call\"}} {denied}\n\
             code_executor_denials_total{{kind=\"execution\"}} {}",
            self.refused.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP code_executor_sessions_started_total Execution sessions created.\n\
             # TYPE code_executor_sessions_started_total counter\n\
             code_executor_sessions_started_total {}\n\
             # HELP code_executor_sessions_ended_total Execution sessions ended (reset, idle, evicted, shutdown).\n\
             # TYPE code_executor_sessions_ended_total counter\n\
             code_executor_sessions_ended_total {}",
            self.sessions_started.load(Ordering::Relaxed),
            self.sessions_ended.load(Ordering::Relaxed)
        );
    }
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
pub fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(server: &str, decision: &'static str, outcome: Option<&'static str>) -> AuditEvent {
        AuditEvent::ToolCall {
            execution: "e".into(),
            server: server.into(),
            tool: "t".into(),
            decision,
            reason: None,
            outcome,
            duration_ms: 1.0,
            args_sha256: String::new(),
            args_bytes: 0,
            args: None,
            result_bytes: 0,
        }
    }

    #[test]
    fn tool_calls_are_counted_by_server_and_outcome_and_labels_are_bounded() {
        let m = Metrics::default();
        m.observe(&call("fs", "allow", Some("ok")));
        m.observe(&call("fs", "allow", Some("ok")));
        m.observe(&call("fs", "deny", None));
        m.observe(&call("we\"ird\n", "allow", Some("error")));
        for i in 0..(MAX_SERVER_LABELS + 10) {
            m.observe(&call(&format!("made-up-{i}"), "allow", Some("error")));
        }
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("code_executor_tool_calls_total{server=\"fs\",outcome=\"ok\"} 2\n"));
        assert!(
            out.contains("code_executor_tool_calls_total{server=\"fs\",outcome=\"denied\"} 1\n")
        );
        assert!(out.contains(
            "code_executor_tool_calls_total{server=\"we\\\"ird\\n\",outcome=\"error\"} 1\n"
        ));
        assert!(out.contains("code_executor_denials_total{kind=\"tool_call\"} 1\n"));
        let servers: std::collections::BTreeSet<&str> = out
            .lines()
            .filter_map(|l| l.strip_prefix("code_executor_tool_calls_total{server=\""))
            .filter_map(|l| l.split("\",").next())
            .collect();
        assert_eq!(servers.len(), MAX_SERVER_LABELS + 1, "{out}");
        assert!(servers.contains("_other"));
    }

    #[test]
    fn durations_fill_cumulative_buckets() {
        let m = Metrics::default();
        for ms in [0.5, 3.0, 2000.0] {
            m.observe(&AuditEvent::RunEnd {
                execution: "e".into(),
                outcome: "ok",
                error: None,
                duration_ms: ms,
                tool_calls: 0,
                result_bytes: 0,
                log_bytes: 0,
                memory_peak_bytes: None,
            });
        }
        let mut out = String::new();
        m.render(&mut out);
        for line in [
            "code_executor_execution_duration_seconds_bucket{le=\"0.001\"} 1",
            "code_executor_execution_duration_seconds_bucket{le=\"0.005\"} 2",
            "code_executor_execution_duration_seconds_bucket{le=\"1\"} 2",
            "code_executor_execution_duration_seconds_bucket{le=\"5\"} 3",
            "code_executor_execution_duration_seconds_bucket{le=\"+Inf\"} 3",
            "code_executor_execution_duration_seconds_count 3",
            "code_executor_executions_total{outcome=\"ok\"} 3",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
        }
    }
}
