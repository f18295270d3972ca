//! `fetch` from code, made by the host: the sandbox has no network, so an HTTP request is a
//! [`worker_protocol::CallRequest::Fetch`] over the worker's pipe, checked and made here.
//!
//! - Every hop (the first request and each redirect, with its own method) is checked against
//!   the execution's grant ([`Grant::admit`]: scheme, host as written, port, method; a literal
//!   address too), which gives the hop's [`Reach`]: the special addresses a rule naming them
//!   admits for this port and method.
//! - The hop goes through a client whose resolver ([`GuardedResolver`](super::net::GuardedResolver)) holds that reach.
//!   Names are resolved once, there: every special address (loopback, private, link-local,
//!   CGNAT, multicast, IPv4-mapped, metadata...) outside the reach is dropped, and the request
//!   is refused when none is left; the connection goes to exactly the addresses it returned,
//!   so a second lookup cannot rebind the name. Clients are kept per reach, so a kept
//!   connection only serves hops whose reach admitted its address.
//! - Redirects are followed by hand, at most `maxRedirects`, each hop checked again;
//!   credentials (`Authorization`, `Cookie`) are dropped when the origin changes.
//! - Limits per request: requests, bytes per response (read in chunks and stopped at the
//!   cap), bytes in all (the skills a request calls count on its ledger), time per request
//!   within the execution's deadline.
//! - TLS is verified (the platform verifier, as for upstreams); no proxy from the
//!   environment; no header of ours but a `User-Agent`.
//! - Every hop gets one audit line (`net.fetch`: method, host, port, status, bytes, decision).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use worker_protocol::{CallError, CallOutcome, FetchRequest, FetchResponse};

use super::scope::{RunScope, err};
use policy::access::{Grant, Hop, MAX_REQUEST_BODY_BYTES, Unreachable};
use policy::audit::AuditEvent;

/// Header pairs code may send with one request.
const MAX_HEADERS: usize = 100;
/// Headers the host sets itself or that would change where or how the request goes.
const FORBIDDEN_HEADERS: [&str; 9] = [
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// The audit line of one hop.
struct HopRecord<'a> {
    scope: &'a RunScope,
    method: String,
    url: url::Url,
    started: Instant,
    request_bytes: usize,
}

impl HopRecord<'_> {
    fn write(
        &self,
        decision: &'static str,
        reason: Option<String>,
        address: Option<SocketAddr>,
        status: Option<u16>,
        response_bytes: u64,
    ) {
        self.scope.policy.audit.record(AuditEvent::Fetch {
            execution: self.scope.execution.clone(),
            method: self.method.clone(),
            scheme: self.url.scheme().to_string(),
            host: self.url.host_str().unwrap_or("").to_string(),
            port: self.url.port_or_known_default().unwrap_or(0),
            decision,
            reason,
            address: address.map(|a| a.ip().to_string()),
            status,
            request_bytes: self.request_bytes,
            response_bytes,
            duration_ms: (self.started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        });
    }
}

/// Makes the request `req` for the execution of `scope`, following redirects; never fails:
/// a refusal or a failure is an error the code sees.
pub async fn fetch(scope: &RunScope, req: FetchRequest) -> CallOutcome {
    let state = &scope.fetch;
    let grant = &*state.grant;
    let mut method = req.method.trim().to_ascii_uppercase();
    if !matches!(
        method.as_str(),
        "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS"
    ) {
        return err(
            CallError::Argument,
            format!("fetch: method \"{}\" is not supported", req.method),
        );
    }
    let mut url = match url::Url::parse(&req.url) {
        Ok(u) => u,
        Err(e) => {
            return err(
                CallError::Argument,
                format!("fetch: \"{}\" is not a URL: {e}", req.url),
            );
        }
    };
    url.set_fragment(None);
    if req.headers.len() > MAX_HEADERS {
        return err(
            CallError::Argument,
            format!("fetch: more than {MAX_HEADERS} headers"),
        );
    }
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &req.headers {
        let Ok(n) = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()) else {
            return err(
                CallError::Argument,
                format!("fetch: \"{name}\" is not a header name"),
            );
        };
        if FORBIDDEN_HEADERS.contains(&n.as_str()) {
            return err(
                CallError::Argument,
                format!("fetch: the {name} header is set by the host, not by code"),
            );
        }
        let Ok(v) = reqwest::header::HeaderValue::from_str(value) else {
            return err(
                CallError::Argument,
                format!("fetch: the value of header {name} is not valid"),
            );
        };
        headers.append(n, v);
    }
    let mut body: Option<Vec<u8>> = match &req.body {
        None => None,
        Some(b) => match B64.decode(b) {
            Ok(b) if b.len() > MAX_REQUEST_BODY_BYTES => {
                return err(
                    CallError::Limit,
                    format!(
                        "fetch: the request body is {} bytes; the limit is {MAX_REQUEST_BODY_BYTES}",
                        b.len()
                    ),
                );
            }
            Ok(b) => Some(b),
            Err(e) => {
                return err(CallError::Argument, format!("fetch: body: {e}"));
            }
        },
    };
    if body.is_some() && matches!(method.as_str(), "GET" | "HEAD") {
        return err(
            CallError::Argument,
            format!("fetch: a {method} request cannot have a body"),
        );
    }
    let mode = req.redirect.as_deref().unwrap_or("follow");
    if !matches!(mode, "follow" | "error" | "manual") {
        return err(
            CallError::Argument,
            format!("fetch: redirect must be follow, error or manual, not \"{mode}\""),
        );
    }
    let mut redirects = 0u32;
    loop {
        let record = HopRecord {
            scope,
            method: method.clone(),
            url: url.clone(),
            started: Instant::now(),
            request_bytes: body.as_ref().map_or(0, Vec::len),
        };
        let n = scope.ledger.fetch_requests.fetch_add(1, Ordering::Relaxed) + 1;
        if n > grant.fetch.max_requests {
            let reason = format!(
                "fetch: this execution reached its limit of {} requests (permissions.fetch.maxRequests; redirects and the skills it calls count)",
                grant.fetch.max_requests
            );
            record.write("deny", Some(reason.clone()), None, None, 0);
            return err(CallError::Limit, reason);
        }
        let reach = match grant.admit(&Hop {
            method: &method,
            url: &url,
        }) {
            Ok((_, reach)) => reach,
            Err(reason) => {
                let reason = if redirects > 0 {
                    format!("{reason} (reached by a redirect)")
                } else {
                    reason.to_string()
                };
                record.write("deny", Some(reason.clone()), None, None, 0);
                return err(CallError::Policy, reason);
            }
        };
        let client = match state.clients.get(&reach) {
            Ok(c) => c,
            Err(e) => {
                let e = e.to_string();
                record.write("allow", Some(e.clone()), None, None, 0);
                return err(CallError::Network, e);
            }
        };
        let remaining = scope
            .clock
            .deadline()
            .saturating_duration_since(Instant::now());
        let timeout = grant.fetch.timeout.min(remaining);
        let mut request = client
            .request(
                reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET),
                url.clone(),
            )
            .headers(headers.clone())
            .timeout(timeout);
        if let Some(b) = &body {
            request = request.body(b.clone());
        }
        let started = Instant::now();
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                if let Some(refused) = refused(&e) {
                    let refused = grant.unreachable(
                        refused.addr,
                        url.host_str().unwrap_or(""),
                        url.port_or_known_default().unwrap_or(0),
                        &method,
                    );
                    let reason = if redirects > 0 {
                        format!("{refused} (reached by a redirect)")
                    } else {
                        refused
                    };
                    record.write("deny", Some(reason.clone()), None, None, 0);
                    return err(CallError::Policy, reason);
                }
                let reason = describe(&e, &url, timeout);
                record.write("allow", Some(reason.clone()), None, None, 0);
                return err(CallError::Network, reason);
            }
        };
        let status = response.status();
        let address = response.remote_addr();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_string);
        if status.is_redirection() && mode != "manual" && location.is_some() {
            record.write("allow", None, address, Some(status.as_u16()), 0);
            if mode == "error" {
                return err(
                    CallError::Network,
                    format!("fetch: {url} redirected ({status}) and redirect is \"error\""),
                );
            }
            redirects += 1;
            if redirects > grant.fetch.max_redirects {
                return err(
                    CallError::Limit,
                    format!(
                        "fetch: more than {} redirects (permissions.fetch.maxRedirects)",
                        grant.fetch.max_redirects
                    ),
                );
            }
            let next = match url.join(location.as_deref().unwrap_or("")) {
                Ok(n) => n,
                Err(e) => {
                    return err(
                        CallError::Network,
                        format!("fetch: {url} redirected to an invalid location: {e}"),
                    );
                }
            };
            // 303, and 301/302 after a POST, turn into a GET without a body (as browsers do).
            let code = status.as_u16();
            if code == 303 && method != "HEAD" || (code == 301 || code == 302) && method == "POST" {
                method = "GET".into();
                body = None;
                headers.remove(reqwest::header::CONTENT_TYPE);
            }
            if next.origin() != url.origin() {
                for h in [
                    reqwest::header::AUTHORIZATION,
                    reqwest::header::COOKIE,
                    reqwest::header::PROXY_AUTHORIZATION,
                ] {
                    headers.remove(h);
                }
            }
            url = next;
            continue;
        }
        let head_headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let status_text = status.canonical_reason().unwrap_or("").to_string();
        let final_url = response.url().to_string();
        let left = timeout.saturating_sub(started.elapsed());
        let body = match tokio::time::timeout(
            left,
            read_capped(response, &scope.ledger.fetch_bytes, grant),
        )
        .await
        {
            Ok(Ok(b)) => b,
            Ok(Err((kind, reason, got))) => {
                record.write(
                    "allow",
                    Some(reason.clone()),
                    address,
                    Some(status.as_u16()),
                    got,
                );
                return err(kind, reason);
            }
            Err(_) => {
                let reason = format!(
                    "fetch: {url}: the body did not arrive within {} ms",
                    timeout.as_millis()
                );
                record.write(
                    "allow",
                    Some(reason.clone()),
                    address,
                    Some(status.as_u16()),
                    0,
                );
                return err(CallError::Network, reason);
            }
        };
        record.write(
            "allow",
            None,
            address,
            Some(status.as_u16()),
            body.len() as u64,
        );
        let answer = FetchResponse {
            status: status.as_u16(),
            status_text,
            url: final_url,
            redirected: redirects > 0,
            headers: head_headers,
            body: B64.encode(&body),
        };
        return match serde_json::value::to_raw_value(&answer) {
            Ok(value) => CallOutcome::Ok { value },
            Err(e) => err(
                CallError::Tool,
                format!("fetch: cannot encode the answer: {e}"),
            ),
        };
    }
}

/// The body, read in chunks and stopped at the response's and the execution's caps.
async fn read_capped(
    mut response: reqwest::Response,
    received: &std::sync::atomic::AtomicU64,
    grant: &Grant,
) -> Result<Vec<u8>, (CallError, String, u64)> {
    let max = grant.fetch.max_response_bytes;
    if let Some(len) = response.content_length()
        && len > max
    {
        return Err((
            CallError::Limit,
            format!(
                "fetch: the response body is {len} bytes; the limit is {max} (permissions.fetch.maxResponseBytes)"
            ),
            0,
        ));
    }
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let total =
                    received.fetch_add(chunk.len() as u64, Ordering::Relaxed) + chunk.len() as u64;
                if total > grant.fetch.max_total_bytes {
                    return Err((
                        CallError::Limit,
                        format!(
                            "fetch: this execution received more than {} bytes (permissions.fetch.maxTotalBytes; the skills it calls count too)",
                            grant.fetch.max_total_bytes
                        ),
                        body.len() as u64,
                    ));
                }
                if (body.len() + chunk.len()) as u64 > max {
                    return Err((
                        CallError::Limit,
                        format!(
                            "fetch: the response body is larger than {max} bytes (permissions.fetch.maxResponseBytes); it was not read further"
                        ),
                        body.len() as u64,
                    ));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => {
                return Err((
                    CallError::Network,
                    format!("fetch: reading the body failed: {e}"),
                    body.len() as u64,
                ));
            }
        }
    }
}

/// The reach's refusal of a resolution, if that is why the request failed.
fn refused(e: &reqwest::Error) -> Option<Unreachable> {
    tools::net::refused(e)
}

/// A network failure in words, with its innermost cause.
fn describe(e: &reqwest::Error, url: &url::Url, timeout: Duration) -> String {
    if e.is_timeout() {
        return format!("fetch: {url}: no answer within {} ms", timeout.as_millis());
    }
    let mut cause = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    format!("fetch: {url}: {cause}")
}

#[cfg(test)]
mod tests;
