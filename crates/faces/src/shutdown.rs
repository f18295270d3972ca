//! The signals that end a server: SIGTERM (a client or supervisor stopping it) and SIGINT.
//!
//! Both transports stop on them the same way as on the end of their input: running
//! executions are cancelled, sessions end (their workspaces are deleted, each end audited),
//! and the audit log is flushed before the process exits.

/// Resolves when the process gets SIGTERM or SIGINT, and says which.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = tokio::signal::ctrl_c() => "SIGINT",
    }
}
