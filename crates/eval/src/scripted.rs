//! Scripted runs: each task's direct call sequence against the upstreams, and its code
//! through our server, several times each, measured as [`super::measure`] says.
//!
//! Each direct step goes through the runtime's door as a pinned direct tool's call does
//! ([`Ours::direct`]): a step the settings refuse (a denied or held-back tool, a `readOnly`
//! server's tool not annotated read-only, arguments the schema refuses, an approval nobody
//! can give) is not made; its row says which step was refused, by what, and the task fails.

use std::time::Duration;

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;

use super::context::{Listed, ratio};
use super::error::{EvalError, StepError};
use super::measure::{Tally, Turn, median, round_ms};
use super::sides::{Direct, Ours, code_args, context_text};
use super::tasks::{Step, Task, resolve_args};

/// Longest error text kept in a report row.
const ERROR_CHARS: usize = 400;

/// One way of one task, over its runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Side {
    /// Every run completed and the answer held what the task expects.
    pub ok: bool,
    /// What went wrong, and what to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The direct step the user's settings refused (it was not made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Refused>,
    /// Tokens of the first run.
    pub tokens: Tally,
    /// Every run passed the same number of tokens.
    pub tokens_stable: bool,
    pub turns: usize,
    /// Median wall time of the tool calls (model time excluded), in milliseconds.
    pub ms: f64,
    pub ms_runs: Vec<f64>,
}

/// One task, both ways.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub task: String,
    pub direct: Side,
    pub code: Side,
    /// Code / direct: context tokens, billed input tokens, turns, wall time.
    pub ratios: Ratios,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Ratios {
    pub tokens: f64,
    pub input: f64,
    pub turns: f64,
    pub time: f64,
}

/// A direct step the settings refused, as a pinned direct call of it would have been.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Refused {
    pub step: usize,
    pub server: String,
    pub tool: String,
    /// The error a pinned direct call (or code) gets: `PolicyError`, `ApprovalDenied`,
    /// `TypeError` (arguments), `LimitError`.
    pub error: String,
    pub reason: String,
}

/// One run one way.
struct Run {
    tally: Tally,
    turns: usize,
    ms: f64,
    error: Option<String>,
    refused: Option<Refused>,
    /// Code mode: the result's JSON (the answer a model would relay).
    answer: Option<String>,
}

fn cut(s: &str) -> String {
    let mut out: String = s.chars().take(ERROR_CHARS).collect();
    if out.len() < s.len() {
        out.push_str("...");
    }
    out.replace('\n', " ")
}

/// Whether `step` names a listed server and tool; else what to fix.
fn check_step(i: usize, step: &Step, listed: &Listed) -> Result<(), StepError> {
    let Some((_, tools)) = listed.iter().find(|(n, _)| *n == step.server) else {
        let names: Vec<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
        return Err(StepError::NoServer {
            step: i,
            server: step.server.clone(),
            configured: names.join(", "),
        });
    };
    let tools = tools.as_ref().map_err(|e| StepError::NotListed {
        step: i,
        server: step.server.clone(),
        reason: cut(&e.to_string()),
    })?;
    if !tools.iter().any(|t| t.name == step.tool) {
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        // The likeliest meant first: the longest common beginning, then the name.
        let common = |n: &str| {
            n.bytes()
                .zip(step.tool.bytes())
                .take_while(|(a, b)| a.eq_ignore_ascii_case(b))
                .count()
        };
        names.sort_by(|a, b| common(b).cmp(&common(a)).then(a.cmp(b)));
        names.truncate(12);
        return Err(StepError::NoTool {
            step: i,
            server: step.server.clone(),
            tool: step.tool.clone(),
            near: names.join(", "),
        });
    }
    Ok(())
}

async fn direct_once(
    ours: &Ours,
    listed: &Listed,
    task: &Task,
    schemas: usize,
    answer: &str,
) -> Result<Run, EvalError> {
    let mut turns = Vec::new();
    let mut results: Vec<(Option<Value>, String)> = Vec::new();
    let mut elapsed = Duration::ZERO;
    let mut error = None;
    let mut refused = None;
    for (i, step) in task.direct.iter().enumerate() {
        if let Err(e) = check_step(i, step, listed) {
            error = Some(e.to_string());
            break;
        }
        let args = match resolve_args(&step.arguments, &results) {
            Ok(a) => a,
            Err(e) => {
                error = Some(format!("step {i} ({}.{}): {e}", step.server, step.tool));
                break;
            }
        };
        let written = Value::Object(args.clone()).to_string();
        let (r, took) = ours.direct(&step.server, &step.tool, args).await;
        elapsed += took;
        match r {
            Direct::Answered(result) => {
                let text = context_text(&result);
                let failed = result.is_error == Some(true);
                turns.push(Turn {
                    written,
                    result: text.clone(),
                });
                if failed {
                    error = Some(format!(
                        "step {i} ({}.{}) answered an error: {}; fix the task's arguments",
                        step.server,
                        step.tool,
                        cut(&text)
                    ));
                    break;
                }
                results.push((result.structured_content, text));
            }
            Direct::Refused {
                error: name,
                message,
            } => {
                let fix = match name.as_str() {
                    "TypeError" => "fix the task's arguments",
                    "ApprovalDenied" => {
                        "eval has no one to ask: set approvals.fallback to allow, or change the task"
                    }
                    "LimitError" => "raise the limit in the settings, or change the task",
                    _ => "allow it in the settings, or change the task",
                };
                error = Some(format!(
                    "step {i} ({}.{}) was refused and not made, as a pinned direct call of it \
                     would be: {name}: {}; {fix}",
                    step.server,
                    step.tool,
                    cut(&message)
                ));
                refused = Some(Refused {
                    step: i,
                    server: step.server.clone(),
                    tool: step.tool.clone(),
                    error: name,
                    reason: message,
                });
                break;
            }
            Direct::Failed(e) => {
                error = Some(format!(
                    "step {i} ({}.{}) failed: {}",
                    step.server,
                    step.tool,
                    cut(&e)
                ));
                break;
            }
        }
    }
    if error.is_none() {
        let seen: Vec<&str> = results.iter().map(|(_, t)| t.as_str()).collect();
        if let Some(m) = task.expect.missing(&seen.join("\n")) {
            error = Some(format!("the results do not contain the expected {m:?}"));
        }
    }
    Ok(Run {
        tally: Tally::of(schemas, &task.prompt, &turns, answer)?,
        turns: turns.len() + 1,
        ms: elapsed.as_secs_f64() * 1e3,
        error,
        refused,
        answer: None,
    })
}

/// The answer a model relays from our result: the result's JSON.
fn code_answer(result: &CallToolResult) -> String {
    result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("result"))
        .map(Value::to_string)
        .unwrap_or_else(|| context_text(result))
}

async fn code_once(
    ours: &Ours,
    task: &Task,
    schemas: usize,
    answer: Option<&str>,
) -> Result<Run, EvalError> {
    let args = code_args(&task.code);
    let written = Value::Object(args.clone()).to_string();
    let (r, elapsed) = ours.call(task.language.tool(), args).await;
    let (text, error, relayed) = match r {
        Ok(result) => {
            let text = context_text(&result);
            if result.is_error == Some(true) {
                let e = format!(
                    "the code failed: {}; fix the task's code (try it with `code-executor-mcp exec`)",
                    cut(&text)
                );
                (text, Some(e), None)
            } else {
                let missing = task
                    .expect
                    .missing(&text)
                    .map(|m| format!("the result does not contain the expected {m:?}"));
                let relayed = code_answer(&result);
                (text, missing, Some(relayed))
            }
        }
        Err(e) => (
            String::new(),
            Some(format!("our server failed: {}", cut(&e.to_string()))),
            None,
        ),
    };
    let answer_text = answer
        .map(str::to_string)
        .or_else(|| relayed.clone())
        .unwrap_or_default();
    let turns = [Turn {
        written,
        result: text,
    }];
    Ok(Run {
        tally: Tally::of(schemas, &task.prompt, &turns, &answer_text)?,
        turns: 2,
        ms: elapsed.as_secs_f64() * 1e3,
        error,
        refused: None,
        answer: relayed,
    })
}

fn side(runs: &[Run]) -> Side {
    let first = runs.first();
    let error = runs.iter().find_map(|r| r.error.clone());
    Side {
        ok: error.is_none() && !runs.is_empty(),
        error,
        refused: runs.iter().find_map(|r| r.refused.clone()),
        tokens: first.map(|r| r.tally).unwrap_or_default(),
        tokens_stable: runs.windows(2).all(|w| w[0].tally == w[1].tally),
        turns: first.map_or(0, |r| r.turns),
        ms: round_ms(median(runs.iter().map(|r| r.ms).collect())),
        ms_runs: runs.iter().map(|r| round_ms(r.ms)).collect(),
    }
}

/// What the scripted runs need.
pub(crate) struct Setup<'a> {
    pub ours: &'a Ours,
    pub listed: &'a Listed,
    pub direct_schemas: usize,
    pub our_schemas: usize,
    pub runs: usize,
    pub warmup: usize,
}

/// Runs `task` both ways, `warmup` untimed times then `runs` times, code first in each
/// round (its result is the answer both ways).
pub(crate) async fn run_task(s: &Setup<'_>, task: &Task) -> Result<Row, EvalError> {
    let mut direct = Vec::new();
    let mut code = Vec::new();
    for round in 0..s.warmup + s.runs.max(1) {
        let c = code_once(s.ours, task, s.our_schemas, task.answer.as_deref()).await?;
        let answer = task
            .answer
            .clone()
            .or_else(|| c.answer.clone())
            .unwrap_or_default();
        let d = direct_once(s.ours, s.listed, task, s.direct_schemas, &answer).await?;
        if round >= s.warmup {
            code.push(c);
            direct.push(d);
        }
    }
    let (direct, code) = (side(&direct), side(&code));
    Ok(Row {
        task: task.name.clone(),
        ratios: Ratios {
            tokens: ratio(code.tokens.context as f64, direct.tokens.context as f64),
            input: ratio(code.tokens.input as f64, direct.tokens.input as f64),
            turns: ratio(code.turns as f64, direct.turns as f64),
            time: ratio(code.ms, direct.ms),
        },
        direct,
        code,
    })
}
