//! The long reference of `execute_typescript` and `execute_python`, fetched on demand.
//!
//! `tools/list` stays under 500 tokens (a test counts them), so it carries the facts an agent
//! needs to start (how to call a tool, what comes back, how to discover) and says where the
//! rest is: `get_tool_schema` with the name of one of our execute tools answers with this
//! reference, the parameters with their descriptions, and the shape of the result. Upstream
//! tools are named `mcp__server__tool`, so our bare names do not shadow any of them.

use rmcp::model::Tool;
use serde_json::{Value, json};

/// Facts both languages share, said once.
const COMMON: &str = "\
Tool results: tools.<server>.<tool>() gives a tool's structuredContent when it has one, else \
its text parsed as JSON when it parses, else the text; several content blocks come as an \
array. callMCPTool / call_mcp_tool give the answer's text (text blocks joined): the \
structured value when the text is that JSON, a JSON object or array text parsed when there \
is no structuredContent, else the string (json.loads / JSON.parse of a file's text works). \
Both give images and resources as content blocks; an isError result throws \
ToolError with the upstream's message. PolicyError (denied by allowedTools, rules or \
read-only mode), LimitError (a cap below) and ApprovalDenied extend ToolError; a call of an \
unknown tool or server, however written, throws ToolError naming the nearest names; a bad \
argument names the field and the expected schema (an object given for a string: the call \
that returned it, and the field to take).
Discovery: searchTools(query, {detail: names|summary|full, server, limit}) / search_tools, \
getToolSchema('mcp__server__tool') / get_tool_schema, listServers() / list_servers, \
discoverMCPTools() / discover_mcp_tools(); tools.<server>.<tool>.signature is the typed \
declaration (a tool without an outputSchema gets its result type learned from its results, \
marked inferred; schemas show it as inferredOutputSchema). check: true type-checks the code \
against these types before it runs (TypeCheckError with line and column; nothing runs). Names: 'mcp__server__tool', or (server, tool); tools.<server>.<tool> uses \
identifier forms (my-server -> my_server).
Approvals: a call the user's rules mark for approval waits while the client asks a person; \
a denial throws ApprovalDenied. Model calls: llm.ask(prompt) / llm.think(messages) go \
through the client's sampling or the configured provider when the server enables llm.
Sessions: session: \"new\" starts one; its id comes back in result.session.id; pass it to \
later calls to keep globals, store(key, value) / load(key) values and files under \
/workspace (the only writable directory). reset: true ends the named session.
Long runs: yieldAfterMs answers early with running.handle; call wait {handle, timeoutMs?, \
cancel?} for new logs and then the result. progress(done, total?, message?) reports \
progress. A handle survives a server restart: a run that waited for an approval runs again \
against its call log (the calls it completed are answered from the log, not made again), so \
its code must ask for the same calls given the same results (Math.random and random replay; \
time does not), else ReplayDiverged names the step; a run lost otherwise fails with \
LostToRestart listing the calls it completed.
Files and network: none by default. permissions {read: [path], write: true, net: [host]} \
asks for them within the server's ceiling; fetch(url, init) and file reads fail with the \
missing grant named.
Limits (defaults; the server's settings may differ): timeoutMs 30000 (at most 300000; long \
runs 10 min), memoryMb 256, maxToolCalls 1000, maxConcurrentToolCalls 32, \
maxDiscoveryCalls 2000, code 512 KiB, captured output 1 MiB (the whole output is kept in \
outputFile), one upstream result or argument 16 MiB. limits: {maxToolCalls, \
maxConcurrentToolCalls, maxDiscoveryCalls, maxLogBytes, memoryMb} only tightens them. \
allowedTools: mcp__server__tool globs the code may call (default all).
Skills (saved code, Agent Skills directories): saveSkill(name, {code, description, \
inputSchema?, language?}) / save_skill(name, code, description, input_schema?, language?) \
keeps code as a skill (lowercase-hyphen name; saving again keeps the previous version); \
listSkills() / list_skills(); searchTools finds skills with the tools (kind: \"skill\"); \
skills.<name>(args) / skills.<name>(**args) runs one in either language, as an execution of \
its own with this run's allowedTools, limits, permissions and remaining time; its code sees \
args. A skill whose upstream tools changed since it was saved is marked with what changed. \
Without code: {skill, args} runs one; {code, save: {name, description, inputSchema?}} keeps \
code as one without running it.
Result: structuredContent {result, logs, error?, toolCalls, durationMs, session?, \
outputFile?, running?}; a failure (exception, timeout, limit) is isError with error {name, \
message, stack?}. Return only what you need: the result goes into your context.";

const TYPESCRIPT: &str = "\
TypeScript or JavaScript, run as the body of an async function: top-level await; `return x` \
sets result (JSON). Call tools: await tools.<server>.<tool>(args) (typed proxies), \
await callMCPTool('mcp__server__tool', args) or await callMCPTool(server, tool, args); \
Promise.all([...]) runs calls in parallel. console.* is captured into logs. Also fetch, \
llm.ask, progress, store/load, skills, fs (node-style readFile/writeFile; writable only under \
/workspace).";

const PYTHON: &str = "\
Python 3 (the host's CPython); the last expression is the result (JSON-able). Call tools: \
tools.<server>.<tool>(**args) (typed proxies), call_mcp_tool('mcp__server__tool', args) or \
call_mcp_tool(server, tool, args); each function blocks, or is awaited \
(await call_mcp_tool(...) in async def main() with asyncio.run(main()), or top-level await); \
in parallel: await asyncio.gather(call_mcp_tool(...), ...). print and logging are captured \
into logs. Also fetch, llm.ask(prompt, system_prompt=, max_tokens=) / llm.think(messages, \
model=, max_tokens=, system_prompt=), progress, store/load, open() under /workspace.";

/// The full parameters of both execute tools.
fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "skill": {"type": "string", "description": "run this saved skill (its name) instead of code"},
            "args": {"type": "object", "description": "the skill's arguments"},
            "save": {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"}, "inputSchema": {"type": "object"}}, "required": ["name", "description"], "description": "keep code as a skill instead of running it"},
            "timeoutMs": {"type": "integer", "default": 30000, "description": "deadline of the run; long runs up to 30 min"},
            "allowedTools": {"type": "array", "items": {"type": "string"}, "description": "mcp__server__tool globs the code may call; default all"},
            "limits": {"type": "object", "description": "tighten maxToolCalls, maxConcurrentToolCalls, maxDiscoveryCalls, maxLogBytes, memoryMb"},
            "session": {"type": "string", "description": "\"new\", or result.session.id of an earlier run: keeps globals, store/load values and /workspace files"},
            "reset": {"type": "boolean", "description": "end the named session and run outside it"},
            "yieldAfterMs": {"type": "integer", "description": "answer with running.handle after this long if not done; then call wait"},
            "permissions": {"type": "object", "description": "{read: [path], write: true, net: [host]}: files and network for fs and fetch, within the server's ceiling"},
            "check": {"type": "boolean", "description": "type-check the code first, against our API and the tools' declared and learned types; errors come back as TypeCheckError and nothing runs"}
        }
    })
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "result": {}, "logs": {"type": "array"}, "error": {"type": "object"},
            "toolCalls": {"type": "integer"}, "durationMs": {"type": "number"},
            "session": {"type": "object"}, "outputFile": {"type": "string"},
            "running": {"type": "object"}
        },
        "required": ["result", "logs"]
    })
}

/// The reference of one of our execute tools, or `None` for any other name.
pub fn reference(name: &str) -> Option<Value> {
    let (language, text) = match name {
        "execute_typescript" => ("typescript", TYPESCRIPT),
        "execute_python" => ("python", PYTHON),
        _ => return None,
    };
    Some(json!({
        "name": name,
        "language": language,
        "reference": format!("{text}\n{COMMON}"),
        "inputSchema": input_schema(),
        "outputSchema": output_schema(),
    }))
}

/// The tools we offer, exactly as `tools/list` returns them.
///
/// Every word here is paid for by every agent on every turn: the list stays under 500 cl100k
/// tokens (`our_tools_list_fits_the_token_budget`) and keeps the facts an agent needs to start
/// (`our_tools_list_keeps_the_facts_an_agent_needs`). Facts both execute tools share are said
/// once, in `execute_typescript`; the long reference (every parameter described, the result's
/// fields, limits, sessions, approvals, files and network) is what `get_tool_schema` answers
/// for our own tool names ([`reference()`]), and the description says so.
pub fn tool_definitions() -> Vec<Tool> {
    let exec_input = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "skill": {"description": "saved skill to run; save: keep code as one"},
            "args": {},
            "save": {},
            "timeoutMs": {"default": 30000},
            "session": {"description": "new|id: keeps state, store/load, /workspace"},
            "yieldAfterMs": {},
            "permissions": {"description": "{read,write,net} for fs, fetch"},
            "allowedTools": {},
            "limits": {},
            "reset": {}
        }
    });
    // Python takes the same parameters (`code` or `skill`, so neither is required); its
    // description says so rather than repeat them.
    let py_input = json!({"type": "object", "properties": {"code": {"type": "string"}}});
    let object = json!({"type": "object"});
    // An `outputSchema` only where it says something, or where the result is a run's (the
    // execute tools): `{"type": "object"}` tells a model nothing, and each costs 8 tokens on
    // every turn; the others still answer with `structuredContent` and its text.
    let defs = json!([
        {
            "name": "execute_typescript",
            "description": "TypeScript, sandboxed async body; return sets result. await tools.server.tool(args): structuredContent/parsed text | callMCPTool('mcp__server__tool' | server, tool, args): text, throws ToolError. searchTools, getToolSchema, listServers, progress, llm.ask. Docs: get_tool_schema execute_typescript",
            "inputSchema": exec_input,
            "outputSchema": {"type": "object", "properties": {"result": {}, "logs": {}, "error": {}}}
        },
        {
            "name": "execute_python",
            "description": "Python; last expression is the result. Same API and parameters, snake_case: tools.server.tool(**args), call_mcp_tool, acall_mcp_tool for asyncio.gather",
            "inputSchema": py_input,
            "outputSchema": object
        },
        {
            "name": "search_tools",
            "description": "Search tools, skills; detail: names|summary|full",
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}, "detail": {}, "server": {}, "limit": {}, "cursor": {}}},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "get_tool_schema",
            "description": "Schemas, signature of mcp__server__tool",
            "inputSchema": {"type": "object", "properties": {"name": {}}},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "list_servers",
            "description": "Upstream servers; your sessions, runs",
            "inputSchema": object
        },
        {
            "name": "wait",
            "description": "Poll a yieldAfterMs run or task",
            "inputSchema": {"type": "object", "properties": {"handle": {}, "timeoutMs": {}, "cancel": {}}}
        },
        {
            "name": "health",
            "description": "Server status, versions",
            "inputSchema": object
        }
    ]);
    serde_json::from_value(defs).unwrap_or_default()
}
