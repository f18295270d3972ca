//! `GET /metrics`: the Prometheus text format (version 0.0.4). Execution, tool-call, denial
//! and session counters come from the audit sink (`policy::metrics`); this module adds the
//! HTTP layer's own (requests by status, authentication failures, connections, busy answers)
//! and gauges read at scrape time (pools, live sessions, admission).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::composition::Core;
use runtime::pool::PoolStats;

/// Counters of the HTTP layer.
#[derive(Default)]
pub(crate) struct HttpMetrics {
    /// status code -> count, for `/mcp`.
    requests: Mutex<BTreeMap<u16, u64>>,
    /// reason -> count.
    auth_failures: Mutex<BTreeMap<&'static str, u64>>,
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    pub connections_rejected: AtomicU64,
    /// Requests refused with the busy answer (connection or session caps).
    pub busy: AtomicU64,
    /// Requests refused by the Host/Origin checks.
    pub forbidden_origin: AtomicU64,
}

impl HttpMetrics {
    pub(crate) fn request(&self, status: u16) {
        if let Ok(mut m) = self.requests.lock() {
            *m.entry(status).or_insert(0) += 1;
        }
    }

    pub(crate) fn auth_failure(&self, reason: &'static str) {
        if let Ok(mut m) = self.auth_failures.lock() {
            *m.entry(reason).or_insert(0) += 1;
        }
    }

    /// The whole exposition: ours, the audit counters, and gauges of `core`.
    pub(crate) async fn render(&self, core: &Core, transport_sessions: usize) -> String {
        let mut out = String::with_capacity(4096);
        let _ = writeln!(
            out,
            "# HELP code_executor_http_requests_total Requests to /mcp by HTTP status.\n\
             # TYPE code_executor_http_requests_total counter"
        );
        if let Ok(m) = self.requests.lock() {
            for (status, n) in m.iter() {
                let _ = writeln!(
                    out,
                    "code_executor_http_requests_total{{status=\"{status}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP code_executor_auth_failures_total Requests refused by authentication, by reason.\n\
             # TYPE code_executor_auth_failures_total counter"
        );
        if let Ok(m) = self.auth_failures.lock() {
            for (reason, n) in m.iter() {
                let _ = writeln!(
                    out,
                    "code_executor_auth_failures_total{{reason=\"{reason}\"}} {n}"
                );
            }
        }
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP code_executor_http_connections_open Connections being served.\n\
             # TYPE code_executor_http_connections_open gauge\n\
             code_executor_http_connections_open {}\n\
             # HELP code_executor_http_connections_total Connections accepted.\n\
             # TYPE code_executor_http_connections_total counter\n\
             code_executor_http_connections_total {}\n\
             # HELP code_executor_http_connections_rejected_total Connections answered busy (over --max-connections).\n\
             # TYPE code_executor_http_connections_rejected_total counter\n\
             code_executor_http_connections_rejected_total {}\n\
             # HELP code_executor_http_busy_total Requests answered busy (503) by the HTTP layer's caps.\n\
             # TYPE code_executor_http_busy_total counter\n\
             code_executor_http_busy_total {}\n\
             # HELP code_executor_http_forbidden_total Requests refused by the Host/Origin checks (403).\n\
             # TYPE code_executor_http_forbidden_total counter\n\
             code_executor_http_forbidden_total {}\n\
             # HELP code_executor_transport_sessions MCP transport sessions (Mcp-Session-Id) open.\n\
             # TYPE code_executor_transport_sessions gauge\n\
             code_executor_transport_sessions {transport_sessions}",
            load(&self.connections_open),
            load(&self.connections_total),
            load(&self.connections_rejected),
            load(&self.busy),
            load(&self.forbidden_origin),
        );
        core.policy.audit.metrics.render(&mut out);
        let _ = writeln!(
            out,
            "# HELP code_executor_sessions Execution sessions live (a worker kept between executions).\n\
             # TYPE code_executor_sessions gauge\n\
             code_executor_sessions {}\n\
             # HELP code_executor_admission_in_flight Executions holding or waiting for a slot.\n\
             # TYPE code_executor_admission_in_flight gauge\n\
             code_executor_admission_in_flight {}",
            core.runtime.live().sessions().count(),
            core.policy.admission.in_flight(),
        );
        let _ = writeln!(
            out,
            "# HELP code_executor_handles_misrouted_total Handles of another replica refused \
             (sessions, requestStates, tasks): requests not routed on the affinity key.\n\
             # TYPE code_executor_handles_misrouted_total counter\n\
             code_executor_handles_misrouted_total {}",
            core.options.replica.misrouted(),
        );
        let pools = core.runtime.pool_stats().await;
        let families: [PoolFamily; 3] = [
            (
                "code_executor_pool_ready",
                "gauge",
                "Warm workers ready",
                |p| p.ready as u64,
            ),
            (
                "code_executor_pool_target",
                "gauge",
                "Warm workers kept",
                |p| p.target as u64,
            ),
            (
                "code_executor_pool_start_failures_total",
                "counter",
                "Workers that failed to start",
                |p| p.start_failures,
            ),
        ];
        for (name, kind, help, value) in families {
            let _ = writeln!(
                out,
                "# HELP {name} {help}, by language.\n# TYPE {name} {kind}"
            );
            for p in &pools {
                let _ = writeln!(out, "{name}{{language=\"{}\"}} {}", p.language, value(p));
            }
        }
        let _ = writeln!(
            out,
            "# HELP code_executor_resident_memory_bytes Resident memory of the server process.\n\
             # TYPE code_executor_resident_memory_bytes gauge\n\
             code_executor_resident_memory_bytes {}",
            resident_bytes().unwrap_or(0)
        );
        out
    }
}

/// A per-language pool metric: name, type, help, and its value for a pool.
type PoolFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&PoolStats) -> u64,
);

/// The server's resident set size, as the system tells it.
pub(crate) fn resident_bytes() -> Option<u64> {
    sandbox::process::resident_bytes(sandbox::process::Which::Me)
}
