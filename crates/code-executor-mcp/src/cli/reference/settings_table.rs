//! The settings table: every key of the settings file, its type, default and meaning, one
//! row each ([`SETTINGS`]), which `settings_doc` renders into `docs/settings.md` and its tests
//! hold to the settings types.

/// A key's default.
#[derive(Clone, Copy)]
pub(super) enum Def {
    /// The value that gives the same settings as leaving the key out (tests check it).
    Json(&'static str),
    /// What leaving the key out means, in words (a default applied where the value is used).
    Text(fn() -> String),
}

/// One key: its dotted path (`<server>` for a name of your own), type, default and meaning.
pub(super) struct Setting {
    pub(super) key: &'static str,
    pub(super) ty: &'static str,
    pub(super) default: Def,
    pub(super) about: &'static str,
}

const fn s(key: &'static str, ty: &'static str, default: Def, about: &'static str) -> Setting {
    Setting {
        key,
        ty,
        default,
        about,
    }
}

const OBJ: &str = "object";
const INT: &str = "integer";
const MS: &str = "integer (ms)";
const BOOL: &str = "boolean";
const STRS: &str = "array of strings";
const NONE: Def = Def::Text(String::new);

/// Every key of the settings file.
pub(super) const SETTINGS: &[Setting] = &[
    s(
        "$schema",
        "string",
        NONE,
        "Ignored: a JSON schema's address, for editors.",
    ),
    s(
        "poolSize",
        INT,
        Def::Json("2"),
        "TypeScript workers started ahead of requests, at most 64 (Python's: `--python-pool-size`, default 1); a worker serves one execution and is replaced. A size set here, by `CODE_EXECUTOR_POOL_SIZE` or `--pool-size` is kept exactly unless `poolMax` (or `--pool-max`) is set too. See [Worker pools](#worker-pools).",
    ),
    s(
        "poolMax",
        INT,
        Def::Text(|| {
            format!(
                "{}, or `poolSize` if larger; 0 when `poolSize` is 0",
                tools::defaults::DEFAULT_POOL_MAX
            )
        }),
        "Most workers a pool grows to when requests outrun it, one per request that found it empty; at most 64.",
    ),
    s(
        "poolMemoryMb",
        "integer (MiB)",
        Def::Json("256"),
        "A pool never grows while the ready workers of both pools (helpers and engine, resident memory) would exceed this; 16 to 1048576.",
    ),
    s(
        "poolShrinkAfterMs",
        MS,
        Def::Json("10000"),
        "A grown pool stops one surplus worker for every this long without a request, back to its size; 100 to 3600000.",
    ),
    s(
        "connectedServers",
        STRS,
        Def::Json("[]"),
        "Servers connected at start, in the background (never delaying `initialize`); the others start on first use. Environment: `CONNECTED_SERVERS` (a comma list).",
    ),
    s(
        "directTools",
        STRS,
        Def::Json("[]"),
        "Upstream tools also listed as our own and called without code, as `mcp__server__tool` patterns (`mcp__github__list_*`; a lone `*` is refused). See [Pinned direct tools](../README.md#pinned-direct-tools-directtools).",
    ),
    s(
        "discover",
        BOOL,
        Def::Json("true"),
        "Read the MCP server configs of the other clients on this machine ([Where servers come from](../README.md#where-servers-come-from)). Environment: `CODE_EXECUTOR_DISCOVER` (`0`/`1`); `--no-discover` turns it off.",
    ),
    s(
        "upstreamCallTimeoutMs",
        MS,
        Def::Json("60000"),
        "One upstream tool call; never past the execution's deadline.",
    ),
    s(
        "connectTimeoutMs",
        MS,
        Def::Json("30000"),
        "Time a server gets to start and answer `initialize` and `tools/list`.",
    ),
    s(
        "maxResultBytes",
        "integer (bytes)",
        Def::Json("16777216"),
        "Largest upstream result kept (16 MiB); a larger one is cut off with a note saying so ([Limits](../README.md#limits)).",
    ),
    s(
        "policy",
        OBJ,
        NONE,
        "Which upstream tools code, skills and pinned tools may call ([Security model](../README.md#security-model)).",
    ),
    s(
        "policy.default",
        "`\"allow\"` or `\"deny\"`",
        Def::Json("\"allow\""),
        "What a tool no rule mentions gets.",
    ),
    s(
        "policy.servers",
        "object: server name to rule",
        Def::Json("{}"),
        "Rules per server; patterns match the tool's own name (`read_*`).",
    ),
    s("policy.servers.<server>", OBJ, NONE, "One server's rule."),
    s(
        "policy.servers.<server>.allow",
        STRS,
        Def::Text(|| "every tool".into()),
        "When given, only these tools are allowed.",
    ),
    s(
        "policy.servers.<server>.deny",
        STRS,
        Def::Json("[]"),
        "Tools refused.",
    ),
    s(
        "policy.servers.<server>.readOnly",
        BOOL,
        Def::Json("false"),
        "Only tools annotated `readOnlyHint: true` are allowed.",
    ),
    s(
        "limits",
        OBJ,
        NONE,
        "Admission: what runs at once, what waits, and rates per client; past them a `BusyError`.",
    ),
    s(
        "limits.maxConcurrentExecutions",
        INT,
        Def::Json("4"),
        "Executions running at once on the server.",
    ),
    s(
        "limits.queue",
        INT,
        Def::Json("16"),
        "Executions waiting for a slot.",
    ),
    s(
        "limits.executionsPerMinute",
        INT,
        Def::Json("600"),
        "Executions per client per minute.",
    ),
    s(
        "limits.toolCallsPerMinute",
        INT,
        Def::Json("6000"),
        "Tool calls per client per minute, across its executions.",
    ),
    s(
        "limits.maxConcurrentPerClient",
        INT,
        Def::Json("0"),
        "Executions one client may run at once (0: as many as the server); its further ones wait in the queue.",
    ),
    s(
        "executionLimits",
        OBJ,
        NONE,
        "Per-execution limits: each can be tightened, or loosened up to what the sandbox holds ([Limits](../README.md#limits)).",
    ),
    s(
        "executionLimits.defaultTimeoutMs",
        MS,
        Def::Json("30000"),
        "Wall clock of an execution that asks for none (lowered to `maxTimeoutMs`).",
    ),
    s(
        "executionLimits.maxTimeoutMs",
        MS,
        Def::Json("300000"),
        "Longest `timeoutMs` a call may ask for; 1 to 300000.",
    ),
    s(
        "executionLimits.memoryMb",
        "integer (MiB)",
        Def::Json("256"),
        "The TypeScript engine's heap, or what a Python execution may add to the interpreter's start; 16 to 768.",
    ),
    s(
        "executionLimits.maxLogBytes",
        "integer (bytes)",
        Def::Json("1048576"),
        "Captured output in the answer, then a `[output truncated ...]` marker.",
    ),
    s(
        "executionLimits.maxOutputFileBytes",
        "integer (bytes)",
        Def::Json("8388608"),
        "The whole output kept in the execution's scratch directory when `maxLogBytes` cuts the answer's (0: none).",
    ),
    s(
        "executionLimits.maxToolCalls",
        INT,
        Def::Json("1000"),
        "Tool calls per execution.",
    ),
    s(
        "executionLimits.maxConcurrentToolCalls",
        INT,
        Def::Json("32"),
        "Tool calls in flight at once.",
    ),
    s(
        "executionLimits.maxDiscoveryCalls",
        INT,
        Def::Json("2000"),
        "Discovery requests per execution (`searchTools`, `listServers`, `getToolSchema`, `discoverMCPTools`, `.signature` reads); then `LimitError`.",
    ),
    s(
        "executionLimits.maxCodeBytes",
        "integer (bytes)",
        Def::Json("524288"),
        "Size of the code.",
    ),
    s(
        "executionLimits.maxConcurrentSkills",
        INT,
        Def::Json("0"),
        "Skills one request's code runs at once (0: as many as `poolMax`); each level of skills calling skills may run one more.",
    ),
    s(
        "audit",
        OBJ,
        NONE,
        "The audit log: a JSON line per attempt ([Audit log](../README.md#audit-log)).",
    ),
    s(
        "audit.enabled",
        BOOL,
        Def::Json("true"),
        "Write the audit log.",
    ),
    s(
        "audit.path",
        "string (path)",
        Def::Text(|| {
            "`$XDG_STATE_HOME/code-executor-mcp/audit.jsonl` (`~/.local/state/...`)".into()
        }),
        "Where it is written.",
    ),
    s(
        "audit.maxBytes",
        "integer (bytes)",
        Def::Json("10485760"),
        "Size at which the log is rotated (three older files are kept).",
    ),
    s(
        "audit.logArguments",
        BOOL,
        Def::Json("false"),
        "Write tool arguments in full instead of a hash and a length (arguments can hold personal data).",
    ),
    s(
        "sessions",
        OBJ,
        NONE,
        "State across calls ([Sessions](../README.md#sessions-state-across-calls)).",
    ),
    s(
        "sessions.maxPerClient",
        INT,
        Def::Json("4"),
        "Sessions one client may hold.",
    ),
    s(
        "sessions.maxWorkers",
        INT,
        Def::Json("16"),
        "Sessions on the server (the oldest idle one is evicted for a new one); at most 1024, 0 turns sessions off.",
    ),
    s(
        "sessions.idleTimeoutS",
        "integer (s)",
        Def::Json("900"),
        "A session unused this long ends; 1 to 604800.",
    ),
    s(
        "sessions.maxWorkerMemoryMb",
        "integer (MiB)",
        Def::Json("512"),
        "Memory of a session's worker; 16 to 4096.",
    ),
    s(
        "sessions.maxStoreBytes",
        "integer (bytes)",
        Def::Json("16777216"),
        "Values a session stores.",
    ),
    s(
        "sessions.workspaceQuotaMb",
        "integer (MiB)",
        Def::Json("64"),
        "Size of a session's workspace.",
    ),
    s(
        "sessions.workspaceMaxEntries",
        INT,
        Def::Json("10000"),
        "Files, directories and hard links in a session's workspace.",
    ),
    s(
        "longRuns",
        OBJ,
        NONE,
        "Tasks, early returns (`yieldAfterMs` + `wait`) and progress ([Long runs](../README.md#long-runs-progress-tasks-and-wait)); the sandbox's CPU-time backstop grows with `maxDurationMs`.",
    ),
    s(
        "longRuns.maxDurationMs",
        MS,
        Def::Json("1800000"),
        "Longest deadline a long run may ask for; at most a day.",
    ),
    s(
        "longRuns.defaultDurationMs",
        MS,
        Def::Json("600000"),
        "Deadline of a long run that asks for none (lowered to `maxDurationMs`).",
    ),
    s(
        "longRuns.keepResultMs",
        MS,
        Def::Json("600000"),
        "How long a finished long run's result is kept for `tasks/get` or `wait`.",
    ),
    s(
        "longRuns.maxParkedPerClient",
        INT,
        Def::Json("8"),
        "Parked executions (running, or finished and kept) one client may hold.",
    ),
    s(
        "longRuns.maxParked",
        INT,
        Def::Json("64"),
        "Parked executions on the server; 0 turns long runs off.",
    ),
    s(
        "longRuns.maxKeptMb",
        "integer (MiB)",
        Def::Json("64"),
        "Memory of all kept results together (the oldest finished go first).",
    ),
    s(
        "longRuns.progressPerSecond",
        INT,
        Def::Json("10"),
        "Progress notifications one execution may send per second; faster ones are coalesced.",
    ),
    s(
        "longRuns.toolCallProgress",
        BOOL,
        Def::Json("false"),
        "Report each finished tool call of an execution as progress too.",
    ),
    s(
        "longRuns.forwardUpstreamProgress",
        BOOL,
        Def::Json("true"),
        "Pass on the progress an upstream tool reports, under the execution's token.",
    ),
    s(
        "longRuns.taskAfterMs",
        MS,
        Def::Json("1000"),
        "A client that declared tasks gets a task when the run is still going after this long (0: every execution is a task).",
    ),
    s(
        "longRuns.pollIntervalMs",
        MS,
        Def::Json("500"),
        "The polling interval suggested for a task; 1 to 60000.",
    ),
    s(
        "approvals",
        OBJ,
        NONE,
        "Calls a person approves first ([Pauses](../README.md#pauses-approvals-model-calls-upstream-requests)).",
    ),
    s(
        "approvals.approve",
        STRS,
        Def::Json("[]"),
        "Patterns (`allowedTools` syntax) of calls that need a person's yes.",
    ),
    s(
        "approvals.annotations",
        "`\"off\"`, `\"destructive\"` or `\"notReadOnly\"`",
        Def::Json("\"off\""),
        "Also ask for every tool annotated `destructiveHint: true`, or every tool not annotated `readOnlyHint: true`.",
    ),
    s(
        "approvals.fallback",
        "`\"deny\"`, `\"allow\"` or `\"inbox\"`",
        Def::Json("\"deny\""),
        "What a call needing approval gets when the client cannot be asked (`inbox`: it waits in the approvals inbox, answered by `code-executor-mcp approvals` or its page).",
    ),
    s(
        "approvals.timeoutMs",
        MS,
        Def::Text(|| policy::approval::DEFAULT_APPROVAL_TIMEOUT_MS.to_string()),
        "How long a call waits for a person's answer, then it is denied; at most 3600000.",
    ),
    s(
        "llm",
        OBJ,
        NONE,
        "Model calls from code (`llm.ask`; [Pauses](../README.md#pauses-approvals-model-calls-upstream-requests)).",
    ),
    s(
        "llm.enabled",
        BOOL,
        Def::Json("false"),
        "Allow model calls for every execution (otherwise a call passes `enableSampling: true`).",
    ),
    s(
        "llm.prefer",
        "`\"client\"` or `\"provider\"`",
        Def::Json("\"client\""),
        "Who is asked first: the client's sampling, or the provider below.",
    ),
    s(
        "llm.provider",
        OBJ,
        Def::Text(|| "none".into()),
        "A model provider reached directly.",
    ),
    s(
        "llm.provider.api",
        "`\"anthropic\"` or `\"openai\"`",
        NONE,
        "Required. The Messages API (`POST {baseUrl}/v1/messages`) or an OpenAI-compatible chat endpoint (`POST {baseUrl}/chat/completions`).",
    ),
    s(
        "llm.provider.baseUrl",
        "string (URL)",
        Def::Text(|| "`https://api.anthropic.com`, `https://api.openai.com/v1`".into()),
        "The provider's address (`http://` or `https://`).",
    ),
    s(
        "llm.provider.model",
        "string",
        NONE,
        "Required. The model's name.",
    ),
    s(
        "llm.provider.apiKeyEnv",
        "string",
        Def::Text(|| "none: no key is sent (local servers)".into()),
        "The environment variable holding the API key.",
    ),
    s(
        "llm.provider.timeoutMs",
        MS,
        Def::Text(|| policy::llm::DEFAULT_PROVIDER_TIMEOUT_MS.to_string()),
        "One request to the provider.",
    ),
    s(
        "llm.maxCalls",
        INT,
        Def::Json("20"),
        "Model calls per execution.",
    ),
    s(
        "llm.maxInputTokens",
        INT,
        Def::Json("100000"),
        "Input tokens per execution.",
    ),
    s(
        "llm.maxOutputTokens",
        INT,
        Def::Json("20000"),
        "Output tokens per execution.",
    ),
    s(
        "forwardRequests",
        OBJ,
        NONE,
        "Upstreams whose requests (elicitation, sampling, roots) are routed to the client ([Pauses](../README.md#pauses-approvals-model-calls-upstream-requests)).",
    ),
    s(
        "forwardRequests.servers",
        STRS,
        Def::Json("[]"),
        "Those servers (`\"*\"`: all).",
    ),
    s(
        "forwardRequests.roots",
        STRS,
        Def::Json("[]"),
        "Roots (`file://` URIs) an upstream may see at most.",
    ),
    s(
        "trustedProjects",
        "array of absolute paths",
        Def::Json("[]"),
        "Projects (and the directories under them) whose project files are trusted: client configs that their clients have not approved, and our own `.code-executor.json`. Read only from the user's file.",
    ),
    s(
        "permissions",
        OBJ,
        NONE,
        "The ceiling of the file and network access code may be granted; nothing by default ([Files and network](../README.md#files-and-network-permissions), [access.md](access.md)).",
    ),
    s(
        "permissions.read",
        "array of absolute paths",
        Def::Json("[]"),
        "Paths code may be allowed to read.",
    ),
    s(
        "permissions.write",
        BOOL,
        Def::Json("false"),
        "Whether an execution may have a writable workspace.",
    ),
    s(
        "permissions.net",
        "array of host rules",
        Def::Json("[]"),
        "Hosts code may be allowed to reach (`api.github.com`, `GET 127.0.0.1:8080`).",
    ),
    s(
        "permissions.fetch",
        OBJ,
        NONE,
        "Bounds of `fetch` per execution.",
    ),
    s(
        "permissions.fetch.maxRequests",
        INT,
        Def::Json("100"),
        "Requests per execution (redirect hops count).",
    ),
    s(
        "permissions.fetch.maxResponseBytes",
        "integer (bytes)",
        Def::Json("8388608"),
        "One response.",
    ),
    s(
        "permissions.fetch.maxTotalBytes",
        "integer (bytes)",
        Def::Json("33554432"),
        "All responses of an execution.",
    ),
    s(
        "permissions.fetch.timeoutMs",
        MS,
        Def::Json("30000"),
        "One request.",
    ),
    s(
        "permissions.fetch.maxRedirects",
        INT,
        Def::Json("5"),
        "Redirects one request follows.",
    ),
    s(
        "pii",
        OBJ,
        NONE,
        "Personal data in results replaced by tokens; off by default ([Personal data](../README.md#personal-data-pii), [pii.md](pii.md)).",
    ),
    s(
        "pii.scan",
        STRS,
        Def::Json("[]"),
        "Tools whose results are scanned (patterns; `*` for all); empty: off.",
    ),
    s(
        "pii.detectors",
        STRS,
        Def::Text(|| {
            policy::pii::detect::Builtin::ALL
                .iter()
                .map(|b| format!("`{}`", b.setting()))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        "The built-in detectors used.",
    ),
    s(
        "pii.patterns",
        "object: name to regular expression",
        Def::Json("{}"),
        "Detectors of your own (the `regex` crate's syntax).",
    ),
    s(
        "pii.restoreTo",
        STRS,
        Def::Json("[]"),
        "Tools a token is turned back into its value for (patterns).",
    ),
    s(
        "pii.elsewhere",
        "`\"token\"` or `\"deny\"`",
        Def::Json("\"token\""),
        "What a token bound for any other tool does: goes as it is, or the call is refused (`PolicyError`).",
    ),
    s(
        "pii.sandboxSees",
        "`\"tokens\"` or `\"values\"`",
        Def::Json("\"tokens\""),
        "What code inside the sandbox sees of the values found.",
    ),
    s(
        "skills",
        OBJ,
        NONE,
        "Where skills are kept and served from ([Skills](../README.md#skills-code-that-is-saved-found-and-reused), [skills.md](skills.md)).",
    ),
    s(
        "skills.dir",
        "string (path)",
        Def::Text(|| "`$XDG_DATA_HOME/code-executor-mcp/skills` (`~/.local/share/...`)".into()),
        "The user's skills directory; saved skills go here.",
    ),
    s(
        "skills.serve",
        "array of paths",
        Def::Json("[]"),
        "More directories of Agent Skills to serve and search (read only).",
    ),
    s(
        "skills.save",
        BOOL,
        Def::Text(|| "true".into()),
        "Whether code may save skills (`saveSkill`).",
    ),
    s(
        "check",
        OBJ,
        NONE,
        "Type-checking code before it runs ([Types](../README.md#types-that-learn-code-checked-before-it-runs), [types.md](types.md)).",
    ),
    s(
        "check.enabled",
        BOOL,
        Def::Json("false"),
        "Check every execution's code (a call's own `check` overrides it).",
    ),
    s(
        "check.typescript",
        "string",
        Def::Text(|| "`tsgo` or `tsc` on `PATH`".into()),
        "The TypeScript checker: a path, or a name on `PATH`.",
    ),
    s(
        "check.python",
        "string",
        Def::Text(|| "`ty`, `pyright` or `mypy` on `PATH`".into()),
        "The Python checker: a path, or a name on `PATH`.",
    ),
    s(
        "check.timeoutMs",
        MS,
        Def::Text(|| "20000".into()),
        "The longest a check may take; never past the execution's deadline.",
    ),
    s(
        "check.memoryMb",
        "integer (MiB)",
        Def::Text(|| "1024".into()),
        "The address space of a checker process; 64 to 1048576 (a Node or Go checker gets its heap this large and 1 GiB more).",
    ),
    s(
        "hooks",
        OBJ,
        NONE,
        "Your guardrail commands, in Claude Code's hooks format ([guardrails.md](guardrails.md)).",
    ),
    s(
        "hooks.PreToolUse",
        "array of hook groups",
        NONE,
        "Run before every upstream call made from code, a skill or a pinned direct tool.",
    ),
    s(
        "hooks.PostToolUse",
        "array of hook groups",
        NONE,
        "Run after every such call.",
    ),
    s(
        "hooks.PreExecute",
        "array of hook groups",
        NONE,
        "Run before each run.",
    ),
    s(
        "hooks.fromClients",
        BOOL,
        Def::Text(|| "true".into()),
        "Whether the hooks in Claude Code's own settings files run too (with the trust rules of its MCP servers).",
    ),
    s(
        "hooks.env",
        "object: name to value",
        Def::Json("{}"),
        "Variables hooks get besides the curated few (`PATH`, `HOME`, ...).",
    ),
    s(
        "store",
        OBJ,
        NONE,
        "Where sessions' stored values and tasks' and `wait` handles' results are kept so that they survive a restart ([store.md](store.md)).",
    ),
    s(
        "store.url",
        "string",
        Def::Text(|| {
            "SQLite in the data directory (`$XDG_STATE_HOME/code-executor-mcp/store.sqlite3`)"
                .into()
        }),
        "`sqlite:PATH` (one file, WAL), a `postgres://...` URL (replicas sharing one store), or `none` (in memory only, nothing survives a restart). `--store` (or `CODE_EXECUTOR_STORE`) overrides it.",
    ),
    s(
        "store.maxBytesPerClient",
        "integer (bytes)",
        Def::Json("67108864"),
        "What one client's records (keys and values) may take in the store; a write past it is refused, naming this setting. 1024 to 2^40.",
    ),
    s(
        "toolChanges",
        "`\"refuse\"` or `\"ask\"`",
        Def::Json("\"refuse\""),
        "What a call of a tool gets when its definition changed since it was first seen: refused until `code-executor-mcp tools accept mcp__server__tool`, or a person is asked ([guardrails.md](guardrails.md#tool-definitions-that-change-are-held)).",
    ),
];
