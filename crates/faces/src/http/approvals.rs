//! `serve --http`'s approvals inbox (`approvals.fallback: "inbox"`, `runtime::host::inbox`):
//! each authenticated principal sees and answers only the approvals its own executions wait
//! on, behind the server's own authentication.
//!
//! - `GET /approvals`: the page (the loopback page's, without a token: the `Authorization`
//!   header authenticates every request, forms included);
//! - `GET /approvals.json`: the same list as JSON;
//! - `POST /approvals/<id>/approve`, `POST /approvals/<id>/deny`: the answer, audited with
//!   `via: "inbox-http"` and `answeredBy` (the principal). 303 to the page, or 200 JSON when
//!   the request accepts `application/json`.
//!
//! The Host and Origin checks run first (`guard`; a cross-site form is refused by its
//! Origin), then authentication as on `/mcp` (401/403 with `WWW-Authenticate`). A cookie
//! never authenticates, so no other site can make a browser answer. Another principal's
//! approval, an answered or timed-out one, and an id that is not plain digits are all the
//! same 404: nothing says whether it exists. A server that authenticates nobody (loopback
//! without tokens) serves no inbox here, since any local process could answer: its users
//! answer on the loopback page or in the terminal.

use std::sync::Arc;

use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use super::mcp::unauthorized;
use super::reply::{Body, full};
use super::state::State;
use runtime::host::inbox::{Decision, page_headers, parse_answer_path, render_page};

/// Largest answer body read (the page's form sends a few bytes).
const MAX_ANSWER_BYTES: usize = 4 * 1024;

/// Whether `path` is the inbox's.
pub(super) fn is_inbox_path(path: &str) -> bool {
    path == "/approvals" || path == "/approvals.json" || path.starts_with("/approvals/")
}

fn answer(status: StatusCode, kind: &str, body: impl Into<bytes::Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    page_headers(r.headers_mut(), kind);
    // No token rides in these URLs, and `no-referrer` would make the page's own forms send
    // `Origin: null`, which the Origin check refuses.
    r.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    r
}

fn not_found() -> Response<Body> {
    answer(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "no such approval waits for you (answered already, timed out, or never asked)\n",
    )
}

/// One request to `/approvals...`.
pub(super) async fn approvals(state: &Arc<State>, req: Request<Incoming>) -> Response<Body> {
    if !state.require_auth {
        return answer(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "this server authenticates nobody, so it serves no approvals inbox over HTTP: answer \
             on the loopback approvals page (its link is on the server's stderr) or with \
             `code-executor-mcp approvals`\n",
        );
    }
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let principal = match state.auth.authenticate(value).await {
        Ok(p) => p,
        Err(e) => return unauthorized(state, &e),
    };
    let me = principal.to_string();
    let inbox = state.core.runtime.inbox();
    let wants_json = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"));
    let path = req.uri().path().to_string();
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/approvals") => answer(
            StatusCode::OK,
            "text/html; charset=utf-8",
            render_page(&inbox.list(Some(&me)), None),
        ),
        (Method::GET, "/approvals.json") => answer(
            StatusCode::OK,
            "application/json",
            serde_json::to_vec(&inbox.list(Some(&me))).unwrap_or_default(),
        ),
        (Method::POST, p) => {
            let Some((id, approved)) = parse_answer_path(p) else {
                return not_found();
            };
            let read = tokio::time::timeout(
                state.limits.body_timeout,
                Limited::new(req.into_body(), MAX_ANSWER_BYTES).collect(),
            )
            .await;
            if !matches!(read, Ok(Ok(_))) {
                return answer(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "text/plain; charset=utf-8",
                    "an answer has no body to speak of\n",
                );
            }
            let decision = Decision {
                approved,
                via: "inbox-http",
                by: Some(me.clone()),
            };
            match inbox.decide(id, Some(&me), decision) {
                Ok(()) if wants_json => answer(StatusCode::OK, "application/json", "{\"ok\":true}"),
                Ok(()) => {
                    let mut r = answer(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", "");
                    let to = inbox.http_url().unwrap_or("/approvals");
                    if let Ok(v) = HeaderValue::from_str(to) {
                        r.headers_mut().insert(header::LOCATION, v);
                    }
                    r
                }
                Err(_) => not_found(),
            }
        }
        (Method::GET, _) => not_found(),
        _ => {
            let mut r = answer(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain; charset=utf-8",
                "the approvals inbox takes GET /approvals and POST /approvals/<id>/approve|deny\n",
            );
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
            r
        }
    }
}
