//! Why an upstream did not start, in plain sentences: what happened and what to do about it,
//! never a Rust type name (rmcp's errors print their transport's full type).

use std::time::{Duration, Instant};

use rmcp::service::{ClientInitializeError, ServiceError};

use crate::config::{ServerSpec, Transport};

/// Longest pause between start attempts of a server that keeps failing.
pub(super) const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// How a stdio child ended and the end of its stderr, when known.
pub(super) type PostMortem = Option<(Option<String>, Vec<String>)>;

/// Where the user fixes this server's entry.
pub(super) fn fix_hint(spec: &ServerSpec) -> String {
    let what = match spec.transport {
        Transport::Stdio { .. } => "its command",
        Transport::Http { .. } | Transport::Sse { .. } => "its url",
        Transport::OpenApi(_) => "its spec, baseUrl and auth",
    };
    format!("check {what} in {}", spec.source.display())
}

/// `; its stderr ended: "a | b"`, or nothing.
fn stderr_tail(post: &PostMortem) -> String {
    match post {
        Some((_, tail)) if !tail.is_empty() => {
            format!("; its stderr ended: \"{}\"", tail.join(" | "))
        }
        _ => String::new(),
    }
}

/// An error and its sources, joined: `error sending request: connection refused`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = s.source();
    }
    parts.join(": ")
}

/// The stdio child exited or closed its output before `during` finished.
fn ended(post: &PostMortem, during: &str, spec: &ServerSpec) -> String {
    let how = match post {
        Some((Some(status), _)) => format!("it exited {status} before {during}"),
        _ => format!("it closed its output before {during}"),
    };
    format!("{how}{}; {}", stderr_tail(post), fix_hint(spec))
}

/// `initialize` failed.
pub(super) fn initialize(
    e: &ClientInitializeError,
    post: &PostMortem,
    spec: &ServerSpec,
) -> String {
    let stdio = matches!(spec.transport, Transport::Stdio { .. });
    let during = "answering initialize";
    match e {
        ClientInitializeError::LegacyFallbackFailed { fallback, .. } => {
            initialize(fallback, post, spec)
        }
        ClientInitializeError::ConnectionClosed(_) => ended(post, during, spec),
        ClientInitializeError::TransportError { .. } if stdio => ended(post, during, spec),
        ClientInitializeError::TransportError { error, .. } => format!(
            "the server could not be reached: {}; {}",
            chain(error.error.as_ref()),
            fix_hint(spec)
        ),
        ClientInitializeError::JsonRpcError(e) => format!(
            "it refused initialize: {}{}; {}",
            e.message,
            stderr_tail(post),
            fix_hint(spec)
        ),
        ClientInitializeError::NoCompatibleProtocolVersion {
            client_supported,
            server_supported,
        } => {
            let list = |v: &[rmcp::model::ProtocolVersion]| {
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!(
                "it speaks none of our MCP protocol versions (it offers {}; we speak {}); \
                 update the server or code-executor-mcp",
                list(server_supported),
                list(client_supported)
            )
        }
        ClientInitializeError::Cancelled => "its start was cancelled".to_string(),
        ClientInitializeError::ExpectedInitResponse(_)
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ConflictInitResponseId(..)
        | ClientInitializeError::UncorrelatedErrorResponse { .. } => format!(
            "it answered initialize with something other than an MCP initialize result{}; is it \
             an MCP server{}? {}",
            stderr_tail(post),
            if stdio {
                " that writes only JSON-RPC to stdout"
            } else {
                ""
            },
            fix_hint(spec)
        ),
        other => format!("initialize failed: {other}; {}", fix_hint(spec)),
    }
}

/// `tools/list` failed after a successful `initialize`.
pub(super) fn list_tools(e: &ServiceError, post: &PostMortem, spec: &ServerSpec) -> String {
    match e {
        ServiceError::McpError(e) => format!(
            "it answered initialize but refused tools/list: {}; {}",
            e.message,
            fix_hint(spec)
        ),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            ended(post, "answering tools/list", spec)
        }
        ServiceError::UnexpectedResponse => format!(
            "it answered tools/list with something other than a tool list; {}",
            fix_hint(spec)
        ),
        other => format!("tools/list failed: {other}; {}", fix_hint(spec)),
    }
}

/// No answer within the connect timeout.
pub(super) fn timed_out(timeout: Duration, post: &PostMortem, spec: &ServerSpec) -> String {
    format!(
        "no answer to initialize/tools/list within {} ms (connectTimeoutMs){}; if it is slow to \
         start, raise connectTimeoutMs in the settings, else {}",
        timeout.as_millis(),
        stderr_tail(post),
        fix_hint(spec)
    )
}

/// `reason (next attempt in Ns)` while the pause lasts.
pub(super) fn with_next_attempt(reason: &str, at: Instant, pause: Duration) -> String {
    match pause.checked_sub(at.elapsed()) {
        Some(left) if !left.is_zero() => {
            format!("{reason} (next attempt in {}s)", left.as_secs_f64().ceil())
        }
        _ => format!("{reason} (it is tried again on next use)"),
    }
}

/// Pause before the next start after `failures` failed starts in a row (a start that did not
/// answer within the connect timeout counts as one): 1 s, 2 s, 4 s ... up to
/// [`MAX_RETRY_PAUSE`](MAX_RETRY_PAUSE), so a server that hangs or dies at start is not started again by
/// every request that looks at it.
pub(super) fn retry_pause(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => Duration::from_secs(1u64 << (n - 1).min(5)).min(MAX_RETRY_PAUSE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_pauses_grow_and_stop_growing() {
        let pauses: Vec<u64> = (0..10).map(|n| retry_pause(n).as_secs()).collect();
        assert_eq!(pauses, [0, 1, 2, 4, 8, 16, 30, 30, 30, 30]);
    }
}
