//! What the audit log records (`AuditEvent`): the audit sink writes it as a JSON line
//! (`audit`) and the counters of `/metrics` observe it (`metrics`).

use serde::Serialize;
use serde_json::Value;

/// One thing worth recording.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event")]
pub enum AuditEvent {
    #[serde(rename = "run.start", rename_all = "camelCase")]
    RunStart {
        execution: String,
        client: String,
        language: &'static str,
        code_sha256: String,
        code_bytes: usize,
        allowed_tools: Option<Vec<String>>,
        /// The session the execution ran in, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        session: Option<String>,
        /// The skill this execution runs, called by the execution `parent`.
        #[serde(skip_serializing_if = "Option::is_none")]
        skill: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        parent: Option<String>,
    },
    /// Code saved a skill (`saveSkill`).
    #[serde(rename = "skill.save", rename_all = "camelCase")]
    SkillSave {
        execution: String,
        skill: String,
        version: u32,
        path: String,
    },
    /// Personal data an execution's results (or, when code saw values, its exits) held:
    /// how many tokens were made, per detector. Never a value nor a token.
    #[serde(rename = "pii.tokens", rename_all = "camelCase")]
    PiiTokens {
        execution: String,
        tokens: std::collections::BTreeMap<String, u32>,
    },
    #[serde(rename = "run.end", rename_all = "camelCase")]
    RunEnd {
        execution: String,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        duration_ms: f64,
        tool_calls: u32,
        result_bytes: usize,
        log_bytes: usize,
        /// Peak resident memory of the worker process, when it could be measured.
        #[serde(skip_serializing_if = "Option::is_none")]
        memory_peak_bytes: Option<u64>,
    },
    #[serde(rename = "tool.call", rename_all = "camelCase")]
    ToolCall {
        execution: String,
        server: String,
        tool: String,
        decision: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        outcome: Option<&'static str>,
        duration_ms: f64,
        args_sha256: String,
        args_bytes: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        args: Option<Value>,
        result_bytes: usize,
    },
    /// A session was created (`session: "new"`).
    #[serde(rename = "session.start", rename_all = "camelCase")]
    SessionStart {
        session: String,
        client: String,
        language: &'static str,
    },
    /// A session ended: `reset` (asked for), `idle`, `evicted` (room for a newer one), or
    /// `shutdown`.
    #[serde(rename = "session.end", rename_all = "camelCase")]
    SessionEnd {
        session: String,
        client: String,
        reason: &'static str,
        duration_ms: f64,
        executions: u64,
    },
    /// The client asked to stop a run: `by` is how (`notifications/cancelled`,
    /// `tasks/cancel`, `wait`). The run's `run.end` follows with outcome `cancelled`.
    #[serde(rename = "run.cancel", rename_all = "camelCase")]
    RunCancel {
        execution: String,
        client: String,
        by: &'static str,
    },
    /// A call that needs approval: how the person was asked (`elicitation`, `input_required`,
    /// `fallback` when nobody could be, `remembered` when an earlier answer covers it,
    /// `inbox-page` / `inbox-terminal` / `inbox-http` when a person answered in the approvals
    /// inbox, `inbox` when nobody did there) and the
    /// answer (`once`, `execution`, `session`, `deny`, `timeout`, `failed`; `approved` or
    /// `denied` for the fallback and remembered answers).
    #[serde(rename = "approval", rename_all = "camelCase")]
    Approval {
        execution: String,
        server: String,
        tool: String,
        rule: String,
        via: &'static str,
        answer: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Who answered in the approvals inbox over `serve --http` (the principal), when it
        /// was not the local user holding the page's token (`via` says which way).
        #[serde(skip_serializing_if = "Option::is_none")]
        answered_by: Option<String>,
        waited_ms: u64,
        args_sha256: String,
    },
    /// A hook ran (`hooks`, `policy::hooks`): the event (`PreToolUse`, `PostToolUse`,
    /// `PreExecute`), what it judged (the tool's `mcp__server__tool` name, or `execute_<lang>`
    /// for a run), where it was configured, its command, and what it answered (`none`,
    /// `allow`, `ask`, `deny`, or `failed` with why), with the time it took.
    #[serde(rename = "hook", rename_all = "camelCase")]
    Hook {
        execution: String,
        hook_event: &'static str,
        subject: String,
        source: String,
        command: String,
        answer: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        duration_ms: f64,
    },
    /// A model call from code (`llm.ask`, `llm.think`): who answered (`client` or
    /// `provider`), hashes of what was sent and received, never the text.
    #[serde(rename = "llm.call", rename_all = "camelCase")]
    LlmCall {
        execution: String,
        via: &'static str,
        outcome: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        prompt_sha256: String,
        prompt_bytes: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        answer_sha256: Option<String>,
        input_tokens: u64,
        output_tokens: u64,
        duration_ms: f64,
    },
    /// A run refused before it started (busy, rate-limited).
    #[serde(rename = "run.refused", rename_all = "camelCase")]
    RunRefused { client: String, reason: String },
    /// One HTTP request (or redirect hop) code asked the host to make, allowed or denied.
    /// The URL's path and query are not written (they may carry secrets); the host, port,
    /// method, status and sizes are.
    #[serde(rename = "net.fetch", rename_all = "camelCase")]
    Fetch {
        execution: String,
        method: String,
        scheme: String,
        host: String,
        port: u16,
        decision: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The address connected to, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        request_bytes: usize,
        response_bytes: u64,
        duration_ms: f64,
    },
}
