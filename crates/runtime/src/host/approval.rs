//! The approval gate: a call to a tool the settings mark (`policy::approval`) waits, after
//! every other check and before anything goes upstream, for a person's answer.
//!
//! The question is an `elicitation/create` form showing the server, the tool, the rule that
//! asks and the arguments (shortened, secret-looking values masked), with four answers:
//! approve this call, approve the tool for the rest of the execution, approve it for the
//! session (the execution's session, or else this client while the server runs), or deny.
//! It reaches the client inline or by MRTR ([`ClientLink::ask`]); a client that can be asked
//! neither way gets the configured fallback, and the error says so. While the question is
//! open the execution's deadline stands still ([`crate::run::clock`]); the wait has
//! its own limit (`approvals.timeoutMs`), after which the call is denied. Every question and
//! its answer is an `approval` audit line.
//!
//! [`ClientLink::ask`]: crate::run::client::ClientLink::ask

use std::time::Instant;

use policy::invisible::reveal;
use rmcp::model::Tool;
use serde_json::{Map, Value, json};

use super::scope::RunScope;
use crate::run::calllog::Entry;
use crate::run::client::{AskError, InputRoute};
use policy::approval::Fallback;
use policy::audit::{AuditEvent, sha256_hex};
use policy::qualified_name;

/// Longest argument text shown in a question; longer is cut with a note.
const MAX_SHOWN_ARGUMENT_CHARS: usize = 1_500;
/// Longest single string value shown; longer is cut with its length.
const MAX_SHOWN_STRING_CHARS: usize = 200;
/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Once,
    Execution,
    Session,
    Deny,
}

impl Answer {
    fn parse(result: &Value) -> Answer {
        if result["action"] != "accept" {
            return Answer::Deny;
        }
        match result["content"]["decision"].as_str() {
            Some("once") => Answer::Once,
            Some("execution") => Answer::Execution,
            Some("session") => Answer::Session,
            _ => Answer::Deny,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Answer::Once => "once",
            Answer::Execution => "execution",
            Answer::Session => "session",
            Answer::Deny => "deny",
        }
    }
}

/// Waits for approval of a call to `tool` of `server` with `args`, which `rule` marks; `Err`
/// is the reason of the denial the code sees as `ApprovalDenied`. When nothing remembered
/// answers it, the request's call log says a person is being asked, then the answer
/// (`crate::run::calllog`): a run lost while it waits can be resumed there.
pub(super) async fn gate(
    scope: &RunScope,
    server: &str,
    tool: &Tool,
    args: &Map<String, Value>,
    rule: &str,
) -> Result<(), Denied> {
    let qualified = qualified_name(server, &tool.name);
    let session_key = remembered_key(scope);
    let remembered = |scope: &RunScope| {
        if scope.approvals.execution_has(&qualified) {
            Some("execution")
        } else if scope.approvals.remembered.has(&session_key, &qualified) {
            Some("session")
        } else {
            None
        }
    };
    let asks = remembered(scope).is_none();
    if asks {
        scope
            .ledger
            .calls
            .record(Entry::Asking {
                tool: qualified.clone(),
            })
            .await;
    }
    let answer = ask(scope, server, tool, args, rule).await;
    if asks {
        let decision = match &answer {
            Err(_) => "denied",
            Ok(()) => remembered(scope).unwrap_or("once"),
        };
        scope
            .ledger
            .calls
            .record(Entry::Approval {
                tool: qualified,
                decision: decision.into(),
            })
            .await;
    }
    answer.map_err(Denied)
}

/// A call a person (or the fallback) did not approve: why, as code sees it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Denied(pub(super) String);

/// The answers a replayed run's log had (`(tool, decision)`), applied as they were: a tool
/// approved for the execution or the session is not asked about again.
pub(super) fn replayed(scope: &RunScope, approvals: &[(String, String)]) {
    for (tool, decision) in approvals {
        match decision.as_str() {
            "execution" => scope.approvals.execution_add(tool),
            "session" => scope.approvals.remembered.add(&remembered_key(scope), tool),
            _ => {}
        }
    }
}

/// [`gate`]'s question and its answer.
async fn ask(
    scope: &RunScope,
    server: &str,
    tool: &Tool,
    args: &Map<String, Value>,
    rule: &str,
) -> Result<(), String> {
    let qualified = qualified_name(server, &tool.name);
    let started = Instant::now();
    let record_by = |via: &'static str,
                     answer: &'static str,
                     reason: Option<String>,
                     answered_by: Option<String>| {
        scope.policy.audit.record(AuditEvent::Approval {
            execution: scope.execution.clone(),
            server: server.to_string(),
            tool: tool.name.to_string(),
            rule: rule.to_string(),
            via,
            answer,
            reason,
            answered_by,
            waited_ms: started.elapsed().as_millis() as u64,
            args_sha256: sha256_hex(&serde_json::to_vec(args).unwrap_or_default()),
        });
    };
    let record = |via: &'static str, answer: &'static str, reason: Option<String>| {
        record_by(via, answer, reason, None);
    };
    // One question at a time per execution: parallel calls to one tool ask once, and an
    // answer for the execution or session covers the calls waiting behind it.
    let _turn = scope.approvals.asking.lock().await;
    let session_key = remembered_key(scope);
    if scope.approvals.execution_has(&qualified)
        || scope.approvals.remembered.has(&session_key, &qualified)
    {
        record("remembered", "approved", None);
        return Ok(());
    }
    let fallback = |why: String| {
        let fb = scope.policy.approvals.fallback;
        let reason = format!(
            "{qualified} needs approval ({rule}) and {why}; the configured fallback is \
             {} (approvals.fallback)",
            fb.as_str()
        );
        match fb {
            Fallback::Allow => {
                record("fallback", "approved", Some(reason));
                Ok(())
            }
            Fallback::Deny | Fallback::Inbox => {
                record("fallback", "denied", Some(reason.clone()));
                Err(reason)
            }
        }
    };
    let inbox = |why: String| async move {
        let (via, answer, reason, by) = wait_in_inbox(scope, server, tool, args, rule, &why).await;
        record_by(via, answer, reason.clone(), by);
        match reason {
            Some(r) => Err(r),
            None => Ok(()),
        }
    };
    let inbox_on = scope.policy.approvals.fallback == Fallback::Inbox;
    let Some(client) = &scope.client else {
        let why = "no client can be asked (the execution was not started by one)".to_string();
        return if inbox_on {
            inbox(why).await
        } else {
            fallback(why)
        };
    };
    let via = match client.route {
        InputRoute::Inline => "elicitation",
        InputRoute::Mrtr(_) => "input_required",
    };
    let mut request = question(server, tool, args, rule);
    // Values of the configured upstreams' secrets are never shown, whatever key holds them.
    if let Some(m) = request["params"]["message"].as_str() {
        request["params"]["message"] = Value::String(scope.policy.redact(m));
    }
    let timeout = scope.policy.approvals.timeout();
    let answer = {
        let _paused = scope.clock.pause();
        client.ask(request, timeout).await
    };
    match answer {
        Ok(result) => {
            let answer = Answer::parse(&result);
            record(via, answer.as_str(), None);
            match answer {
                Answer::Once => Ok(()),
                Answer::Execution => {
                    scope.approvals.execution_add(&qualified);
                    Ok(())
                }
                Answer::Session => {
                    scope.approvals.remembered.add(&session_key, &qualified);
                    Ok(())
                }
                Answer::Deny => Err(format!(
                    "{qualified} was denied by the person asked to approve it ({rule})"
                )),
            }
        }
        Err(AskError::Unsupported(cap)) => {
            let why = format!("the client cannot be asked (no {cap} capability)");
            if inbox_on {
                inbox(why).await
            } else {
                fallback(why)
            }
        }
        Err(e @ AskError::Timeout(_)) => {
            let reason = format!("{qualified} needs approval ({rule}) and {e}; it is denied");
            record(via, "timeout", Some(reason.clone()));
            Err(reason)
        }
        Err(e @ AskError::Failed(_)) => {
            let reason = format!("{qualified} needs approval ({rule}) and {e}; it is denied");
            record(via, "failed", Some(reason.clone()));
            Err(reason)
        }
    }
}

/// What the inbox's wait gives the audit line: `via`, `answer`, the denial's reason (`None`
/// when approved) and who answered (over HTTP).
type InboxOutcome = (&'static str, &'static str, Option<String>, Option<String>);

/// Where a person approves, as the model is told (never with the page's token): the
/// loopback page and the terminal when the page runs, the HTTP route when there is one.
fn where_to_approve(page: Option<&str>, http: Option<&str>) -> String {
    let local = page.map(|page| {
        format!(
            "on the approvals page {page} (the link with its token is on the server's stderr) \
             or with `code-executor-mcp approvals` on the server's machine"
        )
    });
    match (http, local) {
        (Some(url), local) => format!(
            "a person approves or denies it at {url} (sending the same credentials as this MCP \
             connection: it shows each caller only its own approvals){}",
            local.map(|l| format!(", or {l}")).unwrap_or_default()
        ),
        (None, local) => format!(
            "a person approves or denies it {}",
            local.unwrap_or_default()
        ),
    }
}

/// Waits for a person's answer in the approvals inbox. The execution's deadline keeps
/// running; the wait is bounded by `approvals.timeoutMs`.
async fn wait_in_inbox(
    scope: &RunScope,
    server: &str,
    tool: &Tool,
    args: &Map<String, Value>,
    rule: &str,
    why: &str,
) -> InboxOutcome {
    let qualified = qualified_name(server, &tool.name);
    let failed = |e: &dyn std::fmt::Display| -> InboxOutcome {
        (
            "inbox",
            "failed",
            Some(format!(
                "{qualified} needs approval ({rule}) and {why}; {e}; it is denied"
            )),
            None,
        )
    };
    let inbox = scope.approvals.remembered.inbox.clone();
    let link = match inbox.page().await {
        Ok(l) => Some(l.url.clone()),
        // Under `serve --http` the server's own route still reaches a person.
        Err(e) if inbox.http_url().is_some() => {
            tracing::warn!("approvals: {e}; answers come only through /approvals over HTTP");
            None
        }
        Err(e) => return failed(&e),
    };
    // What a person judges shows every character they would not see for what it is.
    let shown = |s: &str| reveal(s).into_owned();
    let arguments = scope.policy.redact(&shown_arguments(args));
    let pending = super::inbox::Pending {
        id: 0,
        // Kept as it is: the inbox matches it against the principal that asks to see it
        // (the page escapes it; names come from the server's own authentication).
        principal: scope.principal.to_string(),
        execution: scope.execution.clone(),
        server: shown(server),
        tool: shown(&tool.name),
        rule: shown(rule),
        arguments,
        code: scope
            .code
            .as_deref()
            .map(|c| {
                shown(&mask_code_secrets(
                    &scope
                        .policy
                        .redact(&super::inbox::code_around(c, &tool.name)),
                ))
            })
            .unwrap_or_default(),
        asked_at: 0,
    };
    let where_ = where_to_approve(link.as_deref(), inbox.http_url());
    let mut waiting = match inbox.submit(pending) {
        Ok(w) => w,
        Err(e) => return failed(&e),
    };
    tracing::info!(
        "approval {} waits in the inbox: {qualified} ({rule}); {where_}",
        waiting.id
    );
    let timeout = scope.policy.approvals.timeout();
    match tokio::time::timeout(timeout, &mut waiting.answer).await {
        Ok(Ok(d)) if d.approved => (d.via, "once", None, d.by),
        Ok(Ok(d)) => (
            d.via,
            "deny",
            Some(format!(
                "{qualified} was denied by the person asked to approve it ({rule}) in the \
                 approvals inbox"
            )),
            d.by,
        ),
        Ok(Err(_)) | Err(_) => (
            "inbox",
            "timeout",
            Some(format!(
                "{qualified} needs approval ({rule}) and {why}; it waited {} ms in the \
                 approvals inbox and nobody answered, so it is denied. Tell the user: {where_}; then run \
                 the code again",
                timeout.as_millis()
            )),
            None,
        ),
    }
}

/// Where "approve for the session" answers of this execution are kept: its session, or its
/// client.
fn remembered_key(scope: &RunScope) -> String {
    match &scope.session {
        Some(s) => format!("session:{}", s.id),
        None => format!("client:{}", scope.principal),
    }
}

/// The arguments as a person sees them: masked, cut.
fn shown_arguments(args: &Map<String, Value>) -> String {
    // JSON writes controls as escapes already; bidi overrides and hidden characters too.
    let mut shown = serde_json::to_string_pretty(&shorten(&Value::Object(args.clone()), None))
        .map(|s| reveal(&s).into_owned())
        .unwrap_or_default();
    if shown.chars().count() > MAX_SHOWN_ARGUMENT_CHARS {
        shown = shown.chars().take(MAX_SHOWN_ARGUMENT_CHARS).collect();
        shown.push_str("\n… (cut)");
    }
    shown
}

/// The `elicitation/create` request for one call.
fn question(server: &str, tool: &Tool, args: &Map<String, Value>, rule: &str) -> Value {
    let shown = shown_arguments(args);
    let annotations = tool
        .annotations
        .as_ref()
        .map(|a| {
            let mut hints = Vec::new();
            if a.destructive_hint == Some(true) {
                hints.push("destructive");
            }
            if a.read_only_hint == Some(true) {
                hints.push("read-only");
            }
            if a.open_world_hint == Some(true) {
                hints.push("open-world");
            }
            hints.join(", ")
        })
        .filter(|h| !h.is_empty())
        .map(|h| format!(" [{h}]"))
        .unwrap_or_default();
    let message = format!(
        "Code wants to call a tool that needs your approval.\n\nServer: {server}\nTool: {}{annotations}\nRule: {rule}\nArguments:\n{shown}",
        tool.name
    );
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "decision": {
                        "type": "string",
                        "title": "Decision",
                        "oneOf": [
                            {"const": "once", "title": "Approve this call"},
                            {"const": "execution", "title": "Approve this tool for the rest of this execution"},
                            {"const": "session", "title": "Approve this tool for the session"},
                            {"const": "deny", "title": "Deny"}
                        ]
                    }
                },
                "required": ["decision"]
            }
        }
    })
}

/// Whether a key names a secret (its value is masked wherever it is shown).
pub fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase().replace(['-', '_'], "");
    [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "privatekey",
        "accesskey",
        "bearer",
    ]
    .iter()
    .any(|s| k.contains(s))
}

/// Code shown to a person with the string literals given to secret-looking names masked as
/// the arguments' values are (`password: 'hunter2'`, `"apiKey" = "..."`, `token=\`...\``).
fn mask_code_secrets(code: &str) -> String {
    let b = code.as_bytes();
    let mut out = String::with_capacity(code.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !(b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &code[start..i];
        // The name's own closing quote (a quoted key), then `:` or `=`, then a literal.
        let mut j = i;
        if j < b.len() && matches!(b[j], b'\'' | b'"') {
            j += 1;
        }
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        if j >= b.len() || !matches!(b[j], b':' | b'=') || !secret_key(name) {
            continue;
        }
        j += 1;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let Some(&quote) = b.get(j).filter(|q| matches!(q, b'\'' | b'"' | b'`')) else {
            continue;
        };
        let mut end = j + 1;
        while end < b.len() && b[end] != quote && b[end] != b'\n' {
            end += if b[end] == b'\\' { 2 } else { 1 };
        }
        if end >= b.len() || b[end] != quote {
            continue;
        }
        out.push_str(&code[copied..=j]);
        out.push_str("[masked]");
        copied = end;
        i = end + 1;
    }
    out.push_str(&code[copied..]);
    out
}

/// A copy of `v` fit to show a person: values under secret-looking keys masked, long strings
/// cut with their length.
fn shorten(v: &Value, key: Option<&str>) -> Value {
    if key.is_some_and(secret_key) && !v.is_null() {
        return Value::String("[masked]".into());
    }
    match v {
        Value::String(s) if s.chars().count() > MAX_SHOWN_STRING_CHARS => {
            let head: String = s.chars().take(MAX_SHOWN_STRING_CHARS).collect();
            Value::String(format!("{head}… ({} chars)", s.chars().count()))
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| shorten(x, None)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), shorten(x, Some(k))))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn code_shown_masks_literals_given_to_secret_names() {
        let code = "const r = await tools.db.login({user: 'ann', password: 'hunter2', \"apiKey\": \"k-1\"});\n\
                    api_token = `t-\\`x` ; note = 'password: stays'\nsecret=\"unterminated";
        let shown = mask_code_secrets(code);
        for gone in ["hunter2", "k-1", "t-\\`x"] {
            assert!(!shown.contains(gone), "{gone}: {shown}");
        }
        assert!(shown.contains("user: 'ann'"), "{shown}");
        assert!(shown.contains("password: '[masked]'"), "{shown}");
        assert!(shown.contains("note = 'password: stays'"), "{shown}");
        assert!(shown.contains("secret=\"unterminated"), "{shown}");
        assert_eq!(
            mask_code_secrets("plain code, no secrets"),
            "plain code, no secrets"
        );
    }
    use super::*;

    /// The model is told every place a person can answer, the HTTP route when there is one,
    /// never a token.
    #[test]
    fn the_refusal_names_where_a_person_approves() {
        let page = "http://127.0.0.1:4242/approvals";
        let local = where_to_approve(Some(page), None);
        assert!(
            local.contains(page) && local.contains("code-executor-mcp approvals"),
            "{local}"
        );
        assert!(!local.contains("token="), "{local}");
        let only_http = where_to_approve(None, Some("https://mcp.example/approvals"));
        assert!(
            only_http.contains("https://mcp.example/approvals")
                && !only_http.contains("code-executor-mcp approvals"),
            "{only_http}"
        );
        let http = where_to_approve(Some(page), Some("https://mcp.example/approvals"));
        assert!(
            http.contains("https://mcp.example/approvals")
                && http.contains("same credentials")
                && http.contains(page)
                && http.contains("code-executor-mcp approvals"),
            "{http}"
        );
    }

    #[test]
    fn answers_are_read_strictly() {
        let cases = [
            (
                json!({"action": "accept", "content": {"decision": "once"}}),
                Answer::Once,
            ),
            (
                json!({"action": "accept", "content": {"decision": "execution"}}),
                Answer::Execution,
            ),
            (
                json!({"action": "accept", "content": {"decision": "session"}}),
                Answer::Session,
            ),
            (
                json!({"action": "accept", "content": {"decision": "deny"}}),
                Answer::Deny,
            ),
            (
                json!({"action": "accept", "content": {"decision": "yes please"}}),
                Answer::Deny,
            ),
            (json!({"action": "accept"}), Answer::Deny),
            (json!({"action": "decline"}), Answer::Deny),
            (json!({"action": "cancel"}), Answer::Deny),
            (json!("accept"), Answer::Deny),
        ];
        for (v, want) in cases {
            assert_eq!(Answer::parse(&v), want, "{v}");
        }
    }

    #[test]
    fn shown_arguments_are_masked_and_cut() {
        let long = "x".repeat(500);
        let v = json!({"title": "hi", "apiKey": "sk-123", "nested": {"Authorization": "Bearer t"},
                       "body": long, "list": [{"password": "p"}]});
        let shown = shorten(&v, None);
        assert_eq!(shown["title"], "hi");
        assert_eq!(shown["apiKey"], "[masked]");
        assert_eq!(shown["nested"]["Authorization"], "[masked]");
        assert_eq!(shown["list"][0]["password"], "[masked]");
        assert!(shown["body"].as_str().unwrap().ends_with("(500 chars)"));
    }

    #[test]
    fn the_question_is_a_valid_elicitation() {
        let tool: Tool = serde_json::from_value(
            json!({"name": "create_issue", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}),
        )
        .unwrap();
        let args = json!({"title": "t", "token": "secret-value"});
        let q = question(
            "gh",
            &tool,
            args.as_object().unwrap(),
            "approvals.approve: mcp__gh__*",
        );
        let parsed: rmcp::model::InputRequest = serde_json::from_value(q.clone()).unwrap();
        assert!(
            matches!(parsed, rmcp::model::InputRequest::Elicitation(_)),
            "{q}"
        );
        let text = q["params"]["message"].as_str().unwrap();
        assert!(
            text.contains("Server: gh") && text.contains("create_issue [destructive]"),
            "{text}"
        );
        assert!(!text.contains("secret-value"), "{text}");
    }
}
