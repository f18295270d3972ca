//! The approvals inbox: where a call needing approval waits when the client cannot be asked
//! (no elicitation, no input requests) and `approvals.fallback` is `"inbox"`.
//!
//! A pending approval holds what a person needs to decide (server, tool, the arguments as the
//! code sent them, so personal-data tokens rather than values, secret-looking values masked;
//! the code around the call, [`code_around`]; who asked and when) and a one-shot channel for
//! the answer. The call waits up to
//! `approvals.timeoutMs`, with the execution's deadline running (a run that ends drops its
//! entry). A person answers from:
//!
//! - the page: a listener on 127.0.0.1 (random port) started on first need, whose link carries
//!   a one-time random token (compared in constant time, never logged; the link is printed once
//!   on stderr). Answers are POSTs carrying the token in a form field or the
//!   `x-approvals-token` header (a cookie alone never counts). Everything shown is HTML-escaped
//!   and the page is served under `Content-Security-Policy: default-src 'none'` with no
//!   external resources.
//! - the terminal: `code-executor-mcp approvals` finds running servers through one file per
//!   server, `$XDG_RUNTIME_DIR/code-executor-mcp/approvals/<pid>.json` (else the state
//!   directory), mode 0600, holding the page's URL and token.
//!
//! - `serve --http` with authentication (`crate::http`'s `approvals` module): `/approvals` on
//!   the server itself, behind its bearer authentication, listing and answering only the
//!   caller's own approvals ([`Inbox::list`] and [`Inbox::decide`] take the principal; the
//!   page and the terminal, holding the token, see all of them).
//!
//! Each answer is audited with who gave it (`via`: `inbox-page` / `inbox-terminal` /
//! `inbox-http`, the latter with `answeredBy`, the principal).

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio::sync::{OnceCell, oneshot};

/// Pending approvals kept at most (a further call is refused as if nobody answered).
const MAX_PENDING: usize = 256;
/// Largest POST body the page reads.
const MAX_FORM_BYTES: usize = 4 * 1024;
/// The header carrying the token (for the terminal command and scripts).
pub const TOKEN_HEADER: &str = "x-approvals-token";
/// The header naming who answers (`terminal`; otherwise the page).
pub const VIA_HEADER: &str = "x-approvals-via";

/// What the inbox could not do.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("the approvals inbox is full ({MAX_PENDING} pending); answer or wait for some first")]
    Full,
    #[error("no pending approval {0} (answered already, timed out, or not yours)")]
    NotFound(u64),
    #[error("the approvals page could not listen on 127.0.0.1: {0}")]
    Listen(std::io::Error),
}

/// One pending approval as a person sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pending {
    pub id: u64,
    /// Who started the execution.
    pub principal: String,
    pub execution: String,
    pub server: String,
    pub tool: String,
    /// The rule that asks.
    pub rule: String,
    /// The arguments, as shown (masked, cut).
    pub arguments: String,
    /// The code around the call (numbered lines, masked, cut; see [`code_around`]).
    #[serde(default)]
    pub code: String,
    /// Seconds since the epoch when it was asked.
    pub asked_at: u64,
}

/// A person's answer and who gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub approved: bool,
    /// `inbox-page`, `inbox-terminal` (both the local user holding the page's token) or
    /// `inbox-http` (an authenticated principal of `serve --http`).
    pub via: &'static str,
    /// The principal who answered, over HTTP (`None`: the local user of the page's token).
    pub by: Option<String>,
}

impl Decision {
    /// An answer of the local user holding the page's token.
    pub fn local(approved: bool, via: &'static str) -> Decision {
        Decision {
            approved,
            via,
            by: None,
        }
    }
}

/// Where the page listens.
#[derive(Debug, Clone)]
pub struct PageLink {
    /// `http://127.0.0.1:<port>/approvals` (no token).
    pub url: String,
    token: String,
}

impl PageLink {
    /// The link with its token, for the person only.
    fn with_token(&self) -> String {
        format!("{}?token={}", self.url, self.token)
    }
}

/// The server-wide inbox.
#[derive(Default)]
pub struct Inbox {
    pending: Mutex<BTreeMap<u64, (Pending, oneshot::Sender<Decision>)>>,
    next: AtomicU64,
    page: OnceCell<PageLink>,
    /// Where principals answer their own approvals under `serve --http` with
    /// authentication (`<public URL>/approvals`), once that server runs.
    http_url: std::sync::OnceLock<String>,
}

/// Removes its entry when the waiting call ends, however it ends.
pub struct Waiting<'a> {
    inbox: &'a Inbox,
    pub id: u64,
    pub answer: oneshot::Receiver<Decision>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.inbox.lock().remove(&self.id);
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

impl Inbox {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<u64, (Pending, oneshot::Sender<Decision>)>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Files a pending approval (its `id` and `asked_at` are set here).
    pub fn submit(&self, mut p: Pending) -> Result<Waiting<'_>, InboxError> {
        let mut all = self.lock();
        if all.len() >= MAX_PENDING {
            return Err(InboxError::Full);
        }
        p.id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        p.asked_at = now_secs();
        let (tx, rx) = oneshot::channel();
        let id = p.id;
        all.insert(id, (p, tx));
        Ok(Waiting {
            inbox: self,
            id,
            answer: rx,
        })
    }

    /// The pending approvals `principal` may see (all of them for `None`: the local user
    /// holding the page's token).
    pub fn list(&self, principal: Option<&str>) -> Vec<Pending> {
        self.lock()
            .values()
            .filter(|(p, _)| principal.is_none_or(|w| p.principal == w))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Answers pending approval `id`, if `principal` may see it.
    pub fn decide(
        &self,
        id: u64,
        principal: Option<&str>,
        decision: Decision,
    ) -> Result<(), InboxError> {
        let mut all = self.lock();
        let visible = all
            .get(&id)
            .is_some_and(|(p, _)| principal.is_none_or(|w| p.principal == w));
        if !visible {
            return Err(InboxError::NotFound(id));
        }
        let Some((_, tx)) = all.remove(&id) else {
            return Err(InboxError::NotFound(id));
        };
        tx.send(decision).map_err(|_| InboxError::NotFound(id))
    }

    /// Says that `serve --http` (with authentication) serves each principal its own
    /// approvals at `url`.
    pub fn serve_over_http(&self, url: String) {
        let _ = self.http_url.set(url);
    }

    /// Where principals answer over `serve --http`, if it does.
    pub fn http_url(&self) -> Option<&str> {
        self.http_url.get().map(String::as_str)
    }

    /// The page, started on first need (127.0.0.1, random port, a fresh token), its link
    /// printed once on stderr and written to the terminal command's file.
    pub async fn page(self: &Arc<Self>) -> Result<&PageLink, InboxError> {
        self.page
            .get_or_try_init(|| async {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .map_err(InboxError::Listen)?;
                let port = listener.local_addr().map_err(InboxError::Listen)?.port();
                let link = PageLink {
                    url: format!("http://127.0.0.1:{port}/approvals"),
                    token: random_token(),
                };
                let inbox = Arc::downgrade(self);
                let token = link.token.clone();
                tokio::spawn(async move {
                    while let Ok((stream, _)) = listener.accept().await {
                        let Some(inbox) = inbox.upgrade() else { break };
                        let token = token.clone();
                        tokio::spawn(async move {
                            let svc = hyper::service::service_fn(move |req| {
                                let inbox = inbox.clone();
                                let token = token.clone();
                                async move {
                                    Ok::<_, Infallible>(serve(&inbox, &token, port, req).await)
                                }
                            });
                            // A client that never finishes its headers is cut off.
                            let _ = hyper::server::conn::http1::Builder::new()
                                .timer(hyper_util::rt::TokioTimer::new())
                                .header_read_timeout(std::time::Duration::from_secs(10))
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                });
                tools::console::tell(&format!(
                    "code-executor-mcp: a call waits for your approval: open {} (or run `code-executor-mcp approvals`)",
                    link.with_token()
                ));
                if let Err(e) = write_link_file(&link) {
                    tracing::warn!("approvals: could not write the terminal command's file: {e}");
                }
                Ok(link)
            })
            .await
    }
}

/// 32 random bytes, hex.
fn random_token() -> String {
    let mut b = [0u8; 32];
    if getrandom::fill(&mut b).is_err() {
        // Without randomness no token can be trusted: the page then refuses every request
        // (an empty token never matches).
        return String::new();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether `given` is the token (constant time; an empty token never matches).
fn token_ok(token: &str, given: &str) -> bool {
    !token.is_empty() && token.as_bytes().ct_eq(given.as_bytes()).into()
}

/// The directory of the terminal command's files.
pub fn link_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("code-executor-mcp"))
        .or_else(policy::audit::state_dir)
        .map(|d| d.join("approvals"))
}

/// What the terminal command's file holds.
#[derive(Debug, Serialize, Deserialize)]
pub struct LinkFile {
    pub pid: u32,
    pub url: String,
    pub token: String,
}

/// Our effective uid (the owner of `/proc/self`).
pub fn own_uid() -> std::io::Result<u32> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata("/proc/self")?.uid())
}

/// Whether `meta` (of a link file) is one only we could have written: ours, mode 0600 or
/// tighter. The terminal command trusts no other (another user could point it elsewhere).
pub fn link_file_trusted(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    meta.is_file() && own_uid().is_ok_and(|me| meta.uid() == me) && meta.mode() & 0o077 == 0
}

fn write_link_file(link: &PageLink) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
    let Some(dir) = link_dir() else {
        return Ok(());
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    // A directory that was there already must be ours (not a link), and only ours.
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != own_uid()? {
        return Err(std::io::Error::other(format!(
            "{} is not a directory of this user; remove it",
            dir.display()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    // Written whole under another name, then renamed: a reader never sees half a file.
    let path = dir.join(format!("{}.json", std::process::id()));
    let partial = dir.join(format!(".{}.json.partial", std::process::id()));
    let _ = std::fs::remove_file(&partial);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)?;
    let body = serde_json::to_vec(&LinkFile {
        pid: std::process::id(),
        url: link.url.clone(),
        token: link.token.clone(),
    })?;
    f.write_all(&body)?;
    f.sync_all()?;
    std::fs::rename(&partial, &path)
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    page_headers(r.headers_mut(), kind);
    r
}

/// The headers of every answer of the inbox, the loopback page's and `serve --http`'s: its
/// content type, a CSP allowing nothing but forms to itself (no script, style, image or
/// frame), no sniffing, no referrer (the link carries the token), no caching.
pub fn page_headers(h: &mut hyper::HeaderMap, kind: &str) {
    let set = |h: &mut hyper::HeaderMap, k: &'static str, v: &str| {
        if let Ok(v) = hyper::header::HeaderValue::from_str(v) {
            h.insert(k, v);
        }
    };
    set(h, "content-type", kind);
    set(
        h,
        "content-security-policy",
        "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "cache-control", "no-store");
}

fn query_param(query: Option<&str>, key: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Whether a request to the page on `port` names it as itself: `Host` is 127.0.0.1 or
/// localhost on that port (a page of another site that a rebinding DNS points here names
/// its own), and an `Origin`, when one is sent and is not `null` (the page's own forms send
/// `null` under its `no-referrer` policy), is this page's. The token is needed besides.
fn addressed_here(host: Option<&str>, origin: Option<&str>, port: u16) -> bool {
    let ours = |authority: &str| {
        let a = authority.to_ascii_lowercase();
        a == format!("127.0.0.1:{port}") || a == format!("localhost:{port}")
    };
    host.is_some_and(ours)
        && origin.is_none_or(|o| o == "null" || o.strip_prefix("http://").is_some_and(ours))
}

/// One request to the page on `port`.
async fn serve(inbox: &Inbox, token: &str, port: u16, req: Request<Incoming>) -> Reply {
    let path = req.uri().path().to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    if !addressed_here(header("host").as_deref(), header("origin").as_deref(), port) {
        return reply(
            StatusCode::FORBIDDEN,
            "text/plain",
            "this page answers only requests addressed to it (Host 127.0.0.1 or localhost on its port, and its own Origin)\n",
        );
    }
    let header_token = header(TOKEN_HEADER);
    let via = if header(VIA_HEADER).as_deref() == Some("terminal") {
        "inbox-terminal"
    } else {
        "inbox-page"
    };
    let denied = || {
        reply(
            StatusCode::FORBIDDEN,
            "text/plain",
            "wrong or missing token\n",
        )
    };
    match (req.method().clone(), path.as_str()) {
        (Method::GET, "/approvals") => {
            let given = query_param(req.uri().query(), "token").or(header_token);
            if !given.is_some_and(|g| token_ok(token, &g)) {
                return denied();
            }
            reply(
                StatusCode::OK,
                "text/html; charset=utf-8",
                render_page(&inbox.list(None), Some(token)),
            )
        }
        (Method::GET, "/approvals.json") => {
            if !header_token.is_some_and(|g| token_ok(token, &g)) {
                return denied();
            }
            let body = serde_json::to_vec(&inbox.list(None)).unwrap_or_default();
            reply(StatusCode::OK, "application/json", body)
        }
        (Method::POST, p) => {
            let Some((id, approved)) = parse_answer_path(p) else {
                return reply(StatusCode::NOT_FOUND, "text/plain", "not found\n");
            };
            let body = match Limited::new(req.into_body(), MAX_FORM_BYTES)
                .collect()
                .await
            {
                Ok(b) => b.to_bytes(),
                Err(_) => return reply(StatusCode::PAYLOAD_TOO_LARGE, "text/plain", "too large\n"),
            };
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let given = header_token.or_else(|| form.get("token").cloned());
            if !given.is_some_and(|g| token_ok(token, &g)) {
                return denied();
            }
            match inbox.decide(id, None, Decision::local(approved, via)) {
                Ok(()) if via == "inbox-page" => {
                    let mut r = reply(StatusCode::SEE_OTHER, "text/plain", "");
                    if let Ok(v) =
                        hyper::header::HeaderValue::from_str(&format!("/approvals?token={token}"))
                    {
                        r.headers_mut().insert("location", v);
                    }
                    r
                }
                Ok(()) => reply(StatusCode::OK, "application/json", "{\"ok\":true}"),
                Err(e) => reply(StatusCode::NOT_FOUND, "text/plain", format!("{e}\n")),
            }
        }
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    }
}

/// `/approvals/<id>/approve` or `/approvals/<id>/deny`, the id in plain digits: anything
/// else (`..`, percent-encoding, a sign, a trailing slash, a second segment) is no answer.
pub fn parse_answer_path(p: &str) -> Option<(u64, bool)> {
    let rest = p.strip_prefix("/approvals/")?;
    let (id, what) = rest.split_once('/')?;
    let approved = match what {
        "approve" => true,
        "deny" => false,
        _ => return None,
    };
    // Ids start at 1: one spelling each (no leading zero).
    if id.is_empty()
        || id.len() > 19
        || id.starts_with('0')
        || !id.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((id.parse().ok()?, approved))
}

/// Lines shown before and after the line of the call.
const CODE_CONTEXT_LINES: usize = 3;
/// Most lines of code shown.
const MAX_CODE_LINES: usize = 16;
/// Longest line of code shown; longer is cut.
const MAX_CODE_LINE_CHARS: usize = 160;

/// Whether `line` names `name` as a whole word (not inside a longer identifier).
fn names(line: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    !name.is_empty()
        && line.match_indices(name).any(|(at, _)| {
            !word(line[..at].chars().next_back()) && !word(line[at + name.len()..].chars().next())
        })
}

/// The code around a call to `tool`, as a person asked to approve it sees it: the lines
/// around the first line naming the tool (as written, or as the identifier the wrappers
/// make of it), marked `>`; the first lines when no line does. Numbered, each line cut at
/// [`MAX_CODE_LINE_CHARS`], [`MAX_CODE_LINES`] at most. The sandbox reports no line of a
/// call, so the first line naming the tool stands for it.
pub fn code_around(code: &str, tool: &str) -> String {
    let ident: String = tool
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { '_' })
        .collect();
    let lines: Vec<&str> = code.lines().collect();
    let at = lines
        .iter()
        .position(|l| names(l, tool) || names(l, &ident));
    let (from, to) = match at {
        Some(i) => (
            i.saturating_sub(CODE_CONTEXT_LINES),
            (i + CODE_CONTEXT_LINES + 1).min(lines.len()),
        ),
        None => (0, lines.len().min(MAX_CODE_LINES)),
    };
    let to = to.min(from + MAX_CODE_LINES);
    let mut out = String::new();
    if from > 0 {
        out.push_str(&format!("  … ({from} lines before)\n"));
    }
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        let mark = if Some(i) == at { '>' } else { ' ' };
        let mut shown: String = line.chars().take(MAX_CODE_LINE_CHARS).collect();
        if line.chars().count() > MAX_CODE_LINE_CHARS {
            shown.push_str(" … (cut)");
        }
        out.push_str(&format!("{mark}{:>4} | {shown}\n", i + 1));
    }
    if to < lines.len() {
        out.push_str(&format!("  … ({} lines after)\n", lines.len() - to));
    }
    out
}

/// HTML-escapes text (arguments are attacker-controlled).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page listing `pending`: each approval's tool, who asked, the rule, its arguments and
/// the code around the call, everything escaped, with an Approve and a Deny form. On the
/// loopback page the forms carry the `token`; over `serve --http` (`None`) the caller's
/// `Authorization` header authenticates the POST instead.
pub fn render_page(pending: &[Pending], token: Option<&str>) -> String {
    let mut body = String::new();
    if pending.is_empty() {
        body.push_str("<p id=\"empty\">No approvals are waiting.</p>");
    }
    for p in pending {
        let form = |what: &str, label: &str| {
            let hidden = token.map_or(String::new(), |t| {
                format!(
                    "<input type=\"hidden\" name=\"token\" value=\"{}\">",
                    escape(t)
                )
            });
            format!(
                "<form method=\"post\" action=\"/approvals/{}/{what}\">{hidden}<button type=\"submit\" name=\"do\" value=\"{what}\">{label}</button></form>",
                p.id,
            )
        };
        let code = if p.code.is_empty() {
            String::new()
        } else {
            format!(
                "<h3>The code around the call</h3><pre class=\"code\">{}</pre>",
                escape(&p.code)
            )
        };
        body.push_str(&format!(
            "<section class=\"pending\" id=\"approval-{id}\"><h2>#{id}: <span class=\"server\">{server}</span> / <span class=\"tool\">{tool}</span></h2><p>Asked by <b class=\"principal\">{principal}</b> (execution {execution}) at {at} (seconds since 1970); rule: {rule}</p><h3>Arguments</h3><pre class=\"arguments\">{args}</pre>{code}{approve}{deny}</section>",
            id = p.id,
            server = escape(&p.server),
            tool = escape(&p.tool),
            principal = escape(&p.principal),
            execution = escape(&p.execution),
            at = p.asked_at,
            rule = escape(&p.rule),
            args = escape(&p.arguments),
            approve = form("approve", "Approve"),
            deny = form("deny", "Deny"),
        ));
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>code-executor-mcp approvals</title></head><body><h1>Approvals waiting</h1>{body}</body></html>"
    )
}

#[cfg(test)]
#[path = "inbox_tests.rs"]
mod tests;
