//! `docs/settings.md`: one table of every settings key, its type, default and meaning
//! (`settings_table::SETTINGS`), with the text about where settings come from. The settings types
//! (`tools::config::settings` and the `policy` types it holds) have no schema of their own, so
//! the table is kept here and its tests hold it to them: every key the types accept is in the
//! table and every key in the table is accepted (read from serde's own "expected one of"
//! answer), and every default written as JSON gives the same settings as leaving the key out.

use std::fmt::Write as _;

use super::settings_table::{Def, SETTINGS};
use tools::config::settings::{
    CONNECTED_SERVERS_ENV, DISCOVER_ENV, POOL_SIZE_ENV, PROJECT_SETTINGS_FILE, SETTINGS_PATH_ENV,
};

/// Where settings come from, and the example (the text above the table).
const PREFACE: &str = r#"## Where settings come from

Our own settings come from **your user settings file**: `$CODE_EXECUTOR_CONFIG_PATH`, else
`~/.config/code-executor-mcp/config.json` (`$XDG_CONFIG_HOME/code-executor-mcp/config.json`).
An unknown key is an error naming the file and the key. So is a user settings file that cannot
be read (a directory or FIFO in its place, over 16 MiB, not UTF-8): the server then refuses to
start rather than run without your policy and audit settings.

A project's `./.code-executor.json` (the working directory's) may come with a cloned
repository, so it applies only in a project you trust: when `trustedProjects` in your user
settings file lists the working directory or a directory above it. Then it is merged over your
file: objects merge key by key (so a project can add `policy.servers.<name>` rules and keep
yours), any other value it sets (a list, a number, `true`/`false`) replaces yours. It may not
set `trustedProjects`. In a project you do not trust the file is not even opened, and
`config show` (`settings.projectFile` and `warnings`), `doctor` and the server's log say that it
was ignored and which line to add to `trustedProjects` to apply it.

`trustedProjects` (see [Where servers come from](../README.md#where-servers-come-from)) is read
only from `$CODE_EXECUTOR_CONFIG_PATH` or `~/.config/code-executor-mcp/config.json`; in a
project's `.code-executor.json` it is an error. The sandbox mode and `--python-site-packages`
are command-line flags (or the environment), never settings, so no file can change them.

Environment variables override the files, and command-line flags override both
([cli.md](cli.md#options-for-every-command)). Log level: `RUST_LOG` (default `info`, to
stderr; stdout carries only MCP).

## An example

```json
{
  "poolSize": 2,
  "poolMax": 8,
  "poolMemoryMb": 256,
  "poolShrinkAfterMs": 10000,
  "connectedServers": ["github"],
  "directTools": ["mcp__github__get_issue", "mcp__github__list_*"],
  "discover": true,
  "upstreamCallTimeoutMs": 60000,
  "connectTimeoutMs": 30000,
  "maxResultBytes": 16777216,
  "policy": {
    "default": "allow",
    "servers": {
      "github": { "allow": ["get_*", "list_*", "search_*"], "deny": ["delete_*"] },
      "filesystem": { "readOnly": true }
    }
  },
  "limits": { "maxConcurrentExecutions": 4, "queue": 16, "executionsPerMinute": 600, "toolCallsPerMinute": 6000, "maxConcurrentPerClient": 0 },
  "executionLimits": { "defaultTimeoutMs": 30000, "maxTimeoutMs": 300000, "memoryMb": 256, "maxLogBytes": 1048576, "maxOutputFileBytes": 8388608, "maxToolCalls": 1000, "maxConcurrentToolCalls": 32, "maxDiscoveryCalls": 2000, "maxCodeBytes": 524288, "maxConcurrentSkills": 0 },
  "audit": { "enabled": true, "path": "~/.local/state/code-executor-mcp/audit.jsonl", "maxBytes": 10485760, "logArguments": false },
  "sessions": { "maxPerClient": 4, "maxWorkers": 16, "idleTimeoutS": 900, "maxWorkerMemoryMb": 512, "maxStoreBytes": 16777216, "workspaceQuotaMb": 64, "workspaceMaxEntries": 10000 },
  "longRuns": { "maxDurationMs": 1800000, "defaultDurationMs": 600000, "keepResultMs": 600000, "maxParkedPerClient": 8, "maxParked": 64, "maxKeptMb": 64, "progressPerSecond": 10, "toolCallProgress": false, "forwardUpstreamProgress": true, "taskAfterMs": 1000, "pollIntervalMs": 500 },
  "approvals": { "approve": ["mcp__github__*_issue"], "annotations": "destructive", "fallback": "deny", "timeoutMs": 120000 },
  "llm": { "enabled": false, "prefer": "client", "provider": { "api": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "ANTHROPIC_API_KEY" }, "maxCalls": 20, "maxInputTokens": 100000, "maxOutputTokens": 20000 },
  "forwardRequests": { "servers": ["github"], "roots": ["file:///home/me/src"] },
  "trustedProjects": ["/home/me/src/my-project"],
  "permissions": { "read": ["/home/me/src/my-project"], "write": true, "net": ["api.github.com", "GET 127.0.0.1:8080"] },
  "pii": { "scan": ["mcp__crm__*"], "restoreTo": ["mcp__mailer__send_message"], "elsewhere": "token", "sandboxSees": "tokens" },
  "skills": { "dir": "~/.local/share/code-executor-mcp/skills", "serve": ["/opt/team-skills"], "save": true },
  "check": { "enabled": false, "typescript": "tsc", "python": "ty", "timeoutMs": 20000, "memoryMb": 1024 },
  "hooks": { "PreToolUse": [{ "matcher": "mcp__github__.*", "hooks": [{ "type": "command", "command": "~/bin/gh-guard.py" }] }], "fromClients": true, "env": {} },
  "toolChanges": "refuse",
  "store": { "url": "sqlite:/var/lib/code-executor-mcp/store.sqlite3", "maxBytesPerClient": 67108864 }
}
```

## Worker pools

TypeScript keeps `poolSize` (default 2) and Python `--python-pool-size` (default 1) sandboxed
workers started ahead of requests; a worker serves one execution and is replaced. When
requests outrun a pool (back to back, parallel tool calls) it grows, one worker per request
that found it empty, up to `poolMax` (default 8; a pool of size 0 stays empty), and shrinks by
one worker for every `poolShrinkAfterMs` without a request (default 10 s), back to its size. A
size you set (`poolSize`, `CODE_EXECUTOR_POOL_SIZE`, `--pool-size`, `--python-pool-size`) is
kept exactly unless you also set `poolMax` or `--pool-max`. It never grows while the ready
workers of both pools (helpers and engine, resident memory) would exceed `poolMemoryMb`
(default 256). `health` shows each pool's `target`, `min`, `max`, `peakTarget`, `misses`
(requests that waited for a start of their own), `grown`, `shrunk` and `memoryBytes`;
`grantPools` the same for the pools of read grants ([access.md](access.md)), with their
`dataPaths`.

`CODE_EXECUTOR_WORKER_TEMPLATE=1` (in the server's environment; off by default) makes each
language's pool fork its workers from a template process that holds the sandbox's shared
namespaces and view, instead of starting a sandbox helper per worker: where the kernel has
Landlock ABI 6 and Linux 6.15; elsewhere, and for grant pools and sessions, workers start as
before. `doctor` (`worker start:`) and `health` (`workerStart`) say which path is used and
why; [sandbox.md](sandbox.md#workers-forked-from-a-template) gives the isolation argument.
"#;

/// The document.
pub(super) fn render() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Settings reference\n");
    let _ = writeln!(
        out,
        "Generated by `{}` from the settings table in \
         `crates/code-executor-mcp/src/cli/reference/settings_table.rs`, which its tests hold to \
         the settings types: every key they accept is listed, and every default shown as JSON \
         is the one they apply. Do not edit this file by hand.\n",
        super::shared::REGENERATE
    );
    let _ = writeln!(
        out,
        "The files: `${SETTINGS_PATH_ENV}`, else `~/.config/code-executor-mcp/config.json`; a \
         trusted project's `./{PROJECT_SETTINGS_FILE}` over it. The environment: \
         `{POOL_SIZE_ENV}`, `{CONNECTED_SERVERS_ENV}` (a comma list), `{DISCOVER_ENV}` \
         (`0`/`1`).\n"
    );
    out.push_str(PREFACE);
    let _ = writeln!(out, "\n## Every setting\n");
    let _ = writeln!(
        out,
        "A key `a.b` is `b` inside the object `a`; `<server>` stands for a server's name.\n"
    );
    let _ = writeln!(
        out,
        "| setting | type | default | what it does |\n| --- | --- | --- | --- |"
    );
    for st in SETTINGS {
        let default = match st.default {
            Def::Json(v) => format!("`{v}`"),
            Def::Text(f) => f(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            st.key,
            st.ty,
            default,
            st.about.replace('|', "\\|")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{Map, Value};
    use tools::config::Settings;

    use super::*;

    /// `key` with `<server>` as a name.
    fn path(key: &str) -> Vec<String> {
        key.split('.')
            .map(|p| {
                if p.starts_with('<') {
                    "s".into()
                } else {
                    p.to_string()
                }
            })
            .collect()
    }

    /// `{"a": {"b": value}}` for the path `a.b`.
    fn nest(path: &[String], value: Value) -> Value {
        path.iter().rev().fold(value, |v, k| {
            let mut m = Map::new();
            m.insert(k.clone(), v);
            Value::Object(m)
        })
    }

    fn parse(v: &Value) -> Result<Settings, tools::config::error::SettingsError> {
        Settings::parse(&v.to_string())
    }

    /// The keys the settings types accept in the object at `at`, from serde's answer to an
    /// unknown one ("expected one of `a`, `b`", "expected `a` or `b`").
    fn accepted(at: &[String]) -> BTreeSet<String> {
        let err = parse(&nest(at, serde_json::json!({"zz-unknown": 0})))
            .expect_err("an unknown key is refused")
            .to_string();
        let expected = err
            .split_once("expected")
            .unwrap_or_else(|| panic!("{at:?}: {err}"))
            .1;
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_key_the_types_accept_is_in_the_table_and_no_other() {
        let keys: BTreeSet<&str> = SETTINGS.iter().map(|s| s.key).collect();
        assert_eq!(keys.len(), SETTINGS.len(), "a key is listed twice");
        // The root and every object whose own keys are listed.
        let mut objects: BTreeSet<&str> = BTreeSet::from([""]);
        for k in &keys {
            if let Some((parent, last)) = k.rsplit_once('.')
                && !last.starts_with('<')
            {
                objects.insert(parent);
            }
        }
        for object in objects {
            let at = if object.is_empty() {
                Vec::new()
            } else {
                path(object)
            };
            let listed: BTreeSet<String> = keys
                .iter()
                .filter_map(|k| match k.rsplit_once('.') {
                    Some((p, last)) if p == object => Some(last.to_string()),
                    None if object.is_empty() => Some(k.to_string()),
                    _ => None,
                })
                .filter(|k| !k.starts_with('<'))
                .collect();
            assert_eq!(
                accepted(&at),
                listed,
                "the keys of `{object}`: the settings types (left) and the table (right)"
            );
        }
    }

    #[test]
    fn every_default_written_as_json_is_the_one_applied() {
        let normal = |mut s: Settings| {
            // Setting poolSize, even to its default, pins the pool (its meaning, not a value).
            s.pool_size_set = false;
            s
        };
        for st in SETTINGS {
            let Def::Json(v) = st.default else { continue };
            let p = path(st.key);
            let value: Value = serde_json::from_str(v).unwrap();
            let with = parse(&nest(&p, value)).unwrap_or_else(|e| panic!("{}: {e}", st.key));
            let without = parse(&nest(&p[..p.len() - 1], Value::Object(Map::new())))
                .unwrap_or_else(|e| panic!("{}: {e}", st.key));
            assert_eq!(
                normal(with),
                normal(without),
                "{}: the default is not {v}",
                st.key
            );
        }
    }

    #[test]
    fn the_example_is_valid_settings() {
        let json = PREFACE
            .split("```json\n")
            .nth(1)
            .and_then(|r| r.split("```").next())
            .unwrap();
        parse(&serde_json::from_str(json).unwrap()).unwrap();
    }

    #[test]
    fn the_readmes_short_example_is_valid_settings() {
        let readme = include_str!("../../../../../README.md");
        let json = readme
            .split("### Settings\n")
            .nth(1)
            .and_then(|r| r.split("```json\n").nth(1))
            .and_then(|r| r.split("```").next())
            .unwrap();
        parse(&serde_json::from_str(json).unwrap()).unwrap();
    }
}
