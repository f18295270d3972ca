//! Executions through the built binary: a real MCP client (rmcp over stdio) calls the
//! execute tools, with fixture MCP servers upstream and code in real, sandboxed workers.
//!
//! - [`execute`]: the server, its upstreams and the TypeScript worker end to end;
//! - [`forms`]: the TypeScript forms of the product line's documents (modules, discovery
//!   without `await`, `llm` options, unknown options refused);
//! - [`languages`]: one table of scenarios run in TypeScript and Python;
//! - [`sessions`]: sessions in both languages (and the workspace quota);
//! - [`direct`]: pinned direct tools (`directTools`): listed, called, policed, approved, audited;
//! - [`definitions`]: tool definitions that change are held; hidden text is taken out;
//! - [`hooks`]: the user's hooks (ours and Claude Code's) judge calls from code, skills and
//!   pinned tools, and runs; hooks that fail refuse;
//! - [`pauses`]: approvals and sampling mid-script, in both protocol generations;
//! - [`long_runs`]: `yieldAfterMs`, `wait`, `progress()`, cancellation;
//! - [`durable`]: what survives a SIGKILL through the store (stored values, `wait` handles'
//!   results, runs lost to the restart), on SQLite and PostgreSQL; stores that cannot be used;
//! - [`pools`]: worker pools: one execution per worker, growth and shrinking;
//! - [`python_forms`]: Python's blocking and awaited forms of every sandbox function, gathered,
//!   in `asyncio.run` and at top level, and the attacks on the event loop;
//! - [`python_start`]: what a Python worker imports late behaves as if imported up front;
//! - [`robustness`]: hostile and long-running use, and every `RUST_LOG` level;
//! - [`access`]: file and network grants, and the attacks on them (SSRF, grants);
//! - [`policy`]: rules, argument validation, busy limits, the audit log, secrets, personal data;
//! - [`upstream`]: upstream starts: hangs, backoff, start errors;
//! - [`llm_provider`]: model calls answered by a configured provider;
//! - [`skills`]: skills saved, versioned, found and called from code, flagged, a project's held back;
//! - [`skills_ledger`]: a request and its skills at any depth share one ledger and a bound on
//!   skills running at once;
//! - [`signatures`]: generated TypeScript and Python signatures, by snapshot (`snapshots/`);
//! - [`types`]: output types learned from results, and code type-checked before it runs;
//! - [`openapi`], [`openapi_attacks`], [`openapi_measured`]: OpenAPI documents as sources
//!   (GitHub's and a YAML API behind Prism mocks; hostile documents, answers and arguments;
//!   the figures of issue #55, printed);
//! - [`own_tools`]: the documents' tool names and parameters, and the executor's own tools
//!   called from code (nested executions within their caller's).
//! - [`templates`]: pools whose workers a template forks: exits, timeouts, a killed template;
//! - [`shapes`]: result shapes (`callMCPTool` the answer's text, `tools.s.t` the structured
//!   result), a result passed where a string is wanted named, prompts that are not text.
//!
//! One module's tests: `cargo test -p code-executor-mcp --test execution -- sessions::`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "tests fail loudly and say why"
)]

#[path = "../common/mod.rs"]
mod common;

mod access;
mod deep_values;
mod definitions;
mod direct;
mod durable;
mod execute;
mod forms;
mod hooks;
mod inbox;
mod languages;
mod llm_provider;
mod long_runs;
mod openapi;
mod openapi_attacks;
mod openapi_measured;
mod own_tools;
mod pauses;
mod policy;
mod pools;
mod python_forms;
mod python_start;
mod resume;
mod robustness;
mod sessions;
mod shapes;
mod signatures;
mod skill_calls;
mod skills;
mod skills_ledger;
mod templates;
mod types;
mod upstream;
