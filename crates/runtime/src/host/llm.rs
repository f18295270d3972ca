//! Model calls from code (`llm.ask`, `llm.think`): checked against the switch and the
//! execution's budget, secrets redacted, then answered by the client's sampling
//! (`sampling/createMessage`, inline or by MRTR like every question, see `runtime::live::paused`) or
//! by the configured provider over HTTPS (the Anthropic Messages API or any OpenAI-compatible
//! chat endpoint), in the order `llm.prefer` says. Each call gets an `llm.call` audit line with
//! hashes of what was sent and received, never the text.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use worker_protocol::{CallError, CallOutcome, LlmMessage};

use super::scope::{RunScope, err, ok};
use crate::run::client::AskError;
use policy::audit::{AuditEvent, sha256_hex};
use policy::llm::{Api, DEFAULT_ANSWER_TOKENS, Prefer, ProviderSettings, estimate_tokens};

/// Largest prompt (all messages and the system prompt) one call may send, in bytes.
const MAX_PROMPT_BYTES: usize = 1 << 20;
/// Largest provider answer read, in bytes.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// Turns in one `llm.think` conversation.
const MAX_MESSAGES: usize = 200;

/// A model's answer.
struct Answer {
    text: String,
    model: Option<String>,
    /// Reported by the provider (the client's sampling reports none: estimated).
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

/// Who answered, for the audit line.
#[derive(Clone, Copy)]
enum Via {
    Client,
    Provider,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Client => "client",
            Via::Provider => "provider",
        }
    }
}

/// One model call from code.
pub(super) async fn call(
    scope: &RunScope,
    messages: Vec<LlmMessage>,
    system: Option<String>,
    max_tokens: Option<u32>,
    model: Option<String>,
) -> CallOutcome {
    if !scope.llm_enabled {
        return err(
            CallError::Policy,
            "model calls from code are off: enable them with \"llm\": {\"enabled\": true} in the \
             settings, or pass enableSampling: true with the execution",
        );
    }
    if let Some(problem) = check_messages(&messages, system.as_deref()) {
        return err(CallError::Argument, problem);
    }
    let settings = &scope.policy.llm;
    let provider = settings.provider.as_ref();
    // Secrets never leave: the configured upstreams' credentials and the provider's own key.
    let key = provider.and_then(api_key);
    // Nor personal data, when code sees values (`pii`): the prompt leaves for a model.
    let redact = |t: &str| {
        let t = scope.policy.redact(&scope.exit_text(t));
        match &key {
            Some(k) if k.len() >= 6 => t.replace(k.as_str(), "[redacted]"),
            _ => t,
        }
    };
    let messages: Vec<LlmMessage> = messages
        .into_iter()
        .map(|m| LlmMessage {
            role: m.role,
            content: redact(&m.content),
        })
        .collect();
    let system = system.map(|s| redact(&s));
    let prompt_text: String = system
        .iter()
        .cloned()
        .chain(messages.iter().map(|m| m.content.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    let estimated = estimate_tokens(&prompt_text);
    let max_tokens = match scope.ledger.llm.reserve(
        settings,
        estimated,
        max_tokens.unwrap_or(DEFAULT_ANSWER_TOKENS).max(1),
    ) {
        Ok(n) => n,
        Err(reason) => return err(CallError::Limit, reason),
    };
    let started = Instant::now();
    let can_client = scope.client.as_ref().is_some_and(|c| c.caps.sampling);
    let order: Vec<Via> = match (settings.prefer, can_client, provider.is_some()) {
        (_, false, false) => Vec::new(),
        (_, true, false) => vec![Via::Client],
        (_, false, true) => vec![Via::Provider],
        (Prefer::Client, true, true) => vec![Via::Client, Via::Provider],
        (Prefer::Provider, true, true) => vec![Via::Provider, Via::Client],
    };
    let mut failures: Vec<String> = Vec::new();
    let mut answered = None;
    for via in order {
        let tried = match via {
            Via::Client => {
                ask_client(
                    scope,
                    &messages,
                    system.as_deref(),
                    max_tokens,
                    model.as_deref(),
                )
                .await
            }
            Via::Provider => match provider {
                Some(p) => {
                    ask_provider(
                        scope,
                        p,
                        key.as_deref(),
                        &messages,
                        system.as_deref(),
                        max_tokens,
                        model.as_deref(),
                    )
                    .await
                }
                None => Err(AskFailed::NoProvider),
            },
        };
        match tried {
            Ok(a) => {
                answered = Some((via, a));
                break;
            }
            Err(e) => failures.push(format!("{}: {e}", via.as_str())),
        }
    }
    let audit = |via: &'static str,
                 outcome: &'static str,
                 reason: Option<String>,
                 a: Option<&Answer>,
                 inp: u64,
                 out: u64| {
        scope.policy.audit.record(AuditEvent::LlmCall {
            execution: scope.execution.clone(),
            via,
            outcome,
            reason,
            model: a.and_then(|a| a.model.clone()),
            prompt_sha256: sha256_hex(prompt_text.as_bytes()),
            prompt_bytes: prompt_text.len(),
            answer_sha256: a.map(|a| sha256_hex(a.text.as_bytes())),
            input_tokens: inp,
            output_tokens: out,
            duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        });
    };
    match answered {
        Some((via, answer)) => {
            let output = answer
                .output_tokens
                .unwrap_or_else(|| estimate_tokens(&answer.text));
            scope
                .ledger
                .llm
                .settle(estimated, answer.input_tokens, output);
            for spent in &scope.llm_spent {
                spent.add(answer.input_tokens.unwrap_or(estimated), output);
            }
            audit(
                via.as_str(),
                "ok",
                None,
                Some(&answer),
                answer.input_tokens.unwrap_or(estimated),
                output,
            );
            ok(Value::String(answer.text))
        }
        None => {
            scope.ledger.llm.settle(estimated, None, 0);
            for spent in &scope.llm_spent {
                spent.add(estimated, 0);
            }
            let reason = if failures.is_empty() {
                "no model can answer: the client did not declare sampling, and no llm.provider is \
                 configured"
                    .to_string()
            } else {
                format!("no model answered ({})", failures.join("; "))
            };
            audit("none", "failed", Some(reason.clone()), None, estimated, 0);
            err(CallError::Tool, reason)
        }
    }
}

fn check_messages(messages: &[LlmMessage], system: Option<&str>) -> Option<String> {
    if messages.is_empty() {
        return Some("llm: no messages; pass a prompt, or messages: [{role, content}]".into());
    }
    if messages.len() > MAX_MESSAGES {
        return Some(format!(
            "llm: {} messages; the limit is {MAX_MESSAGES}",
            messages.len()
        ));
    }
    if let Some(m) = messages
        .iter()
        .find(|m| m.role != "user" && m.role != "assistant")
    {
        return Some(format!(
            "llm: a message's role must be \"user\" or \"assistant\", not {:?}",
            m.role
        ));
    }
    let bytes: usize =
        messages.iter().map(|m| m.content.len()).sum::<usize>() + system.map_or(0, str::len);
    if bytes > MAX_PROMPT_BYTES {
        return Some(format!(
            "llm: the prompt is {bytes} bytes; the limit is {MAX_PROMPT_BYTES}"
        ));
    }
    None
}

/// The provider's key, from its environment variable at the time of the call.
fn api_key(p: &ProviderSettings) -> Option<String> {
    p.api_key_env
        .as_deref()
        .and_then(|name| std::env::var(name).ok())
        .filter(|k| !k.is_empty())
}

/// `sampling/createMessage` to the client; the clock stands still while it answers (a person
/// may review the request).
async fn ask_client(
    scope: &RunScope,
    messages: &[LlmMessage],
    system: Option<&str>,
    max_tokens: u32,
    model: Option<&str>,
) -> Result<Answer, AskFailed> {
    let Some(client) = &scope.client else {
        return Err(AskFailed::NoClient);
    };
    let mut params = json!({
        "messages": messages
            .iter()
            .map(|m| json!({"role": m.role, "content": {"type": "text", "text": m.content}}))
            .collect::<Vec<_>>(),
        "maxTokens": max_tokens,
    });
    if let Some(s) = system {
        params["systemPrompt"] = json!(s);
    }
    if let Some(m) = model {
        params["modelPreferences"] = json!({"hints": [{"name": m}]});
    }
    let request = json!({"method": "sampling/createMessage", "params": params});
    let result = {
        let _paused = scope.clock.pause();
        client
            .ask(request, scope.policy.approvals.timeout())
            .await
            .map_err(AskFailed::Client)?
    };
    let text = sampled_text(&result["content"])
        .ok_or_else(|| AskFailed::ClientNoText(truncate(&result.to_string())))?;
    Ok(Answer {
        text,
        model: result["model"].as_str().map(str::to_string),
        input_tokens: None,
        output_tokens: None,
    })
}

/// The text of a sampling result's content (one block or several).
fn sampled_text(content: &Value) -> Option<String> {
    match content {
        Value::Object(_) => content["text"].as_str().map(str::to_string),
        Value::Array(blocks) => {
            let parts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
            (!parts.is_empty()).then(|| parts.concat())
        }
        _ => None,
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// One call to the configured provider, within its timeout and the execution's deadline.
async fn ask_provider(
    scope: &RunScope,
    p: &ProviderSettings,
    key: Option<&str>,
    messages: &[LlmMessage],
    system: Option<&str>,
    max_tokens: u32,
    model: Option<&str>,
) -> Result<Answer, AskFailed> {
    if p.api_key_env.is_some() && key.is_none() {
        return Err(AskFailed::NoKey(p.api_key_env.clone().unwrap_or_default()));
    }
    tools::tls::install_tls_provider();
    let model = model.unwrap_or(&p.model);
    let base = p.base_url();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| AskFailed::HttpClient(e.to_string()))?;
    let (url, body, mut req) = match p.api {
        Api::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": max_tokens,
                "messages": messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
            });
            if let Some(s) = system {
                body["system"] = json!(s);
            }
            let url = format!("{base}/v1/messages");
            let mut req = client.post(&url).header("anthropic-version", "2023-06-01");
            if let Some(k) = key {
                req = req.header("x-api-key", k);
            }
            (url, body, req)
        }
        Api::Openai => {
            let mut all = Vec::new();
            if let Some(s) = system {
                all.push(json!({"role": "system", "content": s}));
            }
            all.extend(
                messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content})),
            );
            let body = json!({"model": model, "max_tokens": max_tokens, "messages": all});
            let url = format!("{base}/chat/completions");
            let mut req = client.post(&url);
            if let Some(k) = key {
                req = req.bearer_auth(k);
            }
            (url, body, req)
        }
    };
    let remaining = scope
        .clock
        .deadline()
        .saturating_duration_since(Instant::now());
    let timeout = p.timeout().min(remaining + Duration::from_millis(250));
    req = req.json(&body).timeout(timeout);
    let resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            AskFailed::Timeout {
                url: url.clone(),
                ms: timeout.as_millis(),
            }
        } else {
            AskFailed::Http {
                url: url.clone(),
                reason: without_url(&e),
            }
        }
    })?;
    let status = resp.status();
    let bytes = read_capped(resp).await?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| AskFailed::NotJson {
        url: url.clone(),
        status,
        head: truncate(&String::from_utf8_lossy(&bytes)),
    })?;
    if !status.is_success() {
        let message = v["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| truncate(&v.to_string()));
        return Err(AskFailed::Refused {
            url,
            status,
            message,
        });
    }
    let (text, input, output) = match p.api {
        Api::Anthropic => (
            sampled_text(&v["content"]),
            v["usage"]["input_tokens"].as_u64(),
            v["usage"]["output_tokens"].as_u64(),
        ),
        Api::Openai => (
            v["choices"][0]["message"]["content"]
                .as_str()
                .map(str::to_string),
            v["usage"]["prompt_tokens"].as_u64(),
            v["usage"]["completion_tokens"].as_u64(),
        ),
    };
    let text = text.ok_or_else(|| AskFailed::ProviderNoText {
        url: url.clone(),
        body: truncate(&v.to_string()),
    })?;
    Ok(Answer {
        text,
        model: v["model"]
            .as_str()
            .map(str::to_string)
            .or(Some(model.to_string())),
        input_tokens: input,
        output_tokens: output,
    })
}

/// Why one way of asking a model (the client's sampling, the provider) gave no answer.
#[derive(Debug, thiserror::Error)]
enum AskFailed {
    #[error("no client")]
    NoClient,
    #[error("no provider")]
    NoProvider,
    #[error(transparent)]
    Client(AskError),
    #[error("the client's answer has no text: {0}")]
    ClientNoText(String),
    #[error("the provider's key variable {0} is not set")]
    NoKey(String),
    #[error("{0}")]
    HttpClient(String),
    #[error("{url} did not answer within {ms} ms")]
    Timeout { url: String, ms: u128 },
    #[error("{url}: {reason}")]
    Http { url: String, reason: String },
    #[error("{0}")]
    Body(String),
    #[error("the provider's answer is over {MAX_ANSWER_BYTES} bytes")]
    TooBig,
    #[error("{url} answered {status} with something that is not JSON: {head}")]
    NotJson {
        url: String,
        status: reqwest::StatusCode,
        head: String,
    },
    #[error("{url} answered {status}: {message}")]
    Refused {
        url: String,
        status: reqwest::StatusCode,
        message: String,
    },
    #[error("{url}: the answer has no text: {body}")]
    ProviderNoText { url: String, body: String },
}

/// A reqwest error's text without the URL (said once by the caller).
fn without_url(e: &reqwest::Error) -> String {
    let mut s = e.to_string();
    if let Some(u) = e.url() {
        s = s.replace(&format!(" ({u})"), "").replace(u.as_str(), "");
    }
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

async fn read_capped(mut resp: reqwest::Response) -> Result<Vec<u8>, AskFailed> {
    let mut out = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| AskFailed::Body(without_url(&e)))?
    {
        if out.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(AskFailed::TooBig);
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}
